"""Blocking gRPC calls to brokers and admin, for Spark drivers and executors.

Spark runs our reader code in plain Python worker processes with no event loop, so the data
source and the snapshot's log-size probe use grpc's synchronous API rather than the asyncio
channels the services use. Everything here is a thin translation; the one piece of logic worth
testing on its own, :func:`batch_bytes_per_offset`, is pure.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import grpc

from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.common.v1 import common_pb2

EARLIEST = -2
LATEST = -1
NONE = common_pb2.ERROR_CODE_NONE
_MAX_MESSAGE = 64 * 1024 * 1024
_OPTIONS = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ("grpc.max_send_message_length", _MAX_MESSAGE),
]
_BATCH_PREFIX = struct.Struct(">qi")  # base offset, batch length (bytes after these 12)
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23  # after base offset, length, leader epoch, magic, crc, attributes


def batch_bytes_per_offset(raw: bytes) -> float | None:
    """Average stored bytes per offset over the whole record batches in ``raw``.

    Batches start with Kafka's v2 prefix (base offset, length, ... last offset delta at byte 23),
    which the broker agent's format keeps. A truncated trailing batch is ignored.
    """
    pos, first, end, used = 0, None, None, 0
    while pos + _LAST_OFFSET_DELTA_AT + 4 <= len(raw):
        base, length = _BATCH_PREFIX.unpack_from(raw, pos)
        size = 12 + length
        if length <= 0 or pos + size > len(raw):
            break
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(raw, pos + _LAST_OFFSET_DELTA_AT)
        first = base if first is None else first
        end = base + delta + 1
        used += size
        pos += size
    if first is None or end is None or end <= first:
        return None
    return used / (end - first)


@dataclass(frozen=True)
class Endpoint:
    broker_id: int
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionOffsets:
    error_code: int
    offset: int


def describe_brokers(admin_address: str, timeout: float = 10.0) -> list[Endpoint]:
    """The registered brokers, from admin's DescribeCluster."""
    with grpc.insecure_channel(admin_address, options=_OPTIONS) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        resp = stub.DescribeCluster(admin_pb2.DescribeClusterRequest(), timeout=timeout)
    return [Endpoint(b.broker_id, b.host, b.port) for b in resp.brokers]


class BrokerClient:
    """One synchronous channel to one broker agent."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout
        self._channel = grpc.insecure_channel(address, options=_OPTIONS)
        self._stub = broker_pb2_grpc.BrokerServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def metadata(self, topics: Sequence[str] = ()) -> broker_pb2.MetadataResponse:
        req = broker_pb2.MetadataRequest(topics=list(topics), all_topics=not topics)
        return self._stub.Metadata(req, timeout=self.timeout)

    def list_offsets(
        self, partitions: Iterable[tuple[str, int]], timestamp: int
    ) -> dict[tuple[str, int], PartitionOffsets]:
        """ListOffsets for many partitions this broker leads (EARLIEST, LATEST or a time)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        req = broker_pb2.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=t,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=p, current_leader_epoch=-1, timestamp=timestamp
                        )
                        for p in ps
                    ],
                )
                for t, ps in by_topic.items()
            ],
        )
        resp = self._stub.ListOffsets(req, timeout=self.timeout)
        return {
            (t.topic, p.partition): PartitionOffsets(p.error_code, p.offset)
            for t in resp.topics
            for p in t.partitions
        }

    def fetch(
        self,
        fetch_offsets: Mapping[tuple[str, int], int],
        *,
        record_format: int = broker_pb2.RECORD_FORMAT_RECORDS,
        partition_max_bytes: int = 1 << 20,
        max_wait_ms: int = 0,
    ) -> dict[tuple[str, int], broker_pb2.FetchPartitionResponse]:
        """One consumer Fetch (replica id -1) of several partitions from their offsets."""
        by_topic: dict[str, list[broker_pb2.FetchPartition]] = {}
        for (topic, partition), offset in fetch_offsets.items():
            by_topic.setdefault(topic, []).append(
                broker_pb2.FetchPartition(
                    partition=partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    last_fetched_epoch=-1,
                    log_start_offset=-1,
                    partition_max_bytes=partition_max_bytes,
                )
            )
        req = broker_pb2.FetchRequest(
            replica_id=-1,
            replica_broker_epoch=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=0,
            max_bytes=max(partition_max_bytes * len(fetch_offsets), partition_max_bytes),
            topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            record_format=record_format,
        )
        resp = self._stub.Fetch(req, timeout=self.timeout + max_wait_ms / 1000)
        return {(t.topic, p.partition): p for t in resp.topics for p in t.partitions}


def leaders_from_metadata(
    resp: broker_pb2.MetadataResponse,
) -> tuple[dict[int, Endpoint], dict[tuple[str, int], int]]:
    """Broker endpoints and each partition's leader id (-1 when none) from a Metadata reply."""
    endpoints = {b.broker_id: Endpoint(b.broker_id, b.host, b.port) for b in resp.brokers}
    leaders = {
        (t.name, p.partition): p.leader
        for t in resp.topics
        if t.error_code == NONE
        for p in t.partitions
    }
    return endpoints, leaders
