"""A broker failure re-elects the dead broker's partitions in chunks (``ELECTION_CHUNK``): each
chunk's LeaderAndIsr and UpdateMetadata are handed to gRPC, per broker in Kafka's order, once its
commit is applied, before the later chunks are applied; the next chunk is decided while the
previous one commits; the replica step is cut between partitions, never inside one."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.controller_micro import RecordingChannels, active
from leasehold.broker.v1 import control_pb2
from leasehold.etcd.fenced import FencedError
from leasehold.statechange import StateChangeRecord
from services.controller import events as ev
from services.controller.controller import Controller
from services.controller.core import PartitionReplica, TopicPartition
from services.controller.delivery.channels import (
    _RESPONSES,
    LEADER_AND_ISR,
    UPDATE_METADATA,
    _Broker,
)
from services.controller.flows import brokers as broker_flows
from services.controller.flows.brokers import _by_partition_chunks
from services.controller.statelog import StateChangeLog

PARTITIONS = 5  # one topic, bench-0; broker 1 leads every partition
TPS = [TopicPartition("bench-0", p) for p in range(PARTITIONS)]
_DECODE = {
    LEADER_AND_ISR: control_pb2.LeaderAndIsrRequest,
    UPDATE_METADATA: control_pb2.UpdateMetadataRequest,
}


class _Seen(RecordingChannels):
    """Notes each serialised request: broker, kind, its partitions, and which partitions the
    controller had already re-elected (leader no longer broker 1) at that moment."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, str, tuple[int, ...], tuple[int, ...]]] = []
        self.elected = lambda: ()
        self.nothing_queued: list[tuple[int, str, tuple[int, ...]]] = []  # requests so marked

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                data = broker.serialize(request)
                decoded = _DECODE[kind].FromString(data)
                partitions = tuple(s.partition for s in decoded.partition_states)
                self.seen.append((broker.info.id, kind, partitions, self.elected()))
                if decoded.nothing_queued:
                    self.nothing_queued.append((broker.info.id, kind, partitions))
                await asyncio.sleep(0)
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call


