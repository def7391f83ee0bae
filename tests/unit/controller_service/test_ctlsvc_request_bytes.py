"""Pre-encoded UpdateMetadata (shared partition states after a per-broker header) and the
channel manager's ``wait_issued``: requests counted as issued once gRPC serialised them."""

from __future__ import annotations

import asyncio
import dataclasses

from ctlsvc_instant_channels import InstantChannels
from google.protobuf.message import Message

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    _RESPONSES,
    LEADER_AND_ISR,
    UPDATE_METADATA,
    ChannelSettings,
    _Broker,
)

B1 = BrokerInfo(1, "h1", 9001, "r1", 40)
B2 = BrokerInfo(2, "h2", 9002, "", 41)
STATES = tuple(
    UpdateMetadataPartitionState(
        TopicPartition(t, p), f"id-{t}", 5, 1, 4, (1, 2), 70 + p, (1, 2), ()
    )
    for t in ("a", "b")
    for p in range(3)
)


def _requests(broker: BrokerInfo, um=STATES, lai=()) -> BrokerRequests:
    return BrokerRequests(
        broker_id=broker.id, broker_epoch=broker.epoch, controller_id=7, controller_epoch=5,
        leader_and_isr=lai, live_leaders=(), stop_replica=(), update_metadata=um,
        live_brokers=(B1, B2),
    )  # fmt: skip


def test_encoded_update_metadata_is_the_message() -> None:
    for broker in (B1, B2):
        req = _requests(broker)
        body = wire.update_metadata_body(STATES)
        encoded = wire.encoded_update_metadata(req, "ctl", 9190, body, len(STATES))
        assert encoded.decode() == wire.update_metadata(req, "ctl", 9190)
        assert (encoded.broker_epoch, encoded.controller_epoch, encoded.partition_count) == (
            broker.epoch, 5, 6
        )  # fmt: skip
    # Per-partition encodings concatenate to the encoding of all of them.
    parts = b"".join(wire.update_metadata_body((s,)) for s in STATES)
    assert parts == wire.update_metadata_body(STATES)


LAI_STATES = (
    LeaderAndIsrPartitionState(
        TopicPartition("a", 0), "id-a", LeaderAndIsr(2, 4, (2, 3), 5, 70), (1, 2, 3), (), (), False
    ),
    LeaderAndIsrPartitionState(
        TopicPartition("a", 1),
        "id-a",
        LeaderAndIsr(3, 9, (3,), 5, 71, True),
        (3, 4),
        (4,),
        (),
        True,
    ),
    LeaderAndIsrPartitionState(
        TopicPartition("b", 0), "id-b", LeaderAndIsr(1, 1, (1, 2), 5, 72), (1, 2), (), (2,), False
    ),
)


def test_encoded_leader_and_isr_is_the_message() -> None:
    encoded_states: list[LeaderAndIsrPartitionState] = []

    def encode(s: LeaderAndIsrPartitionState) -> bytes:
        encoded_states.append(s)
        return wire.leader_and_isr_state_bytes(s)

    for broker, lai in ((B1, LAI_STATES), (B2, LAI_STATES[1:2])):
        req = _requests(broker, lai=lai)
        encoded = wire.encoded_leader_and_isr(req, encode)
        assert encoded is not None
        assert encoded.decode() == wire.leader_and_isr(req)
        assert (encoded.broker_epoch, encoded.controller_epoch, encoded.partition_count) == (
            broker.epoch, 5, len(lai)
        )  # fmt: skip
    assert encoded_states == [*LAI_STATES, LAI_STATES[1]]
    assert wire.encoded_leader_and_isr(_requests(B1), encode) is None


