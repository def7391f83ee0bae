"""The fast delivery against the plain one (its oracle): for any request batch, every broker
is sent the same bytes — the fast one's partition states encoded once from cached pieces and
put around each broker's header, the plain one's built by the generated classes — and a
failover's every-partition UpdateMetadata is the same request whether it comes from the
standby's encoded cache or is built afresh."""

from __future__ import annotations

import dataclasses

from google.protobuf.message import Message
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from leasehold.broker.v1 import control_pb2
from services.broker_agent import control_convert
from services.broker_agent.metadata_cache import MetadataCache
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    ControllerContext,
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    ReplicaAssignment,
    StopReplicaPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)
from services.controller.delivery.metadata_cache import UpdateMetadataCache
from services.controller.delivery.plain import PlainDelivery

HOST, PORT = "ctl", 9190
INT32 = st.integers(min_value=-1, max_value=2**31 - 1)
IDS = st.lists(st.integers(min_value=0, max_value=2**31 - 1), max_size=4).map(tuple)
TPS = st.builds(TopicPartition, st.sampled_from(["a", "b", "topic-c"]), st.integers(0, 50))
LAIS = st.builds(
    LeaderAndIsr,
    leader=INT32,
    leader_epoch=INT32,
    isr=IDS,
    controller_epoch=INT32,
    partition_epoch=st.integers(min_value=0, max_value=2**40),
    recovering=st.booleans(),
)
LAI_STATES = st.builds(
    LeaderAndIsrPartitionState, TPS, st.text(max_size=8), LAIS, IDS, IDS, IDS, st.booleans()
)
UM_STATES = st.builds(
    UpdateMetadataPartitionState,
    TPS, st.text(max_size=8), INT32, INT32, INT32, IDS, st.integers(0, 2**40), IDS, IDS,
)  # fmt: skip
BROKERS = st.builds(
    BrokerInfo, st.integers(1, 5), st.sampled_from(["h1", "h2"]), st.integers(1, 65535),
    st.sampled_from(["", "r1"]), st.integers(1, 10_000),
)  # fmt: skip


@st.composite
def batches(draw) -> dict[int, BrokerRequests]:
    """A built batch: per broker its requests; UpdateMetadata states shared by every broker, as
    ``RequestBatch.build`` shares them."""
    brokers = draw(st.lists(BROKERS, min_size=1, max_size=3, unique_by=lambda b: b.id))
    shared_um = draw(st.one_of(st.none(), st.lists(UM_STATES, max_size=6).map(tuple)))
    out = {}
    for b in brokers:
        out[b.id] = BrokerRequests(
            broker_id=b.id,
            broker_epoch=b.epoch,
            controller_id=draw(INT32),
            controller_epoch=draw(INT32),
            leader_and_isr=tuple(draw(st.lists(LAI_STATES, max_size=5))),
            live_leaders=tuple(draw(st.lists(BROKERS, max_size=2))),
            stop_replica=tuple(
                draw(st.lists(st.builds(StopReplicaPartitionState, TPS, INT32, st.booleans())))
            ),
            update_metadata=shared_um,
            live_brokers=tuple(brokers),
        )
    return out


class Recorded(ControllerChannelManager):
    """The fast encoding, with what it queues kept instead of sent."""

    def __init__(self) -> None:
        super().__init__(ChannelSettings(HOST, PORT), lambda *a: None)
        self.queued: dict[int, list[tuple[str, object]]] = {}

    def queue(self, broker_id: int, requests) -> bool:
        present = [(k, r) for k, r in requests if r is not None]
        self.queued.setdefault(broker_id, []).extend(present)
        return bool(present)


def _bytes(request: object) -> bytes:
    """What reaches a broker that holds something else than the controller thinks: a request
    naming the live brokers as a change is sent whole (``full``) after a mismatch."""
    if isinstance(request, wire.DigestFirst):
        request = request.full
    if isinstance(request, wire.EncodedRequest):
        return request.payload
    assert isinstance(request, Message)
    return request.SerializeToString()


