"""The core's per-broker ``BrokerRequests`` as BrokerControlService protobuf messages (seed 001).

Pure translation. Each request is stamped with the controller id and epoch and the target's
broker epoch (contract 7); UpdateMetadata also names the controller's endpoint so brokers can
find it (contract 8).

LeaderAndIsr and UpdateMetadata are also produced already encoded (``EncodedRequest``): a
LeaderAndIsr partition state usually goes to several brokers and is encoded once for all
(``encoded_leader_and_isr``); UpdateMetadata, because its partition
states are the same for every broker and, on a failover, for every partition of the cluster: the
states are encoded once (``update_metadata_body``, or kept per partition by ``metadata_cache``)
and each broker's request is its own small header followed by those bytes. Protobuf parses
concatenated encodings as one message (repeated fields append), so the broker sees an ordinary
``UpdateMetadataRequest``.

The partition states themselves are put together by hand (``StateEncoder``, from pieces kept
per value: ``leasehold.protowire``), not through the generated classes: a broker failure at
10,000 partitions encodes 10,000 of each kind between its commit and its first requests, and
one generated message per state cost ~5 us of it. ``tests/unit/controller_service/
test_ctlsvc_state_wire.py`` checks the bytes against the generated encoder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from google.protobuf.message import Message

from leasehold import protowire
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.controller.codec import RECOVERED, RECOVERING
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    LeaderAndIsrPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)


@dataclass(frozen=True, eq=False)
class EncodedRequest:
    """A control request already in wire form, with the fields spans and logs read."""

    payload: bytes
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_count: int
    message: type[Message] = control_pb2.UpdateMetadataRequest

    def decode(self) -> Message:
        return self.message.FromString(self.payload)


def endpoint(info: BrokerInfo) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(
        broker_id=info.id, host=info.host, port=info.port, rack=info.rack
    )


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


# Keys (``protowire.tag``) of the partition-state fields. Both state messages number topic,
# topic id, partition, controller epoch, leader, leader epoch, ISR, partition epoch and replicas
# 1-9 alike; then LeaderAndIsr has adding (10), removing (11), is_new (12) and the recovery
# state (13), UpdateMetadata the offline replicas (10).
_V, _L = protowire.VARINT, protowire.LEN
_TOPIC, _TOPIC_ID = protowire.tag(1, _L), protowire.tag(2, _L)
_PARTITION, _CONTROLLER_EPOCH = protowire.tag(3, _V), protowire.tag(4, _V)
_LEADER, _LEADER_EPOCH = protowire.tag(5, _V), protowire.tag(6, _V)
_ISR, _PARTITION_EPOCH, _REPLICAS = protowire.tag(7, _L), protowire.tag(8, _V), protowire.tag(9, _L)
_ADDING, _REMOVING = protowire.tag(10, _L), protowire.tag(11, _L)
_IS_NEW, _RECOVERY = protowire.tag(12, _V) + b"\x01", protowire.tag(13, _V)
_OFFLINE = protowire.tag(10, _L)
# ``partition_states`` is field 4 of both requests.
_PARTITION_STATES = protowire.tag(4, _L)


class StateEncoder:
    """LeaderAndIsr and UpdateMetadata partition states in wire form (module docstring). One
    per process (``ENCODER``): the pieces are shared by every request it encodes.

    A state is a few pieces kept per value, joined: the topic and its id; the partition
    number; controller epoch, leader, leader epoch and ISR together (partitions moved by one
    event mostly share them); the partition epoch (the etcd revision: a new value every time,
    so encoded afresh); the replica lists and flags together. Each kind of piece is kept in a
    dict of its own, bounded by ``protowire.MAX_PIECES`` (cleared when full)."""

    def __init__(self) -> None:
        # Per kind of piece, by the values it encodes; each bounded (``protowire.MAX_PIECES``).
        self._topics: dict[tuple[str, str], bytes] = {}
        self._partitions: dict[int, bytes] = {}
        self._leaderships: dict[tuple[int, int, int, tuple[int, ...]], bytes] = {}
        self._assignments: dict[tuple, bytes] = {}  # LeaderAndIsr: replica lists and flags
        self._replica_lists: dict[tuple, bytes] = {}  # UpdateMetadata: replicas and offline

    def _common(self, tp: TopicPartition, topic_id: str) -> bytes:
        """Topic, topic id and partition number."""
        key = (tp.topic, topic_id)
        topic = self._topics.get(key)
        if topic is None:
            encoded = protowire.string(_TOPIC, tp.topic) + protowire.string(_TOPIC_ID, topic_id)
            topic = protowire.keep(self._topics, key, encoded)
        partition = self._partitions.get(tp.partition)
        if partition is None:
            encoded = protowire.scalar(_PARTITION, tp.partition)
            partition = protowire.keep(self._partitions, tp.partition, encoded)
        return topic + partition

    def _leadership(
        self, epoch: int, leader: int, leader_epoch: int, isr: tuple[int, ...]
    ) -> bytes:
        key = (epoch, leader, leader_epoch, isr)
        piece = self._leaderships.get(key)
        if piece is None:
            encoded = (
                protowire.scalar(_CONTROLLER_EPOCH, epoch)
                + protowire.scalar(_LEADER, leader)
                + protowire.scalar(_LEADER_EPOCH, leader_epoch)
                + protowire.packed(_ISR, isr)
            )
            piece = protowire.keep(self._leaderships, key, encoded)
        return piece

    def _assignment(
        self,
        replicas: tuple[int, ...],
        adding: tuple[int, ...],
        removing: tuple[int, ...],
        is_new: bool,
        recovering: bool,
    ) -> bytes:
        key = (replicas, adding, removing, is_new, recovering)
        piece = self._assignments.get(key)
        if piece is None:
            encoded = (
                protowire.packed(_REPLICAS, replicas)
                + protowire.packed(_ADDING, adding)
                + protowire.packed(_REMOVING, removing)
                + (_IS_NEW if is_new else b"")
                + protowire.scalar(_RECOVERY, RECOVERING if recovering else RECOVERED)
            )
            piece = protowire.keep(self._assignments, key, encoded)
        return piece

    def _replicas(self, replicas: tuple[int, ...], offline: tuple[int, ...]) -> bytes:
        key = (replicas, offline)
        piece = self._replica_lists.get(key)
        if piece is None:
            encoded = protowire.packed(_REPLICAS, replicas) + protowire.packed(_OFFLINE, offline)
            piece = protowire.keep(self._replica_lists, key, encoded)
        return piece

    def leader_and_isr(self, s: LeaderAndIsrPartitionState) -> bytes:
        """One state as an element of ``LeaderAndIsrRequest.partition_states``."""
        lai = s.leader_and_isr
        epoch = lai.partition_epoch
        body = b"".join(
            (
                self._common(s.tp, s.topic_id),
                self._leadership(lai.controller_epoch, lai.leader, lai.leader_epoch, lai.isr),
                protowire.scalar(_PARTITION_EPOCH, epoch),
                self._assignment(
                    s.replicas, s.adding_replicas, s.removing_replicas, s.is_new, lai.recovering
                ),
            )
        )
        return protowire.length_delimited(_PARTITION_STATES, body)

    def update_metadata(self, s: UpdateMetadataPartitionState) -> bytes:
        """One state's own encoding (an ``UpdateMetadataPartitionState`` message)."""
        epoch = s.partition_epoch
        return b"".join(
            (
                self._common(s.tp, s.topic_id),
                self._leadership(s.controller_epoch, s.leader, s.leader_epoch, s.isr),
                protowire.scalar(_PARTITION_EPOCH, epoch),
                self._replicas(s.replicas, s.offline_replicas),
            )
        )

    def update_metadata_body(self, states: Iterable[UpdateMetadataPartitionState]) -> bytes:
        """States as the ``partition_states`` of an UpdateMetadataRequest."""
        entry, state = protowire.length_delimited, self.update_metadata
        return b"".join([entry(_PARTITION_STATES, state(s)) for s in states])


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
    header = _leader_and_isr_header(req).SerializeToString()
    return EncodedRequest(
        header + b"".join([encode_state(s) for s in req.leader_and_isr]),
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
    req: BrokerRequests, controller_host: str, controller_port: int
) -> control_pb2.UpdateMetadataRequest:
    return control_pb2.UpdateMetadataRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        live_brokers=[endpoint(b) for b in req.live_brokers],
        controller_host=controller_host,
        controller_port=controller_port,
    )


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
    return protowire.length_delimited(_PARTITION_STATES, state_bytes)


