"""A resignation rebuilds the standby context, unless the process is stopping.

Driven through the in-memory controller of ``bench.controller_micro`` (a real ``Controller``
fed the watch's events, etcd and gRPC replaced), made active by a failover.
"""

from __future__ import annotations

import asyncio

import pytest

from bench.controller_micro import failover, standby
from services.controller import events as ev
from services.controller.statelog import StateChangeLog


@pytest.mark.parametrize(("stopping", "rebuilt"), [(False, True), (True, False)])
async def test_resign_rebuilds_only_when_the_process_goes_on(tmp_path, stopping, rebuilt):
    log = StateChangeLog(str(tmp_path / "sc.log"), controller_id=1)
    c = await standby(300, None, log)
    await failover(c)
    assert c.active
    ctx = c.ctx
    done = asyncio.get_running_loop().create_future()
    await c.handle(ev.Resign("test", done, stopping=stopping))
    assert done.done() and not c.active
    assert (c.ctx is not ctx) is rebuilt  # a fresh context (from the watch mirror) or none
    await c.deactivate("done")
    log.close()
    lines = (tmp_path / "sc.log").read_text().splitlines()
    assert sum('"event":"resigned"' in line for line in lines) == 1
