"""The core's per-broker ``BrokerRequests`` as BrokerControlService protobuf messages (seed 001).

Pure translation. Each request is stamped with the controller id and epoch and the target's
broker epoch (contract 7); UpdateMetadata also names the controller's endpoint so brokers can
find it (contract 8).

LeaderAndIsr and UpdateMetadata are also produced already encoded (``EncodedRequest``): a
LeaderAndIsr partition state usually goes to several brokers and is encoded once for all
(``encoded_leader_and_isr``); UpdateMetadata, because its partition
states are the same for every broker and, on a failover, for every partition of the cluster: the
states are encoded once (``update_metadata_body``, or kept per partition by ``metadata_cache``)
and each broker's request is its own small header around those bytes (``around_states``): the
same bytes as the generated class would write for the whole request.

The partition states themselves are encoded from pieces kept per value (``StateEncoder``, by
code that ``leasehold.fastwire`` generates from the layouts below), not one generated message
object per state: a broker failure at 10,000 partitions encodes 10,000 of each kind between its
commit and its first requests. ``tests/unit/controller_service/test_ctlsvc_state_wire.py``
checks the bytes against the generated classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from google.protobuf.message import Message

from leasehold import fastwire, metadata_digest
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.controller.codec import RECOVERED, RECOVERING, recovery_state
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    LeaderAndIsrPartitionState,
    UpdateMetadataPartitionState,
)


@dataclass(frozen=True, eq=False)
class EncodedRequest:
    """A control request already in wire form, with the fields spans and logs read.

    Its encoding is ``parts`` joined, joined only when it is read (``payload``: as gRPC
    serialises it): an UpdateMetadata is a broker's own header around a body of partition
    states every broker of the batch shares, and a creation step queued to a thousand brokers
    held a thousand copies of its 1.6 MB of states until each was sent (6.6 GB of controller
    at 200,000 of a million partitions created, the fleet a few steps behind)."""

    parts: tuple[bytes, ...]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_count: int
    message: type[Message] = control_pb2.UpdateMetadataRequest

    @property
    def payload(self) -> bytes:
        return b"".join(self.parts)

    def decode(self) -> Message:
        return self.message.FromString(self.payload)


def endpoint(info: BrokerInfo) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(
        broker_id=info.id, host=info.host, port=info.port, rack=info.rack
    )


# Each broker's endpoint encoding and its digest hash, by (id, host, port, rack): brokers come
# and go rarely, and every UpdateMetadata names them.
_ENDPOINTS: dict[tuple[int, str, int, str], tuple[bytes, int]] = {}
_ENDPOINTS_MAX = 100_000


def endpoint_bytes(info: BrokerInfo) -> tuple[bytes, int]:
    """``endpoint(info)`` encoded, and its ``metadata_digest.endpoint_hash``."""
    key = (info.id, info.host, info.port, info.rack)
    found = _ENDPOINTS.get(key)
    if found is None:
        encoded = endpoint(info).SerializeToString()
        found = (encoded, metadata_digest.endpoint_hash(encoded))
        if len(_ENDPOINTS) >= _ENDPOINTS_MAX:
            _ENDPOINTS.clear()
        _ENDPOINTS[key] = found
    return found


# The digests of the last few broker lists, by the list's identity: a failover names the same
# list to every broker (a thousand brokers: a million endpoint hashes summed, once instead).
_LIVE_DIGESTS: dict[int, tuple[Sequence[BrokerInfo], bytes]] = {}


def live_digest(brokers: Sequence[BrokerInfo]) -> bytes:
    """The digest of a live-broker set (``UpdateMetadataRequest.live_brokers_base``)."""
    found = _LIVE_DIGESTS.get(id(brokers))
    if found is not None and found[0] is brokers:
        return found[1]
    total = 0
    for b in brokers:
        total += endpoint_bytes(b)[1]
    digest = metadata_digest.to_bytes(metadata_digest.combine(total))
    if len(_LIVE_DIGESTS) >= 8:
        del _LIVE_DIGESTS[next(iter(_LIVE_DIGESTS))]
    _LIVE_DIGESTS[id(brokers)] = (brokers, digest)
    return digest


class LiveBrokers(NamedTuple):
    """How an UpdateMetadata names the live brokers: the whole set (``base`` None), or the
    change since the set whose digest is ``base``: brokers that joined or changed, ids that
    left."""

    base: bytes | None
    brokers: tuple[BrokerInfo, ...]
    removed: tuple[int, ...] = ()


def whole(brokers: tuple[BrokerInfo, ...]) -> LiveBrokers:
    return LiveBrokers(None, brokers)


def change(before: Sequence[BrokerInfo], now: Sequence[BrokerInfo]) -> LiveBrokers:
    """``now`` as a change from ``before`` (what the broker was last sent)."""
    known = {b.id: endpoint_bytes(b)[0] for b in before}
    ids = {b.id for b in now}
    return LiveBrokers(
        live_digest(before),
        tuple(b for b in now if known.get(b.id) != endpoint_bytes(b)[0]),
        tuple(sorted(i for i in known if i not in ids)),
    )


def around_states(header: Message) -> tuple[bytes, bytes]:
    """A request's fields numbered before its ``partition_states`` and after them, encoded:
    with the states between, the request has protobuf's own field order, so it is the same
    bytes as the generated class's whole message."""
    before = type(header)(
        **{fd.name: v for fd, v in header.ListFields() if fd.number < _STATES_NUMBER}
    )
    after = type(header)()
    after.CopyFrom(header)
    for fd, _ in before.ListFields():
        after.ClearField(fd.name)
    return before.SerializeToString(), after.SerializeToString()