def update_metadata_body(states: Iterable[UpdateMetadataPartitionState]) -> bytes:
    """The encoded partition states of an UpdateMetadata, to follow any broker's header."""
    return ENCODER.update_metadata_body(states)


def encoded_update_metadata(
    req: BrokerRequests,
    controller_host: str,
    controller_port: int,
    body: bytes,
    partition_count: int,
) -> EncodedRequest:
    """``update_metadata(req, ...)`` in wire form, its partition states given as ``body``."""
    header = _update_metadata_header(req, controller_host, controller_port)
    return EncodedRequest(
        header.SerializeToString() + body,
        req.controller_id,
        req.controller_epoch,
        req.broker_epoch,
        partition_count,
    )


@dataclass(eq=False)
class DigestFirst:
    """An UpdateMetadata to send digest-only first (``metadata_digest``, no partition states)
    and in ``full`` only if the broker answers METADATA_DIGEST_MISMATCH: the channel sends the
    two back to back, before anything queued after them.

    ``settled`` is set once the broker has accepted the digest (``in_full`` False) or the full
    request has been handed to gRPC (``in_full`` True), so a caller about to keep the event
    loop busy can first make sure the broker will learn the epoch either way."""

    digest_only: EncodedRequest
    full: EncodedRequest
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    in_full: bool | None = None

    @property
    def controller_epoch(self) -> int:
        return self.full.controller_epoch

    @property
    def broker_epoch(self) -> int:
        return self.full.broker_epoch


def digest_update_metadata(
    req: BrokerRequests, controller_host: str, controller_port: int, digest: bytes
) -> EncodedRequest:
    """``update_metadata(req, ...)`` with no partition states, only the digest of those the
    broker should already cache (``leasehold.metadata_digest``)."""
    header = _update_metadata_header(req, controller_host, controller_port)
    header.metadata_digest = digest
    return EncodedRequest(
        header.SerializeToString(), req.controller_id, req.controller_epoch, req.broker_epoch, 0
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
