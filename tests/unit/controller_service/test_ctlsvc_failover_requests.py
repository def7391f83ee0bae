"""The failover's UpdateMetadata leaves before the state machines run, and controlled shutdown.

A real ``Controller`` fed the watch's metadata events as a hot standby, with etcd replaced by an
in-memory store (commits succeed, each write gets the next revision) and gRPC by calls that
serialise the request in a task of their own, as grpc aio does, and answer at once.
"""

from __future__ import annotations

import asyncio
import gc
import json

import pytest
from ctlsvc_instant_channels import InstantChannels
from google.protobuf.message import Message

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2
from leasehold.etcd.fenced import CommitResult
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent import control_convert
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import LEADER_DURING_DELETE, MetadataPartition, UpdateMetadata
from services.controller import codec
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.controller import Controller
from services.controller.core import (
    BrokerInfo,
    LeaderAndIsr,
    PartitionReplica,
    ReplicaState,
    TopicPartition,
)
from services.controller.delivery import fast as fast_module
from services.controller.delivery.channels import (
    UPDATE_METADATA,
)
from services.controller.flows import failover as failover_module
from services.controller.statelog import StateChangeLog
from services.controller.store import PlanCommit

BROKERS = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10 + b) for b in (1, 2, 3)}


class _Store:
    def __init__(self) -> None:
        self.ks = Keyspace("t")
        self.mirror: dict = {}
        self.revision = 1_000

    def clear_fence(self) -> None:
        pass

    async def commit_plan(self, plan, offline=None) -> PlanCommit:
        epochs = {}
        for w in plan.writes:
            self.revision += 1
            epochs[w.tp] = self.revision
        return PlanCommit(epochs=epochs, transactions=1)

    async def commit(self, writes) -> CommitResult:
        return CommitResult()

    async def read_modify_write(self, updates, extra=(), *, attempts: int = 5) -> dict:
        return {}


class _Channels(InstantChannels):
    """Brokers that answer UpdateMetadata as the agent does: a digest-only request is taken
    when it is the digest of their cache (``caches``, per broker id), refused otherwise."""

    def __init__(self, timeline: list, caches: dict[int, MetadataCache]) -> None:
        super().__init__()
        self.timeline = timeline
        self.caches = caches

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        self.timeline.append(("wire", broker_id, kind, data))
        if kind == UPDATE_METADATA:
            return self._update_metadata(broker_id, data)
        return await super().answer(broker_id, kind, data)

    def _update_metadata(self, broker_id: int, data: bytes) -> Message:
        request = control_convert.update_metadata_from_pb(
            control_pb2.UpdateMetadataRequest.FromString(data)
        )
        cache = self.caches.setdefault(broker_id, MetadataCache())
        if request.metadata_digest and request.metadata_digest != cache.digest():
            return control_pb2.UpdateMetadataResponse(
                error_code=common_pb2.ERROR_CODE_METADATA_DIGEST_MISMATCH
            )
        cache.update(request)
        return control_pb2.UpdateMetadataResponse()


def _events(leaders: dict[TopicPartition, list[int]], registered) -> list[ev.ControllerEvent]:
    topics: dict[str, dict[int, list[int]]] = {}
    for tp, replicas in leaders.items():
        topics.setdefault(tp.topic, {})[tp.partition] = replicas
    topic_updates = [
        ev.TopicUpdate(
            name,
            metadata_pb2.TopicAssignment(
                topic_id=f"id-{name}",
                partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in parts.items()},
            ),
            10,
        )
        for name, parts in topics.items()
    ]
    states = [
        ev.PartitionStateUpdate(
            tp, codec.StoredPartitionState(LeaderAndIsr(r[0], 2, tuple(r), 1, 100 + i)), 100 + i
        )
        for i, (tp, r) in enumerate(leaders.items())
        if tp.topic != "fresh"  # a partition without a state key yet
    ]
    return [
        ev.BrokerChange(registered=tuple(BROKERS[b] for b in registered)),
        ev.TopicChange(tuple(topic_updates)),
        ev.PartitionStateChange(tuple(states)),
        ev.Synced(500),
    ]


