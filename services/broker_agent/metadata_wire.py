"""A Metadata answer's topics encoded straight to protobuf bytes, then parsed once in C.

Clients ask for Metadata right after leadership moves (their produce and fetch calls fail with
NOT_LEADER_OR_FOLLOWER and they refresh), which is exactly when the cached answers of the topics
that moved are stale. Building a 10,000-partition answer through the generated classes, one
message object per partition, cost ~45 ms of the event loop on top of the views it was built
from. A partition's message is four small varints and three packed lists, and a topic's
partitions share a handful of distinct replica lists, so the bytes are put together here from
pieces kept per value (error code and partition number; leader, epoch and the three lists
together: ~9 ms per 10,000 partitions), and ``MetadataTopic.FromString`` turns them into the
message that the answer cache keeps and copies into responses.
``tests/unit/broker/test_metadata_wire.py`` checks the result against the generated encoder.

Only the fields of ``leasehold.broker.v1.MetadataTopic`` / ``MetadataPartition`` are written;
a field added to either message must be added here (the test compares every field).
"""

from __future__ import annotations

from collections.abc import Iterable

from leasehold import protowire
from leasehold.broker.v1 import broker_pb2
from services.broker_agent.metadata_cache import PartitionView

# Wire tags (field number << 3 | wire type): varint 0, length-delimited 2. ``error_code`` is
# field 1 of both messages.
_TOPIC_NAME, _TOPIC_ID, _TOPIC_PARTITION = b"\x12", b"\x1a", b"\x22"
_ERROR, _PARTITION, _LEADER, _EPOCH = 0x08, 0x10, 0x18, 0x20
_REPLICAS, _ISR, _OFFLINE = b"\x2a", b"\x32", b"\x3a"

# Pieces kept between answers are bounded (``protowire.MAX_PIECES``; cleared when full), as
# values are few in practice: partition numbers, leader ids, epochs, distinct replica lists.
varint = protowire.varint
_packed, _string = protowire.packed, protowire.string


class TopicEncoder:
    """Encodes ``MetadataTopic`` messages; one per answer cache (its pieces are reused)."""

    def __init__(self) -> None:
        self._fields: dict[tuple[int, int], bytes] = {}
        self._heads: dict[tuple[int, int], bytes] = {}  # error code and partition number
        self._lists: dict[tuple, bytes] = {}
        self._lengths = protowire.SMALL

    def _field(self, tag: int, value: int) -> bytes:
        """A varint field; proto3 leaves a zero out."""
        key = (tag, value)
        piece = self._fields.get(key)
        if piece is None:
            encoded = bytes((tag,)) + varint(int(value)) if value else b""
            piece = protowire.keep(self._fields, key, encoded)
        return piece

    def _rest(
        self,
        leader: int,
        leader_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        offline: tuple[int, ...],
    ) -> bytes:
        """Leader, leader epoch and the three lists: after a failure most of a topic's
        partitions share them, so they are one piece."""
        key = (leader, leader_epoch, replicas, isr, offline)
        piece = self._lists.get(key)
        if piece is None:
            encoded = (
                self._field(_LEADER, leader)
                + self._field(_EPOCH, leader_epoch)
                + _packed(_REPLICAS, replicas)
                + _packed(_ISR, isr)
                + _packed(_OFFLINE, offline)
            )
            piece = protowire.keep(self._lists, key, encoded)
        return piece

    def partitions(self, views: Iterable[PartitionView]) -> bytes:
        """The repeated ``partitions`` field of a topic: each view as a ``MetadataPartition``."""
        field, rest, lengths, heads = self._field, self._rest, self._lengths, self._heads
        out: list[bytes] = []
        for p in views:
            key = (p.error, p.partition)
            head = heads.get(key)
            if head is None:
                head = protowire.keep(
                    heads, key, field(_ERROR, p.error) + field(_PARTITION, p.partition)
                )
            body = head + rest(p.leader, p.leader_epoch, p.replicas, p.isr, p.offline_replicas)
            size = len(body)
            out.append(_TOPIC_PARTITION)
            out.append(lengths[size] if size < 128 else varint(size))
            out.append(body)
        return b"".join(out)

    def topic(
        self, name: str, error: int, topic_id: str, views: Iterable[PartitionView]
    ) -> broker_pb2.MetadataTopic:
        data = b"".join(
            (
                self._field(_ERROR, error),
                _string(_TOPIC_NAME, name),
                _string(_TOPIC_ID, topic_id),
                self.partitions(views),
            )
        )
        return broker_pb2.MetadataTopic.FromString(data)