class _Recording(InstantChannels):
    """Every request recorded as it went on the wire; answered once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(self._answered)
        self.release = asyncio.Event()
        self.wire: list[tuple[int, str, bytes]] = []
        self.answers: list[tuple[int, str]] = []

    def _answered(self, broker_id, kind, request, response) -> None:
        self.answers.append((broker_id, kind))

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        self.wire.append((broker_id, kind, data))
        await self.release.wait()
        return await super().answer(broker_id, kind, data)


async def test_send_batch_encodes_once_and_wait_issued_follows_grpc() -> None:
    ch = _Recording()
    ch.add_broker(B1)
    ch.add_broker(B2)
    lai = LeaderAndIsrPartitionState(
        STATES[0].tp, "id-a", LeaderAndIsr(1, 4, (1, 2), 5, 70), (1, 2), (), (), False
    )
    ch.send_batch({1: _requests(B1, lai=(lai,)), 2: _requests(B2)})
    assert ch.wire == []  # queued, not yet handed to gRPC
    assert await ch.wait_issued(1.0)
    assert [(b, k) for b, k, _ in ch.wire] == [(1, LEADER_AND_ISR), (2, UPDATE_METADATA)]
    lai_pb = control_pb2.LeaderAndIsrRequest.FromString(ch.wire[0][2])
    assert lai_pb == wire.leader_and_isr(_requests(B1, lai=(lai,)))  # UpdateMetadata follows
    um = control_pb2.UpdateMetadataRequest.FromString(ch.wire[1][2])
    assert um.nothing_queued  # the last request queued for broker 2
    um.nothing_queued = False
    assert um == wire.update_metadata(_requests(B2), "ctl", 9190)

    # A second batch waits behind the unanswered first: not issued within the timeout.
    ch.send(2, UPDATE_METADATA, wire.update_metadata(_requests(B2), "ctl", 9190))
    assert not await ch.wait_issued(0.05)
    ch.release.set()
    assert await ch.wait_issued(1.0)
    await asyncio.sleep(0.01)
    both = [(1, LEADER_AND_ISR), (1, UPDATE_METADATA), (2, UPDATE_METADATA), (2, UPDATE_METADATA)]
    assert sorted(ch.answers) == both
    await ch.close()


async def test_send_batch_encodes_a_shared_leader_and_isr_state_once(monkeypatch) -> None:
    ch = _Recording()
    ch.add_broker(B1)
    ch.add_broker(B2)
    encoded: list[TopicPartition] = []
    real = wire.leader_and_isr_state_bytes

    def counting(s: LeaderAndIsrPartitionState) -> bytes:
        encoded.append(s.tp)
        return real(s)

    monkeypatch.setattr(wire, "leader_and_isr_state_bytes", counting)
    one = {1: _requests(B1, lai=LAI_STATES), 2: _requests(B2, lai=LAI_STATES[:2])}
    ch.send_batch(one)
    ch.release.set()
    assert await ch.wait_issued(1.0)
    await asyncio.sleep(0.01)
    assert encoded == [s.tp for s in LAI_STATES]
    sent = {
        b: control_pb2.LeaderAndIsrRequest.FromString(data)
        for b, kind, data in ch.wire
        if kind == LEADER_AND_ISR
    }
    assert sent == {b: wire.leader_and_isr(one[b]) for b in (1, 2)}
    await ch.close()


class _Refusing(_Recording):
    """Answers at once; brokers in ``refuse`` refuse a digest-only UpdateMetadata."""

    def __init__(self, refuse: set[int]) -> None:
        super().__init__()
        self.release.set()
        self.refuse = refuse
        self.refuse_live = False  # refuse every UpdateMetadata naming the live set as a change
        self.answered: list[tuple[int, str, object]] = []

    def _answered(self, broker_id, kind, request, response) -> None:
        self.answered.append((broker_id, kind, request))

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        self.wire.append((broker_id, kind, data))
        if kind == UPDATE_METADATA:
            um = control_pb2.UpdateMetadataRequest.FromString(data)
            if (um.metadata_digest and broker_id in self.refuse) or (
                self.refuse_live and um.HasField("live_brokers_base")
            ):
                return control_pb2.UpdateMetadataResponse(
                    error_code=common_pb2.ERROR_CODE_METADATA_DIGEST_MISMATCH
                )
        return _RESPONSES[kind]()


async def test_digest_first_is_sent_in_full_only_where_refused() -> None:
    ch = _Refusing(refuse={1})
    ch.add_broker(B1)
    ch.add_broker(B2)
    body = wire.update_metadata_body(STATES)
    requests = {
        b.id: wire.DigestFirst(
            wire.digest_update_metadata(_requests(b, um=()), "ctl", 9190, b"\x07" * 16),
            wire.encoded_update_metadata(_requests(b), "ctl", 9190, body, len(STATES)),
        )
        for b in (B1, B2)
    }
    lai = LeaderAndIsrPartitionState(
        STATES[0].tp, "id-a", LeaderAndIsr(1, 4, (1, 2), 5, 70), (1, 2), (), (), False
    )
    for b in (B1, B2):
        ch.send(b.id, UPDATE_METADATA, requests[b.id])
        ch.send(b.id, LEADER_AND_ISR, wire.leader_and_isr(_requests(b, um=(), lai=(lai,))))
    await asyncio.wait_for(asyncio.gather(*(r.settled.wait() for r in requests.values())), 1)
    for _ in range(50):
        if len(ch.answered) == 4:
            break
        await asyncio.sleep(0.01)

    def sent(broker_id):
        out = []
        for b, kind, data in ch.wire:
            if b == broker_id and kind != UPDATE_METADATA:
                out.append((kind, ""))
            elif b == broker_id:
                um = control_pb2.UpdateMetadataRequest.FromString(data)
                out.append((kind, "digest" if um.metadata_digest else "full"))
        return out

    # The full request goes right after the refusal, before what was queued behind it.
    assert sent(1) == [(UPDATE_METADATA, "digest"), (UPDATE_METADATA, "full"), (LEADER_AND_ISR, "")]
    assert sent(2) == [(UPDATE_METADATA, "digest"), (LEADER_AND_ISR, "")]
    assert (requests[1].in_full, requests[2].in_full) == (True, False)
    assert ch.digest_mismatches == 1
    um_answers = {b: r for b, kind, r in ch.answered if kind == UPDATE_METADATA}
    assert um_answers == {1: requests[1].full, 2: requests[2].digest_only}
    await ch.close()


class _Timing(_Recording):
    """Records the deadline each call was given."""

    def __init__(self) -> None:
        super().__init__()
        self.release.set()
        self.timeouts: list[tuple[str, float]] = []

    def _method(self, broker: _Broker, kind: str):
        inner = super()._method(broker, kind)

        def call(request, timeout=None):
            self.timeouts.append((kind, timeout))
            return inner(request, timeout=timeout)

        return call


async def test_deadlines_grow_with_the_partitions_a_request_names() -> None:
    settings = ChannelSettings("ctl", 9190, request_timeout_s=10.0, timeout_per_partition_s=0.001)
    assert [settings.timeout_for(n) for n in (0, 6, 100_000)] == [10.0, 10.006, 110.0]
    ch = _Timing()
    ch.settings = settings
    ch.add_broker(B1)
    body = wire.update_metadata_body(STATES)
    ch.send(1, UPDATE_METADATA, wire.encoded_update_metadata(_requests(B1), "ctl", 9190, body, 6))
    ch.send(1, UPDATE_METADATA, wire.update_metadata(_requests(B1, um=STATES[:2]), "ctl", 9190))
    for _ in range(50):
        if len(ch.timeouts) == 2:
            break
        await asyncio.sleep(0.01)
    assert ch.timeouts == [(UPDATE_METADATA, 10.006), (UPDATE_METADATA, 10.002)]
    await ch.close()


async def test_total_queue_size_counts_batches_until_answered() -> None:
    ch = _Recording()
    ch.add_broker(B1)
    ch.add_broker(B2)
    assert ch.total_queue_size() == 0
    ch.send_batch({1: _requests(B1), 2: _requests(B2)})
    ch.send(2, UPDATE_METADATA, wire.update_metadata(_requests(B2), "ctl", 9190))
    assert not await ch.wait_issued(0.05)  # broker 2's second waits for its first's answer
    assert ch.total_queue_size() == 3  # two in flight, one waiting behind broker 2's
    ch.release.set()
    for _ in range(50):
        if ch.total_queue_size() == 0:
            break
        await asyncio.sleep(0.01)
    assert ch.total_queue_size() == 0
    await ch.close()


async def test_a_request_above_the_page_size_goes_as_pages_in_order() -> None:
    """LeaderAndIsr and UpdateMetadata naming more partitions than ``max_partitions_per_request``
    go as several requests, in order; together they are the whole request. UpdateMetadata's
    first page names the live brokers, the others the same set as unchanged."""
    ch = _Refusing(refuse=set())
    ch.settings = ChannelSettings("ctl", 9190, max_partitions_per_request=4)
    ch.add_broker(B1)
    lai = tuple(
        LeaderAndIsrPartitionState(
            TopicPartition("c", p), "id-c", LeaderAndIsr(1, 1, (1, 2), 5, 80 + p), (1, 2), (), (),
            False,
        )
        for p in range(9)
    )  # fmt: skip
    whole = _requests(B1, lai=lai)
    ch.send_batch({1: whole})
    for _ in range(100):
        if len(ch.answered) == 5:
            break
        await asyncio.sleep(0.01)
    kinds = [k for _, k, _ in ch.wire]
    assert kinds == [LEADER_AND_ISR] * 3 + [UPDATE_METADATA] * 2
    lais = [control_pb2.LeaderAndIsrRequest.FromString(d) for _, k, d in ch.wire[:3]]
    assert [len(r.partition_states) for r in lais] == [4, 4, 1]
    assert [s for r in lais for s in r.partition_states] == list(
        wire.leader_and_isr(whole).partition_states
    )
    ums = [control_pb2.UpdateMetadataRequest.FromString(d) for _, k, d in ch.wire[3:]]
    assert [len(r.partition_states) for r in ums] == [4, 2]
    assert [s for r in ums for s in r.partition_states] == list(
        wire.update_metadata(whole, "ctl", 9190).partition_states
    )
    assert [b.broker_id for b in ums[0].live_brokers] == [1, 2]
    assert not ums[0].HasField("live_brokers_base")
    assert (list(ums[1].live_brokers), ums[1].live_brokers_base) == (
        [], wire.live_digest((B1, B2))
    )  # fmt: skip
    assert [um.nothing_queued for um in ums] == [False, True]
    await ch.close()


async def test_a_later_update_metadata_names_the_live_brokers_as_a_change() -> None:
    """The first UpdateMetadata to a broker lists every live broker; the next names only the
    change from it, and a broker that holds another set is sent the whole set after all."""
    ch = _Refusing(refuse=set())
    ch.add_broker(B1)
    ch.send_batch({1: _requests(B1)})
    b3 = BrokerInfo(3, "h3", 9003, "", 42)
    later = dataclasses.replace(_requests(B1), live_brokers=(B1, b3))
    ch.send_batch({1: later})
    for _ in range(100):
        if len(ch.answered) == 2:
            break
        await asyncio.sleep(0.01)
    first, second = (control_pb2.UpdateMetadataRequest.FromString(d) for _, _, d in ch.wire)
    assert [b.broker_id for b in first.live_brokers] == [1, 2]
    assert second.live_brokers_base == wire.live_digest((B1, B2))
    assert ([b.broker_id for b in second.live_brokers], list(second.removed_brokers)) == ([3], [2])

    # A broker answering that it holds another set gets the whole set right after.
    ch.refuse_live = True
    ch.send_batch({1: dataclasses.replace(later, live_brokers=(B1,))})
    for _ in range(100):
        if len(ch.answered) == 3:
            break
        await asyncio.sleep(0.01)
    third, fourth = (control_pb2.UpdateMetadataRequest.FromString(d) for _, _, d in ch.wire[2:])
    assert (list(third.removed_brokers), third.HasField("live_brokers_base")) == ([3], True)
    assert ([b.broker_id for b in fourth.live_brokers], fourth.HasField("live_brokers_base")) == (
        [1], False
    )  # fmt: skip
    assert ch.digest_mismatches == 1
    await ch.close()
