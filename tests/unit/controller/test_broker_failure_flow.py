"""Broker failure at the controller (seed 000 §8.2.3): what the brokers get, in which order.

A real ``Controller`` with an in-memory store and recording channels (``bench.controller_micro``)
loses broker 1, which leads every partition. Kafka's ``onBrokerFailure`` sends each state
machine's batch as its ``handleStateChanges`` ends: the re-elected partitions' LeaderAndIsr and
UpdateMetadata must be in gRPC's hands before the replica step (OfflineReplica) is decided, and
the event's state-change records are written after its last requests were handed over.

Also: the record builder the state machines use (``transition_record``) against the dataclass
constructor, and ``wait_issued(idle_only=True)`` not waiting for a busy sender.
"""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from pathlib import Path

import pytest

from bench.controller_micro import RecordingChannels, active
from leasehold.broker.v1 import control_pb2
from leasehold.clock import ManualClock
from leasehold.statechange import StateChangeRecord
from services.controller import events as ev
from services.controller import statelog as statelog_module
from services.controller.core import (
    BrokerInfo,
    LeaderAndIsr,
    PartitionReplica,
    ReplicaState,
    TopicPartition,
)
from services.controller.core.plan_builder import transition_record
from services.controller.delivery.channels import (
    _RESPONSES,
    LEADER_AND_ISR,
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)
from services.controller.flows import brokers as brokers_flow
from services.controller.statelog import StateChangeLog

PARTITIONS = 4  # one topic, bench-0, partitions 0-3; replicas [1, 2, 3] or [1, 3, 2]
TPS = [TopicPartition("bench-0", p) for p in range(PARTITIONS)]