@contextlib.asynccontextmanager
async def _active(monkeypatch) -> AsyncIterator[tuple[Controller, _Seen, Path]]:
    """An active controller (broker 1 leading every partition) recording what it sends,
    chunks of 2 partitions, and its state-change log's path; the recording starts empty."""
    monkeypatch.setattr(broker_flows, "ELECTION_CHUNK", 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sc.log"
        log = StateChangeLog(str(path), controller_id=1)
        c, channels = await active(PARTITIONS, log, _Seen)
        await asyncio.sleep(0.05)
        channels.seen.clear()
        channels.nothing_queued.clear()
        try:
            yield c, channels, path
        finally:
            await c.deactivate("done")
            log.close()


async def test_each_chunk_is_sent_before_the_next_is_applied(monkeypatch) -> None:
    async with _active(monkeypatch) as (c, channels, path):
        lines_before = len(path.read_text().splitlines())
        channels.elected = lambda: tuple(
            tp.partition for tp in TPS if c.ctx.leader_and_isr(tp).leader != 1
        )
        await c.handle(ev.BrokerChange(deregistered=(1,)))
        await asyncio.sleep(0.05)
        seen = channels.seen
        marked = channels.nothing_queued
        lines = path.read_text().splitlines()

    for b in (2, 3):
        mine = [(k, p) for x, k, p, _ in seen if x == b]
        assert mine == [
            (LEADER_AND_ISR, (0, 1)),
            (UPDATE_METADATA, (0, 1)),
            (LEADER_AND_ISR, (2, 3)),
            (UPDATE_METADATA, (2, 3)),
            (LEADER_AND_ISR, (4,)),
            (UPDATE_METADATA, (4,)),
            # Nothing from the replica step: every state it would send went out in this event.
        ]
        # The first chunk's requests left while the later partitions still had broker 1 as
        # their leader in the controller's context: not applied yet. (Later chunks leave when
        # the loop is free: here, with commits that never wait, possibly after the last.)
        assert [e for x, _, _, e in seen if x == b][:2] == [(0, 1), (0, 1)]
    # Only the last request to each broker says nothing follows: until the last chunk was
    # queued the brokers were told more was coming, even with their queues empty.
    assert sorted(marked) == [(2, UPDATE_METADATA, (4,)), (3, UPDATE_METADATA, (4,))]

    records = [StateChangeRecord.from_json(line) for line in lines[lines_before:]]
    # A chunk goes Offline and is decided before the previous chunk's commit is applied (its
    # Online records are written then), so the records of consecutive chunks interleave.
    offline = [("partition", p, "OfflinePartition") for p in range(PARTITIONS)]
    online = [("partition", p, "OnlinePartition") for p in range(PARTITIONS)]
    assert [(r.kind, r.partition, r.to_state or r.event) for r in records] == [
        ("broker", -1, "expired"),
        *offline[0:2],
        *offline[2:4],
        *online[0:2],
        *offline[4:5],
        *online[2:4],
        *online[4:5],
        *(("replica", p, "OfflineReplica") for p in range(PARTITIONS)),
    ]


def _replicas(*pairs: tuple[int, int]) -> list[PartitionReplica]:
    return [PartitionReplica(TopicPartition("t", p), r) for p, r in pairs]


@pytest.mark.parametrize(
    "pairs, size, cuts",
    [
        ((), 2, []),
        (((0, 1),), 2, [1]),
        (((0, 1), (1, 1), (2, 1), (3, 1), (4, 1)), 2, [2, 2, 1]),
        (((0, 1), (1, 1), (2, 1)), 5, [3]),
        # Two dead brokers: a partition's two replicas stay in one chunk (one ISR write).
        (((0, 1), (0, 2), (1, 1), (1, 2), (2, 1)), 1, [2, 2, 1]),
        (((0, 1), (1, 1), (1, 2), (2, 1), (3, 1)), 2, [3, 2]),
        (((0, 1), (0, 2), (0, 3)), 1, [3]),
    ],
)
def test_replica_chunks_cut_between_partitions(pairs, size, cuts) -> None:
    replicas = _replicas(*pairs)
    chunks = _by_partition_chunks(replicas, size)
    assert [len(c) for c in chunks] == cuts
    assert [r for c in chunks for r in c] == replicas


async def test_the_next_chunk_commits_while_the_previous_commit_is_in_flight(monkeypatch) -> None:
    """Chunk 2's commit starts before chunk 1's finishes; chunk 1's requests still wait for
    its own commit, and the commits are applied in chunk order."""
    async with _active(monkeypatch) as (c, channels, _):
        events: list[tuple[str, tuple[int, ...]]] = []
        gates: list[asyncio.Event] = []
        real_commit = c.store.commit_plan

        async def slow_commit(plan, offline=None):
            parts = tuple(w.tp.partition for w in plan.writes)
            events.append(("start", parts))
            gate = asyncio.Event()
            gates.append(gate)
            await gate.wait()
            events.append(("done", parts))
            return await real_commit(plan, offline)

        c.store.commit_plan = slow_commit
        handling = asyncio.create_task(c.handle(ev.BrokerChange(deregistered=(1,))))

        async def started(n: int) -> None:
            while len(gates) < n:
                await asyncio.sleep(0.001)

        def lai_sent() -> list[tuple[int, ...]]:
            return [p for b, k, p, _ in channels.seen if b == 2 and k == LEADER_AND_ISR]

        await asyncio.wait_for(started(2), 1.0)
        assert events == [("start", (0, 1)), ("start", (2, 3))] and lai_sent() == []
        gates[0].set()
        await asyncio.wait_for(started(3), 1.0)
        assert lai_sent() == [(0, 1)]  # chunk 1 sent before chunk 3 was even begun
        gates[1].set()
        gates[2].set()
        await asyncio.wait_for(handling, 2.0)
        await asyncio.sleep(0.05)
        seen = channels.seen

    assert events == [
        ("start", (0, 1)),
        ("start", (2, 3)),
        ("done", (0, 1)),
        ("start", (4,)),
        ("done", (2, 3)),
        ("done", (4,)),
    ]
    assert [p for b, k, p, _ in seen if b == 2 and k == LEADER_AND_ISR] == [(0, 1), (2, 3), (4,)]


async def test_the_dead_brokers_replicas_are_gathered_once_the_elections_left(monkeypatch) -> None:
    """Gathering the dead broker's replicas walks every assignment (0.2-0.3 s at a million
    partitions): it waits until every election chunk is on its way to both brokers."""
    async with _active(monkeypatch) as (c, channels, _):
        real = c.ctx.replicas_on_brokers
        handed_over: list[int] = []

        def gathered(ids):
            handed_over.append(len(channels.seen))
            return real(ids)

        monkeypatch.setattr(c.ctx, "replicas_on_brokers", gathered)
        await c.handle(ev.BrokerChange(deregistered=(1,)))  # the walk is inside the handler

    assert handed_over == [2 * 6]  # 3 chunks' LeaderAndIsr and UpdateMetadata, to 2 brokers


async def test_a_fenced_chunk_cancels_the_commit_in_flight_and_resigns(monkeypatch) -> None:
    async with _active(monkeypatch) as (c, _, _):
        outcomes: list[tuple[tuple[int, ...], str]] = []
        second_started = asyncio.Event()

        async def commit(plan, offline=None):
            parts = tuple(w.tp.partition for w in plan.writes)
            if parts == (0, 1):
                await second_started.wait()
                outcomes.append((parts, "fenced"))
                raise FencedError("another controller took over")
            second_started.set()
            try:
                await asyncio.Event().wait()  # etcd never answers
            except asyncio.CancelledError:
                outcomes.append((parts, "cancelled"))
                raise

        c.store.commit_plan = commit
        await asyncio.wait_for(c.handle(ev.BrokerChange(deregistered=(1,))), 2.0)
        active = c.active

    assert outcomes == [((0, 1), "fenced"), ((2, 3), "cancelled")]
    assert not active


async def test_a_partition_that_cannot_be_elected_is_tried_once(monkeypatch, caplog) -> None:
    """Partition 3's only ISR member was broker 1 (unclean election disabled): its chunk's
    election fails, and the trigger-online step after the chunks does not try it again."""
    async with _active(monkeypatch) as (c, channels, _):
        tp = TPS[3]
        c.ctx.apply_leader_and_isr(tp, dataclasses.replace(c.ctx.leader_and_isr(tp), isr=(1,)))
        with caplog.at_level(logging.INFO, logger="services.controller.controller"):
            await c.handle(ev.BrokerChange(deregistered=(1,)))
        await asyncio.sleep(0.05)
        led = {p.partition: c.ctx.leader_and_isr(p).leader for p in TPS}
        lai_parts = [p for b, k, p, _ in channels.seen if b == 2 and k == LEADER_AND_ISR]

    failed = [r.getMessage() for r in caplog.records if "state change failed" in r.getMessage()]
    assert len(failed) == 1 and str(tp) in failed[0]
    # Leaderless (the replica step took broker 1 out as leader), the others re-elected.
    assert led[3] == -1 and all(led[p] in (2, 3) for p in (0, 1, 2, 4))
    # Partition 3 goes out once, leaderless, from the replica step (as Kafka sends it).
    assert lai_parts == [(0, 1), (2,), (4,), (3,)]
