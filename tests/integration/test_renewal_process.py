"""Lease renewals from a process of their own (``RenewalProcess``), against a real etcd.

The point of the process: a service whose main thread holds the GIL longer than the TTL keeps
its session, where a renewal thread in the same interpreter cannot renew it (both shown here, so
the test fails if the process renewed nothing). What a lease means must not change: a holder
killed or stopped (SIGSTOP) loses its lease a TTL later, and a renewal process killed alone
reports its leases lost. Each assertion is on an outcome (lease alive or gone in etcd), waited
for with a deadline far above the TTL, never on a time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from leasehold.etcd import EtcdClient, Renewer, Session
from leasehold.etcd.lease import LeaseState
from leasehold.etcd.renewal_process import RenewalProcess, holder_running

TTL = 2
DEADLINE_S = 20.0


def hold_the_gil(seconds: float) -> None:
    """One C call that keeps the GIL for about ``seconds`` (no bytecode runs inside it, so no
    other thread of this interpreter runs meanwhile)."""
    sample = 10_000_000  # ~0.1-0.3 s: a calibration a loaded machine skews little
    started = time.perf_counter()
    sum(range(sample))
    per_item = (time.perf_counter() - started) / sample
    sum(range(int(seconds / per_item)))


async def _gone(etcd: EtcdClient, lease_id: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if await etcd.lease_ttl(lease_id) <= 0:
            return True
        await asyncio.sleep(0.2)
    return False


async def _ready(renewer: RenewalProcess) -> RenewalProcess:
    await asyncio.to_thread(renewer.wait_ready)
    return renewer


async def test_sessions_outlive_a_main_thread_holding_the_gil_past_the_ttl(etcd):
    process = await _ready(RenewalProcess(etcd, batched=True))
    thread = Renewer(etcd)
    by_process = await Session(etcd, TTL, renewer=process).start()
    by_thread = await Session(etcd, TTL, renewer=thread).start()
    try:
        hold_the_gil(TTL * 3.0)  # well past the TTL even if the calibration was off
        assert await etcd.lease_ttl(by_process.lease_id) > 0
        assert await _gone(etcd, by_thread.lease_id)  # the thread could not renew it in time
        await asyncio.sleep(TTL)  # the process's renewals go on; its reports reach the session
        assert by_process.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(by_process.lease_id) > 0
        assert 0 < by_process.min_margin <= TTL
    finally:
        await by_process.close()
        await by_thread.close()
        process.stop()
        thread.stop()
    assert process.pid is not None and _exited(process.pid)


async def test_a_lease_revoked_elsewhere_is_reported_lost(etcd):
    process = await _ready(RenewalProcess(etcd))
    kept, revoked = [await Session(etcd, TTL, renewer=process).start() for _ in range(2)]
    try:
        await etcd.lease_revoke(revoked.lease_id)
        await asyncio.wait_for(revoked.done.wait(), DEADLINE_S)
        assert revoked.state is LeaseState.LOST
        await asyncio.sleep(TTL * 1.5)
        assert kept.state is LeaseState.CONFIRMED and await etcd.lease_ttl(kept.lease_id) > 0
    finally:
        await kept.close()
        await revoked.close()
        process.stop()


async def test_the_renewal_process_killed_alone_loses_its_leases_and_a_new_one_starts(etcd):
    process = await _ready(RenewalProcess(etcd))
    first = await Session(etcd, TTL, renewer=process).start()
    try:
        assert process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        await asyncio.wait_for(first.done.wait(), DEADLINE_S)
        assert first.state is LeaseState.LOST
        second = await Session(etcd, TTL, renewer=process).start()  # a new child for it
        await asyncio.to_thread(process.wait_ready)
        await asyncio.sleep(TTL * 1.5)
        assert second.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(second.lease_id) > 0
        await second.close()
    finally:
        await first.close()
        process.stop()


HOLDER = """
import asyncio, sys
from leasehold.etcd import EtcdClient, Session
from leasehold.etcd.renewal_process import RenewalProcess

async def main():
    client = EtcdClient([sys.argv[1]])
    await client.connect()
    renewer = RenewalProcess(client)
    await asyncio.to_thread(renewer.wait_ready)
    session = await Session(client, int(sys.argv[2]), renewer=renewer).start()
    print(session.lease_id, renewer.pid, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.fixture
def holder(etcd_endpoint):
    """A service process holding one session through a renewal process: (process, lease id,
    renewal process pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, etcd_endpoint, str(TTL)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lease_id, child = (int(x) for x in proc.stdout.readline().split())  # type: ignore[union-attr]
        yield proc, lease_id, child
    finally:
        with_signal(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait()


def with_signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _exited(pid: int) -> bool:
    """Not running (gone, a zombie left for its new parent to reap, or stopped), within the
    deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if not holder_running(pid):
            return True
        time.sleep(0.05)
    return False


async def test_a_stopped_holder_loses_its_lease_a_ttl_later(etcd, holder):
    proc, lease_id, _child = holder
    await asyncio.sleep(TTL * 1.5)
    assert await etcd.lease_ttl(lease_id) > 0  # renewed while the holder runs
    os.kill(proc.pid, signal.SIGSTOP)
    assert _exited(proc.pid)  # the stop is delivered asynchronously: seen as not running
    assert await _gone(etcd, lease_id)


async def test_a_killed_holder_loses_its_lease_and_its_renewal_process_exits(etcd, holder):
    proc, lease_id, child = holder
    assert holder_running(proc.pid) and holder_running(child)
    proc.kill()
    proc.wait()
    assert await asyncio.to_thread(_exited, child)
    assert await _gone(etcd, lease_id)


async def test_a_renewal_process_that_cannot_start_is_reported_at_once(etcd, monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    process = RenewalProcess(etcd)
    try:
        with pytest.raises(RuntimeError, match="exited"):
            await asyncio.to_thread(process.wait_ready, DEADLINE_S)
    finally:
        process.stop()