class _Watching(RecordingChannels):
    """Notes, for every request gRPC serialises: broker, kind, the request, whether the dead
    broker's replica of partition 0 was already Offline, and the state-change log's lines."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, str, bytes, ReplicaState, int]] = []
        self.probe = lambda: (ReplicaState.NON_EXISTENT, 0)

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                state, lines = self.probe()
                data = broker.serialize(request)
                self.seen.append((broker.info.id, kind, data, state, lines))
                await asyncio.sleep(0)
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call


async def test_elections_reach_grpc_before_the_replica_step_and_records_after() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sc.log"
        log = StateChangeLog(str(path), controller_id=1)
        c, channels = await active(PARTITIONS, log, _Watching)
        before = {tp: c.ctx.leader_and_isr(tp) for tp in TPS}
        lines_before = len(path.read_text().splitlines())
        channels.probe = lambda: (
            c.ctx.replica_state(PartitionReplica(TPS[0], 1)),
            len(path.read_text().splitlines()),
        )
        channels.seen.clear()

        await c.handle(ev.BrokerChange(deregistered=(1,)))
        await asyncio.sleep(0.05)
        seen = channels.seen
        lines = path.read_text().splitlines()
        await c.deactivate("done")
        log.close()

    # Per surviving broker: the election batch, LeaderAndIsr before UpdateMetadata, handed over
    # before the replica step. That step found every ISR already without broker 1: the states
    # it would send again went to the same brokers in this event, so it queues nothing for them
    # (``RequestBatch`` leaves them out; StopReplica went to the dead broker: dropped), and the
    # election's UpdateMetadata already named the live brokers.
    for b in (2, 3):
        assert [(k, s) for x, k, _, s, _ in seen if x == b] == [
            (LEADER_AND_ISR, ReplicaState.ONLINE),
            (UPDATE_METADATA, ReplicaState.ONLINE),
        ]
    # The election batch was handed over before any of the event's records were written.
    assert {n for _, _, _, s, n in seen if s is ReplicaState.ONLINE} == {lines_before}

    first = control_pb2.LeaderAndIsrRequest.FromString(next(d for x, _, d, _, _ in seen if x == 2))
    got = {(s.partition, s.leader, tuple(s.isr), s.leader_epoch) for s in first.partition_states}
    want = set()
    for tp in TPS:
        old = before[tp]
        isr = tuple(r for r in old.isr if r != 1)
        want.add((tp.partition, isr[0], isr, old.leader_epoch + 1))
    assert got == want
    um = control_pb2.UpdateMetadataRequest.FromString(
        next(d for x, k, d, _, _ in seen if x == 3 and k == UPDATE_METADATA)
    )
    # The live brokers as the change since the set brokers were last sent: broker 1 left.
    assert um.HasField("live_brokers_base")
    assert (list(um.live_brokers), list(um.removed_brokers)) == ([], [1])
    assert {(s.partition, s.leader) for s in um.partition_states} == {(g[0], g[1]) for g in got}

    # Every record once, in decision order: expiry, Offline, Online (elected), OfflineReplica.
    records = [StateChangeRecord.from_json(line) for line in lines[lines_before:]]
    assert [(r.kind, r.partition, r.to_state or r.event) for r in records] == [
        ("broker", -1, "expired"),
        *(("partition", tp.partition, "OfflinePartition") for tp in TPS),
        *(("partition", tp.partition, "OnlinePartition") for tp in TPS),
        *(("replica", tp.partition, "OfflineReplica") for tp in TPS),
    ]


async def test_records_are_written_once_idle_senders_have_the_requests() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sc.log"
        log = StateChangeLog(str(path), controller_id=1)
        c, channels = await active(PARTITIONS, log, _Watching)
        await c.handle(ev.BrokerChange(registered=(BrokerInfo(4, "127.0.0.1", 9004, epoch=9),)))
        await asyncio.sleep(0.05)
        lines_before = len(path.read_text().splitlines())
        channels.probe = lambda: (ReplicaState.ONLINE, len(path.read_text().splitlines()))
        channels.seen.clear()

        # Broker 4 hosts nothing: its expiry only tells the others (an UpdateMetadata each).
        await c.handle(ev.BrokerChange(deregistered=(4,)))
        seen = channels.seen
        lines = path.read_text().splitlines()
        await c.deactivate("done")
        log.close()

    assert [(b, k, n) for b, k, _, _, n in seen] == [
        (b, UPDATE_METADATA, lines_before) for b in (1, 2, 3)
    ]
    expired = StateChangeRecord.from_json(lines[lines_before])
    assert (len(lines), expired.kind, expired.event, expired.broker_id) == (
        lines_before + 1,
        "broker",
        "expired",
        4,
    )


class _AnsweredAfterReplicaStep(_Watching):
    """As ``_Watching``, but a LeaderAndIsr is answered only once broker 1's replica of
    partition 0 is Offline: the answers arrive after the replica step, as they do from
    brokers applying 10,000 partitions."""

    def __init__(self) -> None:
        super().__init__()
        self.step_done = lambda: True

    def _method(self, broker: _Broker, kind: str):
        inner = super()._method(broker, kind)

        def call(request, timeout=None):
            async def invoke():
                answer = await inner(request, timeout=timeout)
                while kind == LEADER_AND_ISR and not self.step_done():
                    await asyncio.sleep(0)
                return answer

            return asyncio.get_running_loop().create_task(invoke())

        return call


async def test_update_metadata_leaves_while_the_event_s_records_are_encoded(monkeypatch) -> None:
    """The election batch's UpdateMetadata waits for the LeaderAndIsr answer; when that comes
    after the replica step, the sender gets to send it while the event's state-change records
    are still being encoded (``StateChangeLog.flush_async``), not after the log is written."""
    monkeypatch.setattr(statelog_module, "FLUSH_SLICE", 1)
    # The replica step waits for the election's answers, and these never come before it: the
    # wait times out (a broker too slow to answer), as it may in production.
    monkeypatch.setattr(brokers_flow, "ANSWERS_WAIT_S", 0.05)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sc.log"
        log = StateChangeLog(str(path), controller_id=1)
        c, channels = await active(PARTITIONS, log, _AnsweredAfterReplicaStep)
        await asyncio.sleep(0.05)
        lines_before = len(path.read_text().splitlines())
        offline = PartitionReplica(TPS[0], 1)
        channels.step_done = lambda: c.ctx.replica_state(offline) is ReplicaState.OFFLINE
        channels.probe = lambda: (
            c.ctx.replica_state(offline),
            len(path.read_text().splitlines()),
        )
        channels.seen.clear()

        await c.handle(ev.BrokerChange(deregistered=(1,)))
        seen = channels.seen
        lines_after = len(path.read_text().splitlines())
        await c.deactivate("done")
        log.close()

    assert lines_after > lines_before
    for b in (2, 3):
        mine = [(k, n) for x, k, _, _, n in seen if x == b]
        assert mine[:2] == [(LEADER_AND_ISR, lines_before), (UPDATE_METADATA, lines_before)]


class _SlowLeaderAndIsr(_Watching):
    """As ``_Watching``, but a LeaderAndIsr is answered ``delay`` seconds after it is sent (a
    broker applying it), or never when ``delay`` is None."""

    def __init__(self) -> None:
        super().__init__()
        self.delay: float | None = 0.05

    def _method(self, broker: _Broker, kind: str):
        inner = super()._method(broker, kind)

        def call(request, timeout=None):
            async def invoke():
                answer = await inner(request, timeout=timeout)
                if kind == LEADER_AND_ISR:
                    if self.delay is None:
                        await asyncio.Event().wait()
                    await asyncio.sleep(self.delay)
                return answer

            return asyncio.get_running_loop().create_task(invoke())

        return call


async def test_the_replica_step_waits_for_the_elections_answers() -> None:
    """The election's UpdateMetadata follows its LeaderAndIsr's answer at once, not after the
    replica step: that step waits (``wait_answered``) until the brokers have answered."""
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c, channels = await active(PARTITIONS, log, _SlowLeaderAndIsr)
        assert await channels.wait_answered(5.0)  # the failover's requests
        offline = PartitionReplica(TPS[0], 1)
        channels.probe = lambda: (c.ctx.replica_state(offline), 0)
        channels.seen.clear()

        await c.handle(ev.BrokerChange(deregistered=(1,)))
        seen = [(b, k, s) for b, k, _, s, _ in channels.seen]
        await c.deactivate("done")
        log.close()

    for b in (2, 3):
        assert [(k, s) for x, k, s in seen if x == b] == [
            (LEADER_AND_ISR, ReplicaState.ONLINE),
            (UPDATE_METADATA, ReplicaState.ONLINE),  # before the replica step, not after it
        ]


async def test_a_broker_that_does_not_answer_holds_the_replica_step_only_so_long(
    monkeypatch,
) -> None:
    # Bounded by the quiet after the last answer, not by the whole wait's bound.
    monkeypatch.setattr(brokers_flow, "ANSWERS_WAIT_S", 30.0)
    monkeypatch.setattr(brokers_flow, "ANSWERS_QUIET_S", 0.1)
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(str(Path(tmp) / "sc.log"), controller_id=1)
        c, channels = await active(PARTITIONS, log, _SlowLeaderAndIsr)
        assert await channels.wait_answered(5.0)  # the failover's requests
        channels.delay = None
        started = asyncio.get_running_loop().time()
        await asyncio.wait_for(c.handle(ev.BrokerChange(deregistered=(1,))), 5)
        took = asyncio.get_running_loop().time() - started
        done = c.ctx.replica_state(PartitionReplica(TPS[0], 1))
        await c.deactivate("done")
        log.close()
    assert done is ReplicaState.OFFLINE  # the replica step ran after the bounded wait
    assert took >= 0.1


async def test_wait_answered_follows_each_broker_s_answers() -> None:
    ch = _Held()
    for b in (1, 2):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
    assert await ch.wait_answered(0.01)  # nothing queued
    request = control_pb2.UpdateMetadataRequest()
    ch.send(1, UPDATE_METADATA, request)
    ch.send(2, LEADER_AND_ISR, request)
    assert not await ch.wait_answered(0.05)
    ch.release.set()
    assert await ch.wait_answered(1.0)
    # A broker that leaves is not waited for.
    ch.release.clear()
    ch.send(2, UPDATE_METADATA, request)
    waiting = asyncio.create_task(ch.wait_answered(5.0))
    await asyncio.sleep(0.01)
    ch.remove_broker(2)
    assert await asyncio.wait_for(waiting, 1.0)
    await ch.close()


async def test_waits_on_many_brokers_share_one_waiter_each() -> None:
    ch = _Held()
    for b in range(1, 201):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
    request = control_pb2.UpdateMetadataRequest()
    for b in range(1, 201):
        ch.send(b, UPDATE_METADATA, request)
    marks = ch.queued_marks()
    assert not await ch.wait_answered(0.02)
    assert ch._waiters == []  # a wait that timed out leaves nothing behind
    # Two waits at once, one on every broker, one on those queued by ``marks`` only.
    for b in range(1, 101):
        ch.send(b, UPDATE_METADATA, request)
    everything = asyncio.create_task(ch.wait_answered(5.0))
    marked = asyncio.create_task(ch.wait_answered(5.0, marks))
    issued = asyncio.create_task(ch.wait_issued(5.0))
    while len(ch._waiters) < 3:  # each task has registered its waiter (no clock involved)
        await asyncio.sleep(0)
    ch.release.set()
    assert await asyncio.wait_for(asyncio.gather(everything, marked, issued), 1.0) == [
        True,
        True,
        True,
    ]
    assert ch.unanswered(ch.queued_marks()) == frozenset()
    assert ch._waiters == []
    await ch.close()


@pytest.mark.parametrize(
    ("kind", "tp", "replica", "lai"),
    [
        ("partition", TopicPartition("t", 3), -1, LeaderAndIsr(2, 7, (2, 3), 5, 40)),
        ("partition", TopicPartition("t", 0), -1, None),
        ("replica", TopicPartition("u", 1), 4, LeaderAndIsr(-1, 2, (4,), 5, 9, recovering=True)),
        ("replica", TopicPartition("u", 2), 1, None),
    ],
)
def test_transition_record_is_the_dataclass_record(kind, tp, replica, lai) -> None:
    got = transition_record(kind, 1234, 100, 5, tp, replica, "A", "B", lai, "why")
    want = StateChangeRecord(
        ts_ms=1234,
        kind=kind,
        controller_id=100,
        controller_epoch=5,
        topic=tp.topic,
        partition=tp.partition,
        replica=replica,
        from_state="A",
        to_state="B",
        leader=lai.leader if lai else -1,
        leader_epoch=lai.leader_epoch if lai else -1,
        isr=lai.isr if lai else (),
        reason="why",
    )
    assert got == want
    assert vars(got) == {f.name: getattr(want, f.name) for f in dataclasses.fields(want)}
    assert got.to_json("trace") == want.to_json("trace")


class _NoChannel:
    async def close(self) -> None:
        pass


class _Held(ControllerChannelManager):
    """Senders whose calls serialise at once and are answered only when ``release`` is set
    (``_gate``)."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        super().__init__(ChannelSettings("ctl", 9190), lambda *a: None, clock=clock)
        self.release = asyncio.Event()
        self.wire: list[tuple[int, str]] = []

    def _gate(self, broker_id: int) -> asyncio.Event:
        return self.release

    def add_broker(self, info: BrokerInfo) -> None:
        broker = self._broker(info, _NoChannel())  # type: ignore[arg-type]
        broker.methods = {kind: self._method(broker, kind) for kind in _RESPONSES}
        broker.task = asyncio.create_task(self._sender(broker))
        self._brokers[info.id] = broker

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                broker.serialize(request)
                self.wire.append((broker.info.id, kind))
                await self._gate(broker.info.id).wait()
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call

    async def close(self) -> None:
        for b in self._brokers.values():
            b.task.cancel()