def _leader_and_isr_header(req: BrokerRequests) -> control_pb2.LeaderAndIsrRequest:
    return control_pb2.LeaderAndIsrRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        live_leaders=[endpoint(b) for b in req.live_leaders],
    )


def _add_leader_and_isr_state(
    pb: control_pb2.LeaderAndIsrRequest, s: LeaderAndIsrPartitionState
) -> None:
    lai = s.leader_and_isr
    pb.partition_states.add(  # built in place: half the cost of building and copying
        topic=s.tp.topic,
        topic_id=s.topic_id,
        partition=s.tp.partition,
        controller_epoch=lai.controller_epoch,
        leader=lai.leader,
        leader_epoch=lai.leader_epoch,
        isr=lai.isr,
        partition_epoch=lai.partition_epoch,
        replicas=s.replicas,
        adding_replicas=s.adding_replicas,
        removing_replicas=s.removing_replicas,
        is_new=s.is_new,
        leader_recovery_state=RECOVERING if lai.recovering else RECOVERED,
    )


def leader_and_isr(req: BrokerRequests) -> control_pb2.LeaderAndIsrRequest | None:
    if not req.leader_and_isr:
        return None
    pb = _leader_and_isr_header(req)
    for s in req.leader_and_isr:
        _add_leader_and_isr_state(pb, s)
    return pb


# The partition states' layouts: topic and topic id; the partition number; controller epoch,
# leader, leader epoch and ISR (partitions moved by one event mostly share them); the partition
# epoch (the etcd revision: new every time, so not cached); the replica lists and flags.
_TOPIC = fastwire.group("topic", "topic_id")
_PARTITION = fastwire.group("partition")
_LEADERSHIP = fastwire.group("controller_epoch", "leader", "leader_epoch", "isr")
_EPOCH = fastwire.group("partition_epoch", cached=False)
LEADER_AND_ISR_STATE = fastwire.Layout(
    control_pb2.LeaderAndIsrPartitionState,
    [
        _TOPIC,
        _PARTITION,
        _LEADERSHIP,
        _EPOCH,
        fastwire.group(
            "replicas", "adding_replicas", "removing_replicas", "is_new", "leader_recovery_state"
        ),
    ],
    domain=LeaderAndIsrPartitionState,
    read={"leader_recovery_state": "leader_and_isr.recovering"},
    convert={"leader_recovery_state": recovery_state},
    open_end=True,
    entry_of=(control_pb2.LeaderAndIsrRequest, "partition_states"),
)
UPDATE_METADATA_STATE = fastwire.Layout(
    control_pb2.UpdateMetadataPartitionState,
    [_TOPIC, _PARTITION, _LEADERSHIP, _EPOCH, fastwire.group("replicas", "offline_replicas")],
    domain=UpdateMetadataPartitionState,
    open_end=True,
    entry_of=(control_pb2.UpdateMetadataRequest, "partition_states"),
)
_PARTITION_STATES = fastwire.field_key(control_pb2.UpdateMetadataRequest, "partition_states")
_STATES_NUMBER = control_pb2.UpdateMetadataRequest.DESCRIPTOR.fields_by_name[
    "partition_states"
].number