@settings(max_examples=200, deadline=None)
@given(batches())
def test_every_broker_is_sent_the_same_bytes(batch) -> None:
    fast = Recorded()
    fast.send_batch(batch)
    plain = PlainDelivery(Recorded).encode_batch(batch, HOST, PORT)
    for broker_id, parts in plain.items():
        expected = [(kind, _bytes(r)) for kind, r in parts if r is not None]
        assert [(k, _bytes(r)) for k, r in fast.queued.get(broker_id, [])] == expected


@settings(max_examples=50, deadline=None)
@given(batches(), st.lists(BROKERS, min_size=1, max_size=4, unique_by=lambda b: b.id))
def test_live_brokers_sent_as_a_change_leave_a_broker_with_the_whole_set(batch, now) -> None:
    """After a first batch, the next names the live brokers as the change from the set each
    broker was sent: applied to that set it is the set the plain delivery lists whole, and
    its whole form is the plain delivery's bytes."""
    for req in batch.values():  # a built batch names each partition once
        states = req.update_metadata or ()
        assume(len({s.tp for s in states}) == len(states))
    fast = Recorded()
    for b in batch:
        fast._brokers[b] = _Broker(BrokerInfo(b, "h", 1), None)  # type: ignore[arg-type]
    fast.send_batch(batch)
    first = {b: [r for k, r in q if k == UPDATE_METADATA] for b, q in fast.queued.items()}
    fast.queued.clear()
    fast.forget_sent()  # a later controller event
    live = tuple(sorted(now, key=lambda b: b.id))  # as a batch lists them
    second = {b: dataclasses.replace(r, live_brokers=live) for b, r in batch.items()}
    fast.send_batch(second)
    plain = PlainDelivery(Recorded).encode_batch(second, HOST, PORT)
    for broker_id, parts in plain.items():
        expected = [_bytes(r) for kind, r in parts if r is not None and kind == UPDATE_METADATA]
        queued = fast.queued.get(broker_id, [])
        assert [_bytes(r) for k, r in queued if k == UPDATE_METADATA] == expected
        if not first[broker_id]:
            continue
        cache = MetadataCache()
        held = first[broker_id][0]
        cache.update(control_convert.update_metadata_from_pb(_decoded(held)))
        (change,) = [r for k, r in queued if k == UPDATE_METADATA]
        assert isinstance(change, wire.DigestFirst)
        short = control_convert.update_metadata_from_pb(change.digest_only.decode())
        assert short.live_brokers_base == cache.brokers_digest()
        cache.update(short)
        whole = control_pb2.UpdateMetadataRequest.FromString(_bytes(change)).live_brokers
        assert cache.alive_brokers() == [control_convert.endpoint_from_pb(e) for e in whole]


def _decoded(request: object) -> control_pb2.UpdateMetadataRequest:
    return control_pb2.UpdateMetadataRequest.FromString(_bytes(request))


def _context() -> ControllerContext:
    ctx = ControllerContext(1, 7)
    for b in (1, 2, 3):
        ctx.apply_broker_registered(BrokerInfo(b, f"h{b}", 9000 + b, "", 100 + b))
    for t in range(3):
        ctx.apply_topic(
            f"t{t}",
            f"id-{t}",
            {p: ReplicaAssignment((1 + p % 3, 1 + (p + 1) % 3)) for p in range(t, 40, 3)},
        )
    ctx.apply_topic_deletion_queued("t2")  # its partitions are announced with leader -2
    for t in range(3):
        for p in range(t, 40, 3):
            if p % 5:  # the others have no leader/ISR state yet: not announced
                lai = LeaderAndIsr(1 + p % 3, p, (1 + p % 3,), 7, 500 + p)
                ctx.apply_leader_and_isr(TopicPartition(f"t{t}", p), lai)
    return ctx


async def test_a_failovers_update_metadata_is_the_same_from_the_cache_or_built() -> None:
    ctx = _context()
    cache = UpdateMetadataCache()
    from_cache = cache.full_update_metadata(ctx, HOST, PORT)
    sent: dict[int, bytes] = {}

    class Channels(Recorded):
        def send(self, broker_id: int, kind: str, request, **kw) -> bool:
            sent[broker_id] = _bytes(request)
            return True

    plain = PlainDelivery(Channels)
    plain.open([], held=False)
    await plain.push_metadata(ctx)
    assert sorted(sent) == [1, 2, 3]
    assert {b: r.payload for b, r in from_cache.items()} == sent
