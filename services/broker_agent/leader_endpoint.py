"""A follower's client for one leader broker: Fetch, OffsetsForLeaderEpoch, ListOffsets.

The fetcher speaks in domain values (``FetchSpec`` in, ``FetchedPartition`` out) so its state
machine is tested without gRPC; this module is the only place that builds those protobufs. Any
transport failure becomes ``LeaderUnreachableError``, which the fetcher answers with a backoff
for every partition of the request, as Kafka's fetcher does on a failed send.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.channels import channel
from leasehold.config import TlsConfig
from services.broker_agent.fetch_state import EpochEndOffset
from services.broker_agent.model import Code, Endpoint, TopicPartition


class LeaderUnreachableError(Exception):
    """The leader could not be asked (connection refused, timeout, shutting down)."""


@dataclass(frozen=True)
class FetchSpec:
    tp: TopicPartition
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    max_bytes: int


@dataclass(frozen=True)
class FetchedPartition:
    error: Code
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes = b""
    diverging_epoch: EpochEndOffset | None = None


@dataclass(frozen=True)
class EpochAnswer:
    error: Code
    epoch_end: EpochEndOffset


class LeaderEndpoint:
    def __init__(
        self,
        leader: Endpoint,
        local_broker_id: int,
        broker_epoch: Callable[[], int],
        tls: TlsConfig | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.leader = leader
        self._local_broker_id = local_broker_id
        self._broker_epoch = broker_epoch
        self._timeout = timeout_s
        self._channel = channel(leader.address, tls)
        self._stub = broker_pb2_grpc.BrokerServiceStub(self._channel)

    async def _call(self, method: str, request, extra_timeout: float = 0.0):
        try:
            return await getattr(self._stub, method)(request, timeout=self._timeout + extra_timeout)
        except grpc.aio.AioRpcError as exc:
            raise LeaderUnreachableError(
                f"{method} to broker {self.leader.broker_id} at {self.leader.address} failed: "
                f"{exc.code().name} {exc.details()}"
            ) from exc

    async def fetch(
        self,
        specs: Sequence[FetchSpec],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
    ) -> dict[TopicPartition, FetchedPartition]:
        by_topic: dict[str, list[broker_pb2.FetchPartition]] = {}
        for spec in specs:
            by_topic.setdefault(spec.tp.topic, []).append(
                broker_pb2.FetchPartition(
                    partition=spec.tp.partition,
                    current_leader_epoch=spec.current_leader_epoch,
                    fetch_offset=spec.fetch_offset,
                    last_fetched_epoch=spec.last_fetched_epoch,
                    log_start_offset=spec.log_start_offset,
                    partition_max_bytes=spec.max_bytes,
                )
            )
        request = broker_pb2.FetchRequest(
            replica_id=self._local_broker_id,
            replica_broker_epoch=self._broker_epoch(),
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            record_format=broker_pb2.RECORD_FORMAT_BATCHES,
        )
        response = await self._call("Fetch", request, extra_timeout=max_wait_ms / 1000.0)
        out: dict[TopicPartition, FetchedPartition] = {}
        if response.error_code != Code.NONE:
            code = Code(response.error_code)
            return {spec.tp: FetchedPartition(code) for spec in specs}
        for topic in response.topics:
            for p in topic.partitions:
                diverging = None
                if p.HasField("diverging_epoch"):
                    diverging = EpochEndOffset(
                        p.diverging_epoch.epoch, p.diverging_epoch.end_offset
                    )
                out[TopicPartition(topic.topic, p.partition)] = FetchedPartition(
                    error=_code(p.error_code),
                    high_watermark=p.high_watermark,
                    log_start_offset=p.log_start_offset,
                    log_end_offset=p.log_end_offset,
                    records=p.records,
                    diverging_epoch=diverging,
                )
        return out

    async def offsets_for_leader_epoch(
        self, requests: dict[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, EpochAnswer]:
        """``requests`` maps each partition to (current leader epoch, epoch to look up)."""
        by_topic: dict[str, list[broker_pb2.OffsetForLeaderPartition]] = {}
        for tp, (current, epoch) in requests.items():
            by_topic.setdefault(tp.topic, []).append(
                broker_pb2.OffsetForLeaderPartition(
                    partition=tp.partition, current_leader_epoch=current, leader_epoch=epoch
                )
            )
        request = broker_pb2.OffsetsForLeaderEpochRequest(
            replica_id=self._local_broker_id,
            topics=[
                broker_pb2.OffsetForLeaderTopic(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        response = await self._call("OffsetsForLeaderEpoch", request)
        out: dict[TopicPartition, EpochAnswer] = {}
        for topic in response.topics:
            for p in topic.partitions:
                out[TopicPartition(topic.topic, p.partition)] = EpochAnswer(
                    _code(p.error_code), EpochEndOffset(p.leader_epoch, p.end_offset)
                )
        return out

    async def list_offset(
        self, tp: TopicPartition, current_leader_epoch: int, timestamp: int
    ) -> tuple[Code, int]:
        """The leader's offset for ``timestamp`` (-1 latest = log end, -2 earliest)."""
        request = broker_pb2.ListOffsetsRequest(
            replica_id=self._local_broker_id,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=tp.topic,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=tp.partition,
                            current_leader_epoch=current_leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        response = await self._call("ListOffsets", request)
        for topic in response.topics:
            for p in topic.partitions:
                if topic.topic == tp.topic and p.partition == tp.partition:
                    return _code(p.error_code), p.offset
        return Code.UNKNOWN_TOPIC_OR_PARTITION, -1

    async def close(self) -> None:
        await self._channel.close()


def _code(value: int) -> Code:
    try:
        return Code(value)
    except ValueError:
        return Code.UNKNOWN_SERVER_ERROR