class StateEncoder:
    """LeaderAndIsr and UpdateMetadata partition states in wire form (module docstring), from
    pieces kept per value (``leasehold.fastwire``). One per process (``ENCODER``): the pieces
    are shared by every request it encodes."""

    def __init__(self) -> None:
        self._leader_and_isr = LEADER_AND_ISR_STATE.encoder()
        self._update_metadata = UPDATE_METADATA_STATE.encoder()
        # One state as an element of ``LeaderAndIsrRequest.partition_states``.
        self.leader_and_isr = self._leader_and_isr.entry
        # One state's own encoding (an ``UpdateMetadataPartitionState`` message).
        self.update_metadata = self._update_metadata.encode
        # One state as an element of ``UpdateMetadataRequest.partition_states``.
        self.update_metadata_entry = self._update_metadata.entry

    def update_metadata_body(self, states: Iterable[UpdateMetadataPartitionState]) -> bytes:
        """States as the ``partition_states`` of an UpdateMetadataRequest."""
        entry = self._update_metadata.entry
        return b"".join([entry(s) for s in states])


ENCODER = StateEncoder()


def leader_and_isr_state_bytes(s: LeaderAndIsrPartitionState) -> bytes:
    """One partition state, encoded as a LeaderAndIsrRequest holding only it: appended to any
    broker's header it is that request's next partition state."""
    return ENCODER.leader_and_isr(s)


def encoded_leader_and_isr(
    req: BrokerRequests, encode_state: Callable[[LeaderAndIsrPartitionState], bytes]
) -> EncodedRequest | None:
    """``leader_and_isr(req)`` in wire form, each partition state from ``encode_state``.

    A batch usually sends the same state of a partition to every replica's broker (a
    controlled shutdown: every moved partition to two or three brokers), so a caller that
    remembers each state's bytes encodes it once instead of once per broker.
    """
    if not req.leader_and_isr:
        return None
    before, after = around_states(_leader_and_isr_header(req))
    return EncodedRequest(
        (before, b"".join([encode_state(s) for s in req.leader_and_isr]), after),
        req.controller_id,
        req.controller_epoch,
        req.broker_epoch,
        len(req.leader_and_isr),
        control_pb2.LeaderAndIsrRequest,
    )


def stop_replica(req: BrokerRequests) -> control_pb2.StopReplicaRequest | None:
    if not req.stop_replica:
        return None
    return control_pb2.StopReplicaRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=s.tp.topic,
                partition=s.tp.partition,
                leader_epoch=s.leader_epoch,
                delete_partition=s.delete,
            )
            for s in req.stop_replica
        ],
    )


def _update_metadata_fields(s: UpdateMetadataPartitionState) -> dict:
    """An UpdateMetadataPartitionState's fields, for a request's entry or a lone message."""
    return {
        "topic": s.tp.topic,
        "topic_id": s.topic_id,
        "partition": s.tp.partition,
        "controller_epoch": s.controller_epoch,
        "leader": s.leader,
        "leader_epoch": s.leader_epoch,
        "isr": s.isr,
        "partition_epoch": s.partition_epoch,
        "replicas": s.replicas,
        "offline_replicas": s.offline_replicas,
    }


def _add_update_metadata_state(
    pb: control_pb2.UpdateMetadataRequest, s: UpdateMetadataPartitionState
) -> None:
    pb.partition_states.add(**_update_metadata_fields(s))


def _update_metadata_header(
    req: BrokerRequests,
    controller_host: str,
    controller_port: int,
    live: LiveBrokers | None = None,
    *,
    with_brokers: bool = True,
) -> control_pb2.UpdateMetadataRequest:
    """The request's fields but its partition states; the live brokers whole unless ``live``
    says otherwise (left out with ``with_brokers`` False: ``live_brokers_field`` adds them
    encoded)."""
    if live is None:
        live = whole(req.live_brokers)
    header = control_pb2.UpdateMetadataRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        controller_host=controller_host,
        controller_port=controller_port,
    )
    if with_brokers:
        header.live_brokers.extend(endpoint(b) for b in live.brokers)
    if live.base is not None:
        header.live_brokers_base = live.base
        header.removed_brokers.extend(live.removed)
    return header


