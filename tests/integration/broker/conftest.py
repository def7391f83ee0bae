"""Fixtures for the broker agent integration tests (see broker_harness)."""

from __future__ import annotations

import contextlib

import pytest
from broker_harness import RunningBroker, start_broker


@pytest.fixture
async def brokers(etcd_endpoint, keyspace, tmp_path):
    """A factory of running brokers; every one is stopped at the end of the test."""
    started: list[RunningBroker] = []

    async def make(broker_id: int, **overrides) -> RunningBroker:
        running = await start_broker(
            etcd_endpoint,
            keyspace.cluster_id,
            broker_id,
            tmp_path / f"broker-{broker_id}",
            **overrides,
        )
        started.append(running)
        return running

    yield make
    for running in reversed(started):
        with contextlib.suppress(Exception):
            await running.stop()
