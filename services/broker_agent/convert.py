"""Protobuf <-> domain conversions for the broker agent's data plane (records, fetch answers,
Metadata answers); the control requests' are in ``control_convert``.

Kept apart from the servicers so each mapping is one small function that tests can call, and
so the domain layers never see a protobuf message.
"""

from __future__ import annotations

from leasehold.broker.v1 import broker_pb2
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from services.broker_agent.control_convert import endpoint_pb
from services.broker_agent.leader.fetch import FetchResult
from services.broker_agent.log import DecodedRecord, Record
from services.broker_agent.metadata_cache import MetadataView, TopicView
from services.broker_agent.metadata_wire import TopicEncoder
from services.broker_agent.model import (
    Code,
    TopicPartition,
)
from services.broker_agent.partition import NO_PRODUCER
from services.broker_agent.produce import ProduceEntry

MAX_PRODUCER_EPOCH = 2**15 - 1  # an int16 in the batch header

# --------------------------------------------------------------------------- records


def record_from_pb(record: broker_pb2.Record) -> Record:
    return Record(
        value=record.value if record.HasField("value") else None,
        key=record.key if record.HasField("key") else None,
        headers=tuple((h.key, h.value) for h in record.headers),
        timestamp_ms=record.timestamp_ms,
    )


def produce_entry_from_pb(topic: str, data: broker_pb2.PartitionProduceData) -> ProduceEntry:
    """One partition's produce data; INVALID_ARGUMENT (InvalidRequestError, naming the field)
    when its fields contradict each other (both a batch and records, half a producer triple)."""
    tp = TopicPartition(topic, data.partition)
    fields = ("producer_id", "producer_epoch", "base_sequence")
    present = [data.HasField(f) for f in fields]
    epoch = data.current_leader_epoch if data.HasField("current_leader_epoch") else -1
    if any(present) and not all(present):
        missing = next(f for f, here in zip(fields, present, strict=True) if not here)
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            f"{tp.topic}-{tp.partition}: producer_id, producer_epoch and base_sequence go together",
            field=f"topics.partitions.{missing}",
        )
    if data.record_batch:
        if data.records or any(present):
            raise InvalidRequestError(
                Code.INVALID_REQUEST,
                f"{tp.topic}-{tp.partition}: record_batch excludes records and producer fields",
                field="topics.partitions.record_batch",
            )
        return ProduceEntry(tp, (), epoch, batch=data.record_batch)
    producer = NO_PRODUCER
    if all(present):
        producer = (data.producer_id, data.producer_epoch, data.base_sequence)
        if producer[0] < 0 or not 0 <= producer[1] <= MAX_PRODUCER_EPOCH or producer[2] < 0:
            raise InvalidRequestError(
                Code.INVALID_REQUEST,
                f"{tp.topic}-{tp.partition}: producer id, epoch and base sequence must be >= 0 "
                f"(epoch <= {MAX_PRODUCER_EPOCH})",
                field="topics.partitions.producer_id",
            )
    records = [record_from_pb(r) for r in data.records]
    return ProduceEntry(tp, records, epoch, producer=producer)


def record_pb(record: DecodedRecord) -> broker_pb2.Record:
    out = broker_pb2.Record(offset=record.offset, timestamp_ms=record.timestamp_ms)
    if record.key is not None:
        out.key = record.key
    if record.value is not None:
        out.value = record.value
    out.headers.extend(broker_pb2.RecordHeader(key=k, value=v) for k, v in record.headers)
    return out


# ------------------------------------------------------------------------- endpoints


def leader_pb(leader: tuple[int, int]) -> common_pb2.LeaderIdAndEpoch:
    return common_pb2.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])


def fetch_partition_pb(result: FetchResult) -> broker_pb2.FetchPartitionResponse:
    return fill_fetch_partition(broker_pb2.FetchPartitionResponse(), result)


def fill_fetch_partition(
    out: broker_pb2.FetchPartitionResponse, result: FetchResult
) -> broker_pb2.FetchPartitionResponse:
    """``result``'s fields but the records, set on ``out`` (a message inside a response)."""
    out.partition = result.tp.partition
    out.error_code = int(result.error)
    out.high_watermark = result.high_watermark
    out.log_start_offset = result.log_start_offset
    out.log_end_offset = result.log_end_offset
    if result.message:
        out.error_message = result.message
    if result.diverging_epoch is not None:
        out.diverging_epoch.CopyFrom(
            broker_pb2.EpochEndOffset(
                epoch=result.diverging_epoch.epoch, end_offset=result.diverging_epoch.end_offset
            )
        )
    if result.current_leader is not None:
        out.current_leader.CopyFrom(leader_pb(result.current_leader))
    return out


_TOPIC_ENCODER = TopicEncoder()


def metadata_topic_pb(
    t: TopicView, encoder: TopicEncoder = _TOPIC_ENCODER
) -> broker_pb2.MetadataTopic:
    """``t`` as a ``MetadataTopic`` (encoded directly: ``metadata_wire``)."""
    return encoder.topic(t.name, int(t.error), t.topic_id, t.partitions)


class MetadataTopicPbCache:
    """Each known topic's protobuf answer, rebuilt only when the metadata cache hands out a
    new ``TopicView`` for it (it keeps one view per topic until an update touches the topic).

    Building 10,000 partition messages per Metadata call is tens of milliseconds of the event
    loop even encoded from pieces (``metadata_wire``); copying built ones into the response is
    done in C. Entries of topics no longer asked about are dropped once the
    cache holds twice as many as the last answer named (bounded by the cluster's topics).
    """

    def __init__(self) -> None:
        self._built: dict[str, tuple[TopicView, broker_pb2.MetadataTopic]] = {}
        self._encoder = TopicEncoder()

    def topic_pb(self, t: TopicView) -> broker_pb2.MetadataTopic:
        entry = self._built.get(t.name)
        if entry is not None and entry[0] is t:
            return entry[1]
        pb = metadata_topic_pb(t, self._encoder)
        if t.error == Code.NONE:
            self._built[t.name] = (t, pb)
        return pb

    def response(self, view: MetadataView, cluster_id: str) -> broker_pb2.MetadataResponse:
        topics = [self.topic_pb(t) for t in view.topics]
        if len(self._built) > 2 * len(view.topics) + 64:
            self._built = {t.name: e for t in view.topics if (e := self._built.get(t.name))}
        return metadata_pb(view, cluster_id, topics)


def metadata_pb(
    view: MetadataView,
    cluster_id: str,
    topics: list[broker_pb2.MetadataTopic] | None = None,
) -> broker_pb2.MetadataResponse:
    """The answer for ``view``; ``topics``: its topics already built (MetadataTopicPbCache)."""
    return broker_pb2.MetadataResponse(
        brokers=[endpoint_pb(b) for b in view.brokers],
        cluster_id=cluster_id,
        controller_id=view.controller_id,
        controller_epoch=view.controller_epoch,
        topics=topics if topics is not None else [metadata_topic_pb(t) for t in view.topics],
    )