# The ``live_brokers`` field of the last few broker lists encoded, by the list's identity: a
# batch gives every broker the same tuple, and a broker's first UpdateMetadata lists them all
# (a thousand brokers registering: a million endpoints to encode, once per list instead).
_LIVE_FIELDS: dict[int, tuple[tuple[BrokerInfo, ...], bytes]] = {}
_LIVE_FIELDS_MAX = 8
_LIVE_BROKERS = fastwire.field_key(control_pb2.UpdateMetadataRequest, "live_brokers")


def live_brokers_field(brokers: tuple[BrokerInfo, ...]) -> bytes:
    """``brokers`` as an UpdateMetadataRequest's encoded ``live_brokers`` field."""
    found = _LIVE_FIELDS.get(id(brokers))
    if found is not None and found[0] is brokers:
        return found[1]
    encoded = b"".join(
        [fastwire.length_delimited(_LIVE_BROKERS, endpoint_bytes(b)[0]) for b in brokers]
    )
    if len(_LIVE_FIELDS) >= _LIVE_FIELDS_MAX:
        del _LIVE_FIELDS[next(iter(_LIVE_FIELDS))]
    _LIVE_FIELDS[id(brokers)] = (brokers, encoded)
    return encoded


def update_metadata(
    req: BrokerRequests, controller_host: str, controller_port: int
) -> control_pb2.UpdateMetadataRequest | None:
    if req.update_metadata is None:
        return None
    pb = _update_metadata_header(req, controller_host, controller_port)
    for s in req.update_metadata:
        _add_update_metadata_state(pb, s)
    return pb


def update_metadata_state_bytes(s: UpdateMetadataPartitionState) -> bytes:
    """One partition state's own encoding (``UpdateMetadataPartitionState``): what the
    metadata digest hashes (``leasehold.metadata_digest``)."""
    return ENCODER.update_metadata(s)


def update_metadata_entry(state_bytes: bytes) -> bytes:
    """``state_bytes`` as one element of a request's ``partition_states``: key, length, bytes
    (what ``update_metadata_body`` of that one state is)."""
    return fastwire.length_delimited(_PARTITION_STATES, state_bytes)


def update_metadata_entries(states: Iterable[UpdateMetadataPartitionState]) -> list[bytes]:
    """Each state as an element of a request's ``partition_states`` (``update_metadata_body``
    is their join; ``update_metadata_entry`` of each state's bytes is each)."""
    entry = ENCODER.update_metadata_entry
    return [entry(s) for s in states]


def update_metadata_body(states: Iterable[UpdateMetadataPartitionState]) -> bytes:
    """The encoded partition states of an UpdateMetadata, to follow any broker's header."""
    return ENCODER.update_metadata_body(states)


def encoded_update_metadata(
    req: BrokerRequests,
    controller_host: str,
    controller_port: int,
    body: bytes,
    partition_count: int,
    live: LiveBrokers | None = None,
) -> EncodedRequest:
    """``update_metadata(req, ...)`` in wire form, its partition states given as ``body``; the
    live brokers whole unless ``live`` says otherwise. The live brokers (field 5, right after
    the partition states) are encoded once per list (``live_brokers_field``)."""
    if live is None:
        live = whole(req.live_brokers)
    header = _update_metadata_header(
        req, controller_host, controller_port, live, with_brokers=False
    )
    before, after = around_states(header)
    return EncodedRequest(
        (before, body, live_brokers_field(live.brokers), after),
        req.controller_id,
        req.controller_epoch,
        req.broker_epoch,
        partition_count,
    )


class LazyRequest:
    """A request encoded only when its channel sends it (``build`` is called then, each time):
    a failover sending every partition in full to a thousand brokers would otherwise hold a
    thousand copies of the cluster's states in memory at once."""

    __slots__ = ("build", "partition_count", "controller_id", "controller_epoch", "broker_epoch")

    def __init__(
        self, build: Callable[[], EncodedRequest], partition_count: int, header: BrokerRequests
    ) -> None:
        self.build = build
        self.partition_count = partition_count
        self.controller_id = header.controller_id
        self.controller_epoch = header.controller_epoch
        self.broker_epoch = header.broker_epoch


