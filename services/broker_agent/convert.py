"""Protobuf <-> domain conversions for the broker agent's two services.

Kept apart from the servicers so each mapping is one small function that tests can call, and
so the domain layers never see a protobuf message.
"""

from __future__ import annotations

from typing import Any

from leasehold import metadata_digest
from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from services.broker_agent.leader.fetch import FetchResult
from services.broker_agent.log import DecodedRecord, Record
from services.broker_agent.metadata_cache import MetadataView, TopicView
from services.broker_agent.metadata_wire import TopicEncoder
from services.broker_agent.model import (
    Code,
    ControlResult,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    MetadataPartition,
    StopReplica,
    StopReplicaPartition,
    TopicPartition,
    UpdateMetadata,
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


def endpoint_from_pb(endpoint: common_pb2.BrokerEndpoint) -> Endpoint:
    return Endpoint(endpoint.broker_id, endpoint.host, endpoint.port, endpoint.rack)


def endpoint_pb(endpoint: Endpoint) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(
        broker_id=endpoint.broker_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack
    )


def leader_pb(leader: tuple[int, int]) -> common_pb2.LeaderIdAndEpoch:
    return common_pb2.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])


# -------------------------------------------------------------------- control plane
# Repeated fields are copied as ``tuple(field[:])``: slicing a protobuf repeated field makes a
# list in C, which is several times faster to turn into a tuple than iterating the field, and
# a 10,000-partition request has three or more of them per partition.


def leader_and_isr_from_pb(request: control_pb2.LeaderAndIsrRequest) -> LeaderAndIsr:
    """The domain request; each partition's value is built without the dataclass's ``__init__``.

    A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``: with 13
    fields that was 40% of decoding a 10,000-partition request. So a new instance gets its
    ``__dict__`` filled at once with the values the constructor would store, then runs its own
    ``__post_init__`` (which derives ``tp``). Only while the class has exactly these fields and
    no slots: should the model change, the constructor is used until this is updated
    (``tests/unit/broker/test_convert_leader_and_isr.py`` compares the two).
    """
    cls = LeaderAndIsrPartition
    fields = ("topic", "partition", "leader", "leader_epoch", "isr", "replicas")
    fields += ("partition_epoch", "controller_epoch", "topic_id", "adding_replicas")
    fields += ("removing_replicas", "is_new", "leader_recovery_state", "tp")
    direct = tuple(cls.__dataclass_fields__) == fields and "__slots__" not in cls.__dict__
    new, fill, post_init = object.__new__, object.__setattr__, cls.__post_init__
    # Equal replica lists and ISRs are shared: they outlive the request as the partitions'
    # state, and 10,000 partitions hold a handful of distinct ones (fewer objects for the
    # garbage collector to count and walk).
    lists: dict[tuple[int, ...], tuple[int, ...]] = {}
    shared = lists.setdefault

    def partition_of(s: control_pb2.LeaderAndIsrPartitionState) -> LeaderAndIsrPartition:
        values = {
            "topic": s.topic,
            "partition": s.partition,
            "leader": s.leader,
            "leader_epoch": s.leader_epoch,
            "isr": shared(isr := tuple(s.isr[:]), isr),
            "replicas": shared(replicas := tuple(s.replicas[:]), replicas),
            "partition_epoch": s.partition_epoch,
            "controller_epoch": s.controller_epoch,
            "topic_id": s.topic_id,
            "adding_replicas": tuple(s.adding_replicas[:]) if s.adding_replicas else (),
            "removing_replicas": tuple(s.removing_replicas[:]) if s.removing_replicas else (),
            "is_new": s.is_new,
            "leader_recovery_state": s.leader_recovery_state,
        }
        if not direct:
            return cls(**values)
        state = new(cls)
        fill(state, "__dict__", values)
        post_init(state)
        return state

    return LeaderAndIsr(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=tuple([partition_of(s) for s in request.partition_states]),
        live_leaders=tuple(endpoint_from_pb(e) for e in request.live_leaders),
    )


def stop_replica_from_pb(request: control_pb2.StopReplicaRequest) -> StopReplica:
    return StopReplica(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=tuple(
            StopReplicaPartition(s.topic, s.partition, s.leader_epoch, s.delete_partition)
            for s in request.partition_states
        ),
    )


def update_metadata_from_pb(request: control_pb2.UpdateMetadataRequest) -> UpdateMetadata:
    """The request as the domain sees it, with each partition state's digest hash taken from
    the encoding it arrived in (protobuf re-serialises a parsed message as the controller
    serialised it)."""
    state_hash = metadata_digest.state_hash
    # Built positionally, in the named tuple's field order (the keyword constructor cost as much
    # as reading the fields; test_convert_update_metadata checks the order), with equal replica
    # lists shared as in ``leader_and_isr_from_pb``.
    new = tuple.__new__
    lists: dict[tuple[int, ...], tuple[int, ...]] = {(): ()}
    shared = lists.setdefault

    def partition_of(s: control_pb2.UpdateMetadataPartitionState) -> MetadataPartition:
        return new(
            MetadataPartition,
            (
                s.topic,
                s.partition,
                s.leader,
                s.leader_epoch,
                shared(isr := tuple(s.isr[:]), isr),
                shared(replicas := tuple(s.replicas[:]), replicas),
                s.partition_epoch,
                s.controller_epoch,
                s.topic_id,
                shared(offline := tuple(s.offline_replicas[:]), offline),
            ),
        )

    return UpdateMetadata(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=tuple([partition_of(s) for s in request.partition_states]),
        live_brokers=tuple(endpoint_from_pb(e) for e in request.live_brokers),
        deleted_topics=tuple(request.deleted_topics),
        controller_host=request.controller_host,
        controller_port=request.controller_port,
        state_hashes=tuple(state_hash(s.SerializeToString()) for s in request.partition_states),
        metadata_digest=request.metadata_digest,
    )


def control_result_fields(result: ControlResult) -> dict[str, Any]:
    """Fields shared by the LeaderAndIsr and StopReplica responses."""
    return {
        "error_code": int(result.error),
        "error_message": result.message,
        "partition_errors": [
            common_pb2.PartitionError(topic=tp.topic, partition=tp.partition, error_code=int(code))
            for tp, code in sorted(result.partition_errors)
        ],
    }


# ------------------------------------------------------------------------ data plane


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
