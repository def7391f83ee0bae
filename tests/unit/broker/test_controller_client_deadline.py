"""A broker's calls to the controller end by their deadline even when etcd does not answer the
election read: a broker stopping while etcd is unreachable stops when its controlled-shutdown
timeout says, not an etcd timeout later."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from leasehold.controller.v1 import controller_pb2
from leasehold.etcd import Keyspace
from services.broker_agent.controller_client import ControllerClient, ControllerUnavailableError


class SilentEtcd:
    """An etcd client whose every call waits far longer than any caller's deadline."""

    timeout = 3600.0

    def __init__(self) -> None:
        self.kv = SimpleNamespace(Range=object())
        self.calls = 0
        self.cancelled = 0

    async def _call(self, method, request, timeout=None, **kwargs):
        self.calls += 1
        try:
            await asyncio.sleep(self.timeout)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_an_unanswered_election_read_ends_with_the_callers_deadline():
    etcd = SilentEtcd()
    client = ControllerClient(etcd, Keyspace(), cached_endpoint=lambda: None, backoff_ms=50)
    request = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=2)
    began = time.monotonic()
    async with asyncio.timeout(60):  # without the bound the read waits an hour
        with pytest.raises(ControllerUnavailableError):
            await client.controlled_shutdown(request, timeout=0.5)
    assert time.monotonic() - began < 30
    assert etcd.calls >= 1
    assert etcd.cancelled == etcd.calls  # every read was given up, none left behind
    await client.close()