class _Late(_Channels):
    """``_Channels`` whose brokers in ``late`` answer UpdateMetadata only once ``gate`` is set."""

    def __init__(self, timeline, caches, late: set[int], gate: asyncio.Event) -> None:
        super().__init__(timeline, caches)
        self.late = late
        self.gate = gate

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        if kind == UPDATE_METADATA and broker_id in self.late:
            await self.gate.wait()
        return await super().answer(broker_id, kind, data)


async def _active(
    tmp_path,
    leaders,
    timeline,
    registered=(1, 2, 3),
    extra=(),
    caches=None,
    delivery="fast",
    channels=_Channels,
) -> Controller:
    brokers: dict[int, MetadataCache] = {} if caches is None else caches
    c = Controller(
        ControllerConfig(controller_id=1, delivery=delivery),
        _Store(),  # type: ignore[arg-type]
        StateChangeLog(str(tmp_path / "sc.log"), controller_id=1),
        lambda: [],
        lambda: channels(timeline, brokers),
    )
    for e in [*_events(leaders, registered), *extra]:
        await c.handle(e)
    c.role.elected(2, 600, 0.0)
    await c.handle(ev.Synced(600))
    assert c.active
    await asyncio.sleep(0.01)  # the senders drain what the last event queued
    return c


async def _turns(n: int) -> None:
    """``n`` turns of the event loop for the senders and the answering tasks (no clock)."""
    for _ in range(n):
        await asyncio.sleep(0)


async def _turns_until(done, turns: int = 1_000) -> None:
    """Turns of the event loop until ``done()``, at most ``turns``."""
    for _ in range(turns):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"not done after {turns} turns of the event loop")


def _records(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "sc.log").read_text().splitlines()]


async def test_update_metadata_is_on_the_wire_before_the_state_machines(
    tmp_path, monkeypatch
) -> None:
    timeline: list = []
    real = failover_module.move_replicas

    async def marked(c, replicas, target, **kw):
        timeline.append(("replica_startup",))
        return await real(c, replicas, target, **kw)

    monkeypatch.setattr(failover_module, "move_replicas", marked)
    leaders = {TopicPartition(t, p): [1 + p % 3, 1 + (p + 1) % 3] for t in ("a", "gone", "fresh")
               for p in range(4)}  # fmt: skip
    deletion = ev.TopicDeletion(
        (ev.DeletionIntentUpdate("gone", metadata_pb2.TopicDeletion(request_id="r"), 20),)
    )
    await _active(tmp_path, leaders, timeline, registered=(1, 2), extra=[deletion])

    startup = timeline.index(("replica_startup",))
    before = [(e[1], e[2]) for e in timeline[:startup]]
    # Digest-first: the brokers' caches are empty, so each refuses the digest and is sent
    # every partition, and both go out before the state machines start.
    assert sorted(before) == [(1, UPDATE_METADATA)] * 2 + [(2, UPDATE_METADATA)] * 2
    for broker in (1, 2):
        digest_only, full = (
            control_pb2.UpdateMetadataRequest.FromString(e[3])
            for e in timeline[:startup]
            if e[1] == broker
        )
        assert len(digest_only.metadata_digest) == 16 and not digest_only.partition_states
        assert full.metadata_digest == b""
        for um in (digest_only, full):
            assert (um.controller_epoch, um.broker_epoch, um.controller_port) == (
                2, 10 + broker, 9190
            )  # fmt: skip
        # The digest-only request names the live set by its digest; the full one lists it.
        assert len(digest_only.live_brokers_base) == 16 and not digest_only.live_brokers
        assert not full.HasField("live_brokers_base")
        assert [b.broker_id for b in full.live_brokers] == [1, 2]
        states = {(s.topic, s.partition): s for s in full.partition_states}
        assert sorted(states) == [(t, p) for t in ("a", "gone") for p in range(4)]
        assert {s.leader for (t, _), s in states.items() if t == "gone"} == {-2}
        assert (states["a", 0].leader, list(states["a", 1].offline_replicas)) == (1, [3])
    assert any(e[0] == "wire" and e[2] == "LeaderAndIsr" for e in timeline[startup:])


