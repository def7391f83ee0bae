"""gRPC servicer of BrokerService (clients, followers); BrokerControlService (the controller's
requests) is ``control_servicer``'s, re-exported here.

They only translate between protobuf and the domain (``convert`` holds the message mapping);
every decision is made below. Domain outcomes (stale epochs, not leader, out of range...) are
per-partition error codes, as in Kafka, and so is a partition that cannot exist (an illegal topic
name, a negative number: ``request_items``). A request that is wrong as a whole — a partition
listed twice, an acks or size field out of range, an unknown record format — fails the call with
INVALID_ARGUMENT naming the field, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry import trace

from leasehold import telemetry
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from leasehold.validation import INTERNAL_TOPICS
from services.broker_agent import control_convert, convert
from services.broker_agent.control_servicer import BrokerControlServicer
from services.broker_agent.leader.fetch import FetchHandler, FetchParams, FetchSpec, decoded
from services.broker_agent.leader.leader_offsets import OffsetResult
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    TopicPartition,
)
from services.broker_agent.produce import VALID_ACKS, ProduceEntry, ProduceHandler, ProduceResult
from services.broker_agent.producer_ids import ProducerIdManager
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.request_items import (
    NOT_GIVEN,
    given,
    in_request_order,
    internal_refusals,
    refusals,
)

__all__ = ["BrokerControlServicer", "BrokerServicer"]  # the control one lives in control_servicer


class BrokerServicer(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(
        self,
        replicas: ReplicaManager,
        produce: ProduceHandler,
        fetch: FetchHandler,
        metadata: MetadataCache,
        cluster_id: str,
        producer_ids: ProducerIdManager | None = None,
    ) -> None:
        self._replicas = replicas
        self._produce = produce
        self._producer_ids = producer_ids
        self._fetch = fetch
        self._metadata = metadata
        self._cluster_id = cluster_id
        self._topic_pbs = convert.MetadataTopicPbCache()

    async def Produce(
        self, request: broker_pb2.ProduceRequest, context
    ) -> broker_pb2.ProduceResponse:
        await self._replicas.priority.data_turn()
        acks = request.acks if request.HasField("acks") else -1
        if acks not in VALID_ACKS:
            raise InvalidRequestError(
                Code.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, got {acks}", field="acks"
            )
        refused = refusals((t.topic, p.partition) for t in request.topics for p in t.partitions)
        if any(t.topic in INTERNAL_TOPICS for t in request.topics):
            refused = internal_refusals(
                ((t.topic, p.partition) for t in request.topics for p in t.partitions), refused
            )
        entries = [
            convert.produce_entry_from_pb(t.topic, p)
            for t in request.topics
            for p in t.partitions
            if not refused or (t.topic, p.partition) not in refused
        ]
        await self._replicas.wait_for_role_changes(e.tp for e in entries)
        _describe_produce(acks, entries)
        results = await self._produce.produce(acks, request.timeout_ms, entries)
        if refused:
            order = (
                TopicPartition(t.topic, p.partition) for t in request.topics for p in t.partitions
            )
            results = in_request_order(order, {r.tp: r for r in results}, refused, ProduceResult)
        by_topic: dict[str, broker_pb2.TopicProduceResponse] = {}
        leaders: set[int] = set()
        for r in results:
            topic = by_topic.setdefault(
                r.tp.topic, broker_pb2.TopicProduceResponse(topic=r.tp.topic)
            )
            out = topic.partitions.add(
                partition=r.tp.partition,
                error_code=int(r.error),
                error_message=r.message if r.error != Code.NONE else "",
                base_offset=r.base_offset,
                log_append_time_ms=-1,
                log_start_offset=r.log_start_offset,
            )
            if r.current_leader is not None:
                out.current_leader.CopyFrom(convert.leader_pb(r.current_leader))
                leaders.add(r.current_leader[0])
        return broker_pb2.ProduceResponse(
            topics=list(by_topic.values()), node_endpoints=self._endpoints(leaders)
        )

    def _endpoints(self, broker_ids: Iterable[int]) -> list[common_pb2.BrokerEndpoint]:
        out = []
        for broker_id in sorted(broker_ids):
            endpoint = self._metadata.alive_broker(broker_id)
            if endpoint is not None:
                out.append(control_convert.endpoint_pb(endpoint))
        return out

    async def Fetch(self, request: broker_pb2.FetchRequest, context) -> broker_pb2.FetchResponse:
        await self._replicas.priority.data_turn()
        refused = refusals((t.topic, p.partition) for t in request.topics for p in t.partitions)
        for name in ("max_wait_ms", "min_bytes", "max_bytes"):
            if getattr(request, name) < 0:
                raise InvalidRequestError(Code.INVALID_REQUEST, f"{name} must be >= 0", field=name)
        replica_id = max(given(request, "replica_id"), NOT_GIVEN)
        is_follower = replica_id >= 0
        specs = [
            FetchSpec(
                TopicPartition(t.topic, p.partition),
                p.fetch_offset,
                given(p, "current_leader_epoch"),
                given(p, "last_fetched_epoch") if is_follower else NOT_GIVEN,
                given(p, "log_start_offset"),
                p.partition_max_bytes,
            )
            for t in request.topics
            for p in t.partitions
            if not refused or (t.topic, p.partition) not in refused
        ]
        params = FetchParams(
            replica_id=replica_id,
            broker_epoch=given(request, "replica_broker_epoch"),
            max_wait_ms=request.max_wait_ms,
            min_bytes=request.min_bytes,
            max_bytes=request.max_bytes,
            session_id=request.session_id,
            session_epoch=given(request, "session_epoch"),
        )
        pairs = [(t.topic, p) for t in request.forgotten_topics for p in t.partitions]
        if refusals(pairs, "forgotten_topics"):
            raise InvalidRequestError(
                Code.INVALID_REQUEST,
                "forgotten_topics names a partition that cannot exist",
                field="forgotten_topics",
            )
        forgotten = [TopicPartition(*tp) for tp in pairs]
        answer = await self._fetch.fetch_in_session(params, specs, forgotten)
        as_records = request.record_format == broker_pb2.RECORD_FORMAT_RECORDS
        # Built in place: a message appended to a repeated field is copied, records included.
        response = broker_pb2.FetchResponse(
            error_code=int(answer.error), session_id=answer.session_id
        )
        by_topic: dict[str, broker_pb2.FetchTopicResponse] = {}
        for r in answer.results:
            topic = by_topic.get(r.tp.topic)
            if topic is None:
                topic = by_topic[r.tp.topic] = response.topics.add(topic=r.tp.topic)
            out = convert.fill_fetch_partition(topic.partitions.add(), r)
            if as_records and r.records:
                out.decoded_records.extend(convert.record_pb(d) for d in decoded(r, r.fetch_offset))
            elif r.records:
                out.records = r.records
        for (name, partition), (code, text) in refused.items():
            topic = by_topic.get(name)
            if topic is None:
                topic = by_topic[name] = response.topics.add(topic=name)
            topic.partitions.add(
                partition=partition,
                error_code=int(code),
                error_message=text,
                high_watermark=-1,
                log_start_offset=-1,
                log_end_offset=-1,
            )
        return response

    async def ListOffsets(
        self, request: broker_pb2.ListOffsetsRequest, context
    ) -> broker_pb2.ListOffsetsResponse:
        await self._replicas.priority.data_turn()
        refused = refusals((t.topic, p.partition) for t in request.topics for p in t.partitions)
        asks = [
            (TopicPartition(t.topic, p.partition), given(p, "current_leader_epoch"), p.timestamp)
            for t in request.topics
            for p in t.partitions
            if (t.topic, p.partition) not in refused
        ]
        results = self._fetch.list_offsets(given(request, "replica_id"), asks)
        results += [OffsetResult(tp, code) for tp, (code, _text) in refused.items()]
        by_topic: dict[str, broker_pb2.ListOffsetsTopicResponse] = {}
        for r in results:
            topic = by_topic.setdefault(
                r.tp.topic, broker_pb2.ListOffsetsTopicResponse(topic=r.tp.topic)
            )
            topic.partitions.add(
                partition=r.tp.partition,
                error_code=int(r.error),
                timestamp=r.timestamp,
                offset=r.offset,
                leader_epoch=r.leader_epoch,
            )
        return broker_pb2.ListOffsetsResponse(topics=list(by_topic.values()))

    async def OffsetsForLeaderEpoch(
        self, request: broker_pb2.OffsetsForLeaderEpochRequest, context
    ) -> broker_pb2.OffsetsForLeaderEpochResponse:
        await self._replicas.priority.data_turn()
        refused = refusals((t.topic, p.partition) for t in request.topics for p in t.partitions)
        asks = [
            (TopicPartition(t.topic, p.partition), given(p, "current_leader_epoch"), p.leader_epoch)
            for t in request.topics
            for p in t.partitions
            if (t.topic, p.partition) not in refused
        ]
        answers = self._fetch.offsets_for_leader_epoch(asks)
        answers += [(tp, code, -1, -1) for tp, (code, _text) in refused.items()]
        by_topic: dict[str, broker_pb2.OffsetForLeaderTopicResponse] = {}
        for tp, code, epoch, end in answers:
            topic = by_topic.setdefault(
                tp.topic, broker_pb2.OffsetForLeaderTopicResponse(topic=tp.topic)
            )
            topic.partitions.add(
                partition=tp.partition, error_code=int(code), leader_epoch=epoch, end_offset=end
            )
        return broker_pb2.OffsetsForLeaderEpochResponse(topics=list(by_topic.values()))

    async def Metadata(
        self, request: broker_pb2.MetadataRequest, context
    ) -> broker_pb2.MetadataResponse:
        await self._replicas.priority.data_turn()
        if any(not name for name in request.topics):
            raise InvalidRequestError(
                Code.INVALID_REQUEST, "topic name must not be empty", field="topics"
            )
        # Kafka's rule: all topics only when asked for; an empty list asks for none.
        wanted = None if request.all_topics else list(request.topics)
        view = self._metadata.describe(wanted)
        return self._topic_pbs.response(view, self._cluster_id)

    async def InitProducerId(
        self, request: broker_pb2.InitProducerIdRequest, context
    ) -> broker_pb2.InitProducerIdResponse:
        if self._producer_ids is None:
            return broker_pb2.InitProducerIdResponse(
                error_code=Code.BROKER_NOT_AVAILABLE,
                error_message="this broker does not hand out producer ids",
                producer_id=-1,
            )
        producer_id, epoch = await self._producer_ids.next()
        return broker_pb2.InitProducerIdResponse(producer_id=producer_id, producer_epoch=epoch)


def _describe_produce(acks: int, entries: Sequence[ProduceEntry]) -> None:
    """Topic, partition and acks on the Produce server span (when traced)."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    topics = sorted({e.tp.topic for e in entries})
    parts = {e.tp.partition for e in entries}
    span.set_attributes(
        telemetry.attrs(
            topic=",".join(topics),
            partition=next(iter(parts)) if len(parts) == 1 else None,
            partition_count=len(entries),
            acks=acks,
        )
    )