class _Answering(_Held):
    """Senders answered broker by broker, when the test says (``answer``), on a manual
    clock."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.gates: dict[int, asyncio.Event] = {}

    def _gate(self, broker_id: int) -> asyncio.Event:
        return self.gates.setdefault(broker_id, asyncio.Event())

    async def answer(self, broker_id: int) -> None:
        self._gate(broker_id).set()
        broker = self._brokers[broker_id]
        while broker.finished < broker.queued:
            await asyncio.sleep(0)


async def _answering(brokers: int) -> tuple[_Answering, ManualClock]:
    """``brokers`` brokers, each sent one UpdateMetadata it has not answered."""
    clock = ManualClock()
    ch = _Answering(clock)
    for b in range(1, brokers + 1):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
        ch.send(b, UPDATE_METADATA, control_pb2.UpdateMetadataRequest())
    return ch, clock


async def _turns() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


# ``wait_answered`` with ``quiet_s`` (the replica step's wait): as long as brokers keep
# answering, ``timeout_s`` at most, and no longer than ``quiet_s`` after the last answer.


async def test_a_quiet_bounded_wait_lasts_while_answers_come_and_ends_when_all_have() -> None:
    ch, clock = await _answering(3)
    waiting = asyncio.create_task(ch.wait_answered(10.0, quiet_s=1.0))
    await _turns()
    for broker in (1, 2):  # each answer comes 0.9 s after the last: past 1 s in all
        clock.advance(0.9)
        await ch.answer(broker)
        await _turns()
        assert not waiting.done()
    clock.advance(0.9)
    await ch.answer(3)
    assert await asyncio.wait_for(waiting, 1.0) is True
    assert ch._waiters == []
    await ch.close()


async def test_a_quiet_bounded_wait_gives_up_once_no_broker_answered_for_quiet_s() -> None:
    ch, clock = await _answering(3)
    waiting = asyncio.create_task(ch.wait_answered(10.0, quiet_s=1.0))
    await _turns()
    clock.advance(0.5)
    await ch.answer(1)
    await _turns()
    clock.advance(0.9)  # 0.9 s since broker 1's answer: still waiting
    await _turns()
    assert not waiting.done()
    clock.advance(0.2)  # brokers 2 and 3 never answer
    assert await asyncio.wait_for(waiting, 1.0) is False
    assert ch._waiters == []
    await ch.close()


async def test_answers_that_keep_coming_are_waited_for_timeout_s_at_most() -> None:
    ch, clock = await _answering(4)
    waiting = asyncio.create_task(ch.wait_answered(2.0, quiet_s=1.0))
    await _turns()
    for broker in (1, 2):
        clock.advance(0.8)
        await ch.answer(broker)
        await _turns()
        assert not waiting.done()
    clock.advance(0.5)  # 2.1 s in, 0.5 s since the last answer
    assert await asyncio.wait_for(waiting, 1.0) is False
    await ch.close()


async def test_without_quiet_s_a_silent_fleet_is_waited_for_timeout_s() -> None:
    ch, clock = await _answering(2)
    waiting = asyncio.create_task(ch.wait_answered(3.0))
    await _turns()
    clock.advance(2.9)
    await _turns()
    assert not waiting.done()
    clock.advance(0.2)
    assert await asyncio.wait_for(waiting, 1.0) is False
    await ch.close()


async def test_wait_issued_idle_only_skips_busy_senders() -> None:
    ch = _Held()
    for b in (1, 2):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
    request = control_pb2.UpdateMetadataRequest()
    ch.send(1, UPDATE_METADATA, request)
    assert await ch.wait_issued(1.0)  # broker 1's sender now waits for an answer
    ch.send(1, UPDATE_METADATA, request)
    ch.send(2, UPDATE_METADATA, request)
    ch.send(2, LEADER_AND_ISR, request)
    # Broker 2 is idle: waited for until its next batch is handed over, not the one after it.
    # Broker 1 is busy: not waited for (a plain wait_issued would time out on it).
    assert await ch.wait_issued(1.0, idle_only=True)
    assert ch.wire == [(1, UPDATE_METADATA), (2, UPDATE_METADATA)]
    assert not await ch.wait_issued(0.05)
    ch.release.set()
    assert await ch.wait_issued(1.0)
    await asyncio.sleep(0.01)
    assert sorted(ch.wire) == [(1, UPDATE_METADATA)] * 2 + [
        (2, LEADER_AND_ISR),
        (2, UPDATE_METADATA),
    ]
    await ch.close()