class _Watching(_Channels):
    """``_Channels`` noting, as each UpdateMetadata leaves, whether the collector was on and
    whether the manager already held the copy of what the brokers will hold."""

    def __init__(self, timeline: list, caches: dict[int, MetadataCache]) -> None:
        super().__init__(timeline, caches)
        self.seen: list[tuple[bool, bool]] = []

    def _method(self, broker, kind: str):
        call = super()._method(broker, kind)

        def watched(request, timeout=None):
            if kind == UPDATE_METADATA:
                self.seen.append((gc.isenabled(), self.held_states is not None))
            return call(request, timeout)

        return watched


async def test_the_failover_requests_leave_before_the_collector_and_the_held_copy(
    tmp_path,
) -> None:
    """At a million partitions the collector's young collections and the copy of every
    encoded state (``held``) came before the first broker was told; both now wait until the
    requests are on the wire."""
    leaders = {TopicPartition("a", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}
    c = await _active(tmp_path, leaders, [], channels=_Watching)
    channels = c.channels
    assert isinstance(channels, _Watching)
    digest_only = channels.seen[:3]  # the first request to each broker
    assert digest_only == [(False, False)] * 3
    assert gc.isenabled()
    held = channels.held_states
    assert held is not None
    cache = c.delivery.metadata_cache  # type: ignore[attr-defined]
    assert held.entries == cache._entries and held.entries is not cache._entries


async def test_brokers_kept_up_to_date_take_the_digest_alone(tmp_path) -> None:
    leaders = {TopicPartition(t, p): [1 + p % 3, 1 + (p + 1) % 3] for t in ("a", "b")
               for p in range(6)}  # fmt: skip
    for name in ("old", "new", "newer"):
        (tmp_path / name).mkdir()
    caches: dict[int, MetadataCache] = {}
    first: list = []
    old = await _active(tmp_path / "old", leaders, first, caches=caches)
    await asyncio.sleep(0.01)
    assert old.channels.digest_mismatches == 3  # empty caches: every partition sent
    digests = {b: cache.digest() for b, cache in caches.items()}
    assert set(digests.values()) == {old.metadata_cache.digest()}
    await old.channels.close()

    # The next controller finds the brokers' caches as the old one left them.
    timeline: list = []
    new = await _active(tmp_path / "new", leaders, timeline, caches=caches)
    await asyncio.sleep(0.01)
    sent = [
        control_pb2.UpdateMetadataRequest.FromString(e[3])
        for e in timeline
        if e[0] == "wire" and e[2] == UPDATE_METADATA
    ]
    assert new.channels.digest_mismatches == 0
    assert [(len(um.metadata_digest), len(um.partition_states)) for um in sent[:3]] == [(16, 0)] * 3
    assert all(um.metadata_digest == b"" for um in sent[3:])  # later ones are ordinary
    # The replica state machine's startup resends every partition (Kafka's failover): brokers
    # that took the digest hold every UpdateMetadata state and had answered every LeaderAndIsr
    # before it, so neither is sent again.
    assert not [e for e in timeline if e[0] == "wire" and e[2] == "LeaderAndIsr"]
    assert all(not um.partition_states for um in sent[3:])
    assert new.delivery.brokers_up_to_date() == {1, 2, 3}
    assert {b: cache.digest() for b, cache in caches.items()} == digests

    # A broker whose cache lost a partition is sent every partition again, and then agrees.
    gone = MetadataPartition("a", 0, LEADER_DURING_DELETE, 0, (), ())
    caches[2].update(UpdateMetadata(1, 2, 12, (gone,), live_brokers=()))
    assert caches[2].partition(TopicPartition("a", 0)) is None
    timeline.clear()
    newer = await _active(tmp_path / "newer", leaders, timeline, caches=caches)
    await asyncio.sleep(0.01)
    assert newer.channels.digest_mismatches == 1
    assert {b: cache.digest() for b, cache in caches.items()} == digests


@pytest.mark.parametrize("differs", [False, True])
async def test_a_broker_answering_after_the_replica_startup(tmp_path, monkeypatch, differs) -> None:
    """A broker whose answer to the failover's digest comes after the replica startup is not
    sent LeaderAndIsr then; when it answers, it is sent its replicas' only if its metadata
    differed, and after the full UpdateMetadata."""
    leaders = {TopicPartition("a", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}
    caches: dict[int, MetadataCache] = {}
    (tmp_path / "old").mkdir()
    await _active(tmp_path / "old", leaders, [], caches=caches)  # brokers kept up to date
    if differs:
        gone = MetadataPartition("a", 0, LEADER_DURING_DELETE, 0, (), ())
        caches[2].update(UpdateMetadata(1, 2, 12, (gone,), live_brokers=()))
    monkeypatch.setattr(fast_module, "ISSUE_TIMEOUT_S", 0.001)  # the failover waits no longer
    gate = asyncio.Event()
    timeline: list = []
    c = await _active(
        tmp_path,
        leaders,
        timeline,
        caches=caches,
        channels=lambda t, b: _Late(t, b, {2}, gate),
    )
    puts: list = []
    c.put = puts.append
    lais = [e for e in timeline if e[0] == "wire" and e[2] == "LeaderAndIsr"]
    assert not lais and not puts  # 1 and 3 took the digest; 2 has not answered
    assert c.delivery.brokers_up_to_date() == {1, 3}

    def to_2() -> list[tuple[str, bytes]]:
        return [(e[2], e[3]) for e in timeline if e[0] == "wire" and e[1] == 2]

    gate.set()
    if differs:  # refused the digest, then sent every partition
        await _turns_until(lambda: len(to_2()) == 2 and bool(puts))
    else:
        await _turns_until(lambda: c.delivery.brokers_up_to_date() == {1, 2, 3})
    await _turns(100)  # anything queued behind the answer would be on the wire by now
    assert not [e for e in timeline if e[0] == "wire" and e[2] == "LeaderAndIsr"]
    if not differs:
        assert not puts
        return
    assert puts == [ev.ResendLeaderAndIsr(c.generation)]
    await c.handle(puts[0])
    await _turns_until(lambda: len(to_2()) == 3)
    await _turns(100)
    sent = [(2, k, d) for k, d in to_2()]
    kinds = [k for _, k, _ in sent]
    # The digest, refused; every partition; then LeaderAndIsr for every replica on broker 2.
    assert kinds == [UPDATE_METADATA, UPDATE_METADATA, "LeaderAndIsr"]
    lai = control_pb2.LeaderAndIsrRequest.FromString(sent[2][2])
    assert sorted((s.topic, s.partition) for s in lai.partition_states) == sorted(
        (tp.topic, tp.partition) for tp, r in leaders.items() if 2 in r
    )
    assert not [e for e in timeline if e[0] == "wire" and e[2] == "LeaderAndIsr" and e[1] != 2]
    assert caches[2].digest() == caches[1].digest()


async def test_the_full_delivery_sends_every_partition_at_failover(tmp_path) -> None:
    """``--delivery full``: no digest first, every broker sent every partition (Kafka's
    failover), encoded as it leaves; what the replica startup resends is still held."""
    leaders = {TopicPartition("a", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}
    caches: dict[int, MetadataCache] = {}
    await _active(tmp_path, leaders, [], caches=caches)  # brokers kept up to date
    digests = {b: cache.digest() for b, cache in caches.items()}
    timeline: list = []
    (tmp_path / "full").mkdir()
    c = await _active(tmp_path / "full", leaders, timeline, caches=caches, delivery="full")
    await asyncio.sleep(0.01)
    sent = [
        (e[1], control_pb2.UpdateMetadataRequest.FromString(e[3]))
        for e in timeline
        if e[0] == "wire" and e[2] == UPDATE_METADATA
    ]
    firsts = {}
    for broker, um in sent:
        firsts.setdefault(broker, um)
    assert sorted(firsts) == [1, 2, 3]
    for um in firsts.values():
        assert not um.metadata_digest and len(um.partition_states) == 6
        assert [b.broker_id for b in um.live_brokers] == [1, 2, 3]
    assert c.channels.digest_mismatches == 0
    assert all(not um.partition_states for b, um in sent if um is not firsts[b])
    assert {b: cache.digest() for b, cache in caches.items()} == digests


async def test_startup_self_transitions_are_not_recorded(tmp_path) -> None:
    leaders = {TopicPartition("a", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}
    leaders[TopicPartition("a", 6)] = [3, 2]  # led by a broker that is not registered
    c = await _active(tmp_path, leaders, [], registered=(1, 2))
    records = _records(tmp_path)
    replica = [(r["from_state"], r["to_state"]) for r in records if r["kind"] == "replica"]
    partition = [
        (r["partition"], r["to_state"], r["leader"]) for r in records if r["kind"] == "partition"
    ]
    assert replica == []
    # Partitions led by the missing broker 3 were elected; the others need no record.
    assert partition == [
        (2, "OnlinePartition", 1),
        (5, "OnlinePartition", 1),
        (6, "OnlinePartition", 2),
    ]
    controller = [r["event"] for r in records if r["kind"] == "controller"]
    assert controller == ["metadata_pushed", "failover_done"]
    # The replicas still went Online in the context.
    assert c.ctx.replica_state(PartitionReplica(TopicPartition("a", 0), 1)) is ReplicaState.ONLINE


async def test_controlled_shutdown_moves_everything_off_the_broker(tmp_path) -> None:
    # Broker 1 leads 0..7 and follows 8..11.
    leaders = {TopicPartition("s", p): ([1, 2, 3] if p < 8 else [2, 1, 3]) for p in range(12)}
    timeline: list = []
    c = await _active(tmp_path, leaders, timeline)
    future = asyncio.get_running_loop().create_future()
    req = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=11)
    await c.handle(ev.ControlledShutdown(req, future))
    resp = future.result()
    assert (resp.error_code, list(resp.remaining_partitions)) == (0, [])
    ctx = c.ctx
    for p in range(12):
        lai = ctx.leader_and_isr(TopicPartition("s", p))
        assert (lai.leader, lai.isr) == (2, (2, 3)), p
    assert c.ctx.partitions_led_by(1) == ()


async def test_controlled_shutdown_answers_before_building_requests(tmp_path) -> None:
    # Broker 1 leads 0..3 and follows 4..5; the answer is set before any request is gathered
    # and before the follower step is decided, with the cyclic collector paused until then,
    # and the requests that follow are complete.
    leaders = {TopicPartition("s", p): ([1, 2, 3] if p < 4 else [2, 1, 3]) for p in range(6)}
    timeline: list = []
    c = await _active(tmp_path, leaders, timeline)
    timeline.clear()
    future = asyncio.get_running_loop().create_future()
    seen: list[tuple[str, bool, bool]] = []
    add_plan, commit_plan = c.batch.add_plan, c.store.commit_plan

    def recording_add_plan(plan) -> None:
        seen.append(("add_plan", future.done(), gc.isenabled()))
        add_plan(plan)

    async def recording_commit_plan(plan, offline=None):
        seen.append(("commit", future.done(), gc.isenabled()))
        return await commit_plan(plan, offline)

    wait_answered = c.delivery.wait_answered

    async def recording_wait_answered(timeout_s, upto=None, **kwargs):
        answered = await wait_answered(timeout_s, upto, **kwargs)
        seen.append(("answered", answered, len(timeline), sorted(upto or {})))
        return answered

    c.batch.add_plan = recording_add_plan  # type: ignore[method-assign]
    c.store.commit_plan = recording_commit_plan  # type: ignore[method-assign]
    c.delivery.wait_answered = recording_wait_answered  # type: ignore[method-assign]
    req = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=11)
    assert gc.isenabled()
    await c.handle(ev.ControlledShutdown(req, future))
    assert gc.isenabled()
    assert (future.result().error_code, list(future.result().remaining_partitions)) == (0, [])
    # The answer follows the leadership moves' commit; the follower step is decided and
    # committed (the collector paused again) once the leadership moves' batch (its six
    # requests: LeaderAndIsr and UpdateMetadata to brokers 1 to 3) is answered, by the brokers
    # other than broker 1: told it may stop, it may never answer.
    assert seen == [
        ("commit", False, False),
        ("add_plan", True, True),
        ("answered", True, 6, [2, 3]),
        ("commit", True, False),
        ("add_plan", True, False),
    ]
    await asyncio.sleep(0.01)
    # Per broker, in the order sent: the leadership moves' batch, then the follower step's
    # (a batch's StopReplica after its UpdateMetadata, as Kafka's sendRequestsToBrokers).
    sent: dict[int, list[tuple[str, list]]] = {}
    for _, broker, kind, data in timeline:
        if kind == "LeaderAndIsr":
            pb = control_pb2.LeaderAndIsrRequest.FromString(data)
            states = [
                (s.partition, s.leader, list(s.isr), s.leader_epoch) for s in pb.partition_states
            ]
        elif kind == "StopReplica":
            pb = control_pb2.StopReplicaRequest.FromString(data)
            states = [(s.partition, s.delete_partition) for s in pb.partition_states]
        else:
            pb = control_pb2.UpdateMetadataRequest.FromString(data)
            states = [(s.partition, s.leader) for s in pb.partition_states]
        sent.setdefault(broker, []).append((kind, states))
    moved = [(p, 2, [2, 3], 3) for p in range(4)]
    shrunk = [(p, 2, [2, 3], 3) for p in range(4, 6)]
    um_moved = ("UpdateMetadata", [(p, 2) for p in range(4)])
    um_shrunk = ("UpdateMetadata", [(p, 2) for p in range(4, 6)])
    assert sent == {
        1: [
            ("LeaderAndIsr", moved),
            um_moved,
            um_shrunk,
            ("StopReplica", [(4, False), (5, False)]),
        ],
        2: [("LeaderAndIsr", moved), um_moved, ("LeaderAndIsr", shrunk), um_shrunk],
        3: [("LeaderAndIsr", moved), um_moved, ("LeaderAndIsr", shrunk), um_shrunk],
    }


async def test_controlled_shutdown_leaves_a_disabled_collector_disabled(tmp_path) -> None:
    leaders = {TopicPartition("s", p): [1, 2, 3] for p in range(3)}
    c = await _active(tmp_path, leaders, [])
    future = asyncio.get_running_loop().create_future()
    req = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=11)
    gc.disable()
    try:
        await c.handle(ev.ControlledShutdown(req, future))
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert [c.ctx.leader_and_isr(TopicPartition("s", p)).leader for p in range(3)] == [2, 2, 2]


async def test_a_broker_expiry_records_when_the_watch_delivered_it(tmp_path) -> None:
    leaders = {TopicPartition("s", p): [1, 2, 3] for p in range(3)}
    c = await _active(tmp_path, leaders, [])
    await c.handle(ev.BrokerChange((), (3,), received_ms=1_796_000_000_123))
    c.statelog.flush()
    expired = [r for r in _records(tmp_path) if r["event"] == "expired"]
    assert [(r["broker_id"], r["detected_ms"]) for r in expired] == [(3, 1_796_000_000_123)]
