"""A Metadata answer's topics encoded straight to protobuf bytes, then parsed once in C.

Clients ask for Metadata right after leadership moves (their produce and fetch calls fail with
NOT_LEADER_OR_FOLLOWER and they refresh), which is exactly when the cached answers of the topics
that moved are stale. Building a 10,000-partition answer through the generated classes, one
message object per partition, costs several times more of the event loop than the views it is
built from. A topic's partitions share a handful of distinct leaders, epochs and replica lists,
so a partition is two pieces kept per value (error code and partition number; leader, epoch and
the three lists), encoded by ``leasehold.fastwire`` from the layouts below, and
``MetadataTopic.FromString`` turns the bytes into the message that the answer cache keeps and
copies into responses. ``tests/unit/broker/test_metadata_wire.py`` checks the result against the
generated classes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from leasehold import fastwire
from leasehold.broker.v1 import broker_pb2
from services.broker_agent.metadata_cache import PartitionView

PARTITION = fastwire.Layout(
    broker_pb2.MetadataPartition,
    [
        fastwire.group("error_code", "partition"),
        fastwire.group("leader", "leader_epoch", "replicas", "isr", "offline_replicas"),
    ],
    domain=PartitionView,
    read={"error_code": "error"},
    open_end=True,
    entry_of=(broker_pb2.MetadataTopic, "partitions"),
)


class _Topic(NamedTuple):
    """A topic's fields, its partitions already encoded."""

    error_code: int
    name: str
    topic_id: str
    partitions: bytes


TOPIC = fastwire.Layout(
    broker_pb2.MetadataTopic,
    [fastwire.group("error_code", "name", "topic_id", "partitions", cached=False)],
    domain=_Topic,
    open_end=True,
)


class TopicEncoder:
    """Encodes ``MetadataTopic`` messages; one per answer cache (its pieces are reused)."""

    def __init__(self) -> None:
        self._partition = PARTITION.encoder()
        self._topic = TOPIC.encoder()

    def partitions(self, views: Iterable[PartitionView]) -> bytes:
        """The repeated ``partitions`` field of a topic: each view as a ``MetadataPartition``."""
        entry = self._partition.entry
        return b"".join([entry(p) for p in views])

    def topic(
        self, name: str, error: int, topic_id: str, views: Iterable[PartitionView]
    ) -> broker_pb2.MetadataTopic:
        data = self._topic.fields(int(error), name, topic_id, self.partitions(views))
        return broker_pb2.MetadataTopic.FromString(data)