class DigestFirst:
    """An UpdateMetadata to send in a short form first and in ``full`` only if the broker
    answers METADATA_DIGEST_MISMATCH: the channel sends the two back to back, before anything
    queued after them. The short form is a failover's digest-only request (``metadata_digest``,
    no partition states) or any request naming the live brokers as a change
    (``live_brokers_base``); the full one names every partition or every broker.

    ``full`` may be given as a function that builds it: it is built only if it is needed (at a
    million partitions a failover's full request is tens of megabytes per broker), and it may
    be several requests (``pages``), sent in order.

    ``settled`` is set once the broker has accepted the short form (``in_full`` False) or the
    full request has been handed to gRPC (``in_full`` True), so a caller about to keep the event
    loop busy can first make sure the broker will learn the epoch either way."""

    def __init__(
        self,
        digest_only: EncodedRequest,
        full: (
            EncodedRequest
            | Sequence[EncodedRequest]
            | Callable[[], EncodedRequest | Sequence[EncodedRequest]]
        ),
        *,
        partition_count: int | None = None,
    ) -> None:
        self.digest_only = digest_only
        self._build: Callable[[], EncodedRequest | Sequence[EncodedRequest]] | None = None
        self._pages: tuple[EncodedRequest, ...] | None = None
        if isinstance(full, EncodedRequest):
            self._pages = (full,)
        elif callable(full):
            self._build = full
        else:
            self._pages = tuple(full)
        if partition_count is None:
            assert self._pages is not None, "partition_count is needed with a builder"
            partition_count = sum(p.partition_count for p in self._pages)
        self.partition_count = partition_count  # of the full request, all pages
        self.settled = asyncio.Event()
        self.in_full: bool | None = None  # None until the broker answers the short form
        self._on_answer: list[Callable[[bool], None]] = []

    def when_answered(self, callback: Callable[[bool], None]) -> None:
        """``callback(in_full)`` once the broker answers the short form (``answered``)."""
        self._on_answer.append(callback)

    def answered(self, in_full: bool) -> None:
        """The broker answered the short form: with a mismatch (``in_full``) or taking it."""
        self.in_full = in_full
        callbacks, self._on_answer = self._on_answer, []
        for callback in callbacks:
            callback(in_full)

    @property
    def pages(self) -> tuple[EncodedRequest, ...]:
        """The full request, as the requests it is sent in (built now if it was not)."""
        if self._pages is None:
            assert self._build is not None
            built = self._build()
            self._pages = (built,) if isinstance(built, EncodedRequest) else tuple(built)
            self._build = None
        return self._pages

    @property
    def full(self) -> EncodedRequest:
        """The full request's last (usually only) page."""
        return self.pages[-1]

    @property
    def controller_epoch(self) -> int:
        return self.digest_only.controller_epoch

    @property
    def broker_epoch(self) -> int:
        return self.digest_only.broker_epoch


def digest_update_metadata(
    req: BrokerRequests, controller_host: str, controller_port: int, digest: bytes
) -> EncodedRequest:
    """``update_metadata(req, ...)`` with no partition states, only the digest of those the
    broker should already cache (``leasehold.metadata_digest``), and the live brokers as the
    digest of the set it should already hold."""
    live = LiveBrokers(live_digest(req.live_brokers), ())
    header = _update_metadata_header(req, controller_host, controller_port, live)
    header.metadata_digest = digest
    return EncodedRequest(
        (header.SerializeToString(),),
        req.controller_id,
        req.controller_epoch,
        req.broker_epoch,
        0,
    )


def deleted_topics_update(
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    live_brokers: Iterable[BrokerInfo],
    topics: Iterable[str],
    controller_host: str,
    controller_port: int,
) -> control_pb2.UpdateMetadataRequest:
    """UpdateMetadata telling a broker that ``topics`` are gone (after a completed deletion)."""
    return control_pb2.UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_brokers=[endpoint(b) for b in live_brokers],
        deleted_topics=sorted(topics),
        controller_host=controller_host,
        controller_port=controller_port,
    )
