"""A standby re-encodes its failover UpdateMetadata cache right after small watch batches, and
after a delay, in one pass, after large ones (a broker's liveness, thousands of elections)."""

from __future__ import annotations

import pytest

from bench.controller_micro import RecordingChannels
from leasehold.clock import ManualClock
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.controller import (
    CACHE_REFRESH_AT_ONCE,
    CACHE_REFRESH_DELAY_S,
    Controller,
)
from services.controller.core import BrokerInfo, LeaderAndIsr, TopicPartition
from services.controller.statelog import StateChangeLog

BROKERS = tuple(BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10 + b) for b in (1, 2, 3))


class _Store:
    ks = Keyspace("t")
    mirror: dict = {}

    def clear_fence(self) -> None:
        pass


def _standby(tmp_path, puts: list) -> Controller:
    c = Controller(
        ControllerConfig(controller_id=1),
        _Store(),  # type: ignore[arg-type]
        StateChangeLog(str(tmp_path / "sc.log"), controller_id=1),
        lambda: [],
        RecordingChannels,
        clock=ManualClock(),
    )
    c.put = puts.append
    return c


def _topic(partitions: int, leader: int, revision: int) -> list[ev.ControllerEvent]:
    tps = [TopicPartition("t", p) for p in range(partitions)]
    assignment = metadata_pb2.TopicAssignment(
        topic_id="id-t",
        partitions={tp.partition: metadata_pb2.ReplicaList(replicas=[1, 2, 3]) for tp in tps},
    )
    states = tuple(
        ev.PartitionStateUpdate(
            tp,
            codec.StoredPartitionState(LeaderAndIsr(leader, 1, (1, 2, 3), 1, revision)),
            revision,
        )
        for tp in tps
    )
    return [
        ev.TopicChange((ev.TopicUpdate("t", assignment, revision),)),
        ev.PartitionStateChange(states),
        ev.Synced(revision),
    ]


async def _feed(c: Controller, events: list[ev.ControllerEvent]) -> None:
    for e in events:
        await c.handle(e)


# (partitions, cache entries right after the batch's Synced, refreshes scheduled)
CASES = [
    (10, 10, 0),
    (CACHE_REFRESH_AT_ONCE - 1, CACHE_REFRESH_AT_ONCE - 1, 0),
    (CACHE_REFRESH_AT_ONCE, 0, 1),
    (3 * CACHE_REFRESH_AT_ONCE, 0, 1),
]


@pytest.mark.parametrize(("partitions", "cached", "scheduled"), CASES)
async def test_large_batches_are_re_encoded_later_in_one_pass(
    tmp_path, partitions, cached, scheduled
):
    puts: list = []
    c = _standby(tmp_path, puts)
    await _feed(c, [ev.BrokerChange(registered=BROKERS), ev.Synced(5)])
    assert len(c.metadata_cache) == 0 and puts == []  # nothing to encode yet
    await _feed(c, _topic(partitions, 1, 10))
    assert len(c.metadata_cache) == cached
    c.time.advance(CACHE_REFRESH_DELAY_S)
    assert puts == [ev.RefreshStandbyCache()] * scheduled
    for event in puts:
        await c.handle(event)
    assert len(c.metadata_cache) == partitions
    assert c.ctx.metadata_changes_pending() == 0


async def test_batches_while_a_refresh_is_due_wait_for_it(tmp_path):
    """A broker's liveness changed (every partition to re-encode), then small batches: they
    are not re-encoded on their own (that would take everything now); the one refresh due
    takes all of it."""
    puts: list = []
    c = _standby(tmp_path, puts)
    await _feed(c, [ev.BrokerChange(registered=BROKERS), *_topic(CACHE_REFRESH_AT_ONCE, 1, 10)])
    c.time.advance(CACHE_REFRESH_DELAY_S)
    for event in puts:
        await c.handle(event)
    puts.clear()
    assert len(c.metadata_cache) == CACHE_REFRESH_AT_ONCE

    await _feed(c, [ev.BrokerChange(deregistered=(1,)), ev.Synced(11)])
    assert c.ctx.metadata_changes_pending() == CACHE_REFRESH_AT_ONCE
    moved = ev.PartitionStateUpdate(
        TopicPartition("t", 0),
        codec.StoredPartitionState(LeaderAndIsr(2, 2, (2, 3), 1, 12)),
        12,
    )
    await _feed(c, [ev.PartitionStateChange((moved,)), ev.Synced(12)])
    assert c.ctx.metadata_changes_pending() == CACHE_REFRESH_AT_ONCE  # still waiting
    c.time.advance(CACHE_REFRESH_DELAY_S)
    assert puts == [ev.RefreshStandbyCache()]
    await c.handle(puts[0])
    assert c.ctx.metadata_changes_pending() == 0
    fresh = Controller(
        ControllerConfig(controller_id=1),
        _Store(),  # type: ignore[arg-type]
        StateChangeLog("", controller_id=1),
        lambda: [],
        RecordingChannels,
    )
    await _feed(
        fresh, [ev.BrokerChange(registered=BROKERS[1:]), *_topic(CACHE_REFRESH_AT_ONCE, 1, 10)]
    )
    await _feed(fresh, [ev.PartitionStateChange((moved,)), ev.RefreshStandbyCache()])
    assert c.metadata_cache.body() == fresh.metadata_cache.body()


async def test_an_active_controller_ignores_a_refresh_left_from_its_standby_days(tmp_path):
    c = _standby(tmp_path, [])
    await _feed(c, [ev.BrokerChange(registered=BROKERS), *_topic(20, 1, 10)])
    c.role.elected(1, 1, 0.0)
    c.role.activate()
    c.ctx.apply_broker_removed(3)
    await c.handle(ev.RefreshStandbyCache())
    assert c.ctx.metadata_changes_pending() == 20
