"""``spark.read.format("leasehold")``: topic records as a DataFrame (Python Data Source API).

Options:

- ``admin`` (``host:port`` of the admin service) or ``bootstrap`` (comma-separated broker
  addresses): where to discover brokers;
- ``topic``: one topic or a comma-separated list;
- ``startingOffsets`` / ``endingOffsets``: see :mod:`services.pipeline.offsets`;
- ``maxRecordsPerPartition``: split a topic partition's range across several Spark tasks;
- ``fetchMaxBytes`` (default 1 MiB per Fetch), ``timeoutMs`` (default 30000).

Planning (``partitions()``, on the driver side) asks one broker's Metadata for the leaders and
each leader's ListOffsets for the earliest and latest (high watermark) offsets, so the ranges
are fixed before any task runs: a read is repeatable while retention keeps the data. Each task
then fetches its range from the partition's leader with synchronous gRPC (decoded records) and
follows leadership changes by asking Metadata again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import grpc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from leasehold.broker.v1 import broker_pb2
from leasehold.common.v1 import common_pb2
from services.pipeline.broker_rpc import (
    EARLIEST,
    LATEST,
    NONE,
    BrokerClient,
    Endpoint,
    describe_brokers,
    leaders_from_metadata,
)
from services.pipeline.offsets import (
    OffsetRange,
    PartitionBounds,
    parse_offsets,
    parse_topics,
    plan_ranges,
)

SCHEMA = (
    "topic string, partition int, offset long, timestamp timestamp, key binary, value binary, "
    "headers array<struct<key: string, value: binary>>"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RETRIABLE = {
    common_pb2.ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
    common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
    common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH,
    common_pb2.ERROR_CODE_UNKNOWN_LEADER_EPOCH,
    common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
    common_pb2.ERROR_CODE_REPLICA_NOT_AVAILABLE,
    common_pb2.ERROR_CODE_KAFKA_STORAGE_ERROR,
}


@dataclass(frozen=True)
class ReadSettings:
    bootstrap: tuple[str, ...]
    fetch_max_bytes: int = 1 << 20
    timeout_s: float = 30.0


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One Spark task: a range of one topic partition and where to fetch it."""

    range: OffsetRange
    leader_address: str
    settings: ReadSettings


def record_row(topic: str, partition: int, r: broker_pb2.Record) -> tuple:
    """A fetched record -> a row of :data:`SCHEMA` (absent key/value stay null)."""
    return (
        topic,
        partition,
        r.offset,
        _EPOCH + timedelta(milliseconds=r.timestamp_ms),
        r.key if r.HasField("key") else None,
        r.value if r.HasField("value") else None,
        [(h.key, h.value) for h in r.headers],
    )


def discover(settings: ReadSettings, topics: Sequence[str]) -> broker_pb2.MetadataResponse:
    """Metadata from the first bootstrap broker that answers."""
    last: Exception | None = None
    for address in settings.bootstrap:
        try:
            with BrokerClient(address, settings.timeout_s) as client:
                return client.metadata(topics)
        except grpc.RpcError as e:
            last = e
    raise ConnectionError(f"no broker of {list(settings.bootstrap)} answered Metadata: {last}")


def partition_bounds(
    settings: ReadSettings, topics: Sequence[str]
) -> tuple[list[PartitionBounds], dict[int, Endpoint]]:
    meta = discover(settings, topics)
    for t in meta.topics:
        if t.error_code != NONE:
            name = common_pb2.ErrorCode.Name(t.error_code)
            raise ValueError(f"topic {t.name!r}: {name}")
    endpoints, leaders = leaders_from_metadata(meta)
    missing = set(topics) - {t.name for t in meta.topics}
    if missing:
        raise ValueError(f"unknown topics: {sorted(missing)}")
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for tp, leader in leaders.items():
        if leader < 0 or leader not in endpoints:
            raise ValueError(f"{tp[0]}-{tp[1]} has no leader; cannot read it now")
        by_leader.setdefault(leader, []).append(tp)
    bounds = []
    for leader, tps in sorted(by_leader.items()):
        with BrokerClient(endpoints[leader].address, settings.timeout_s) as client:
            first = client.list_offsets(tps, EARLIEST)
            last = client.list_offsets(tps, LATEST)
        for tp in tps:
            if first[tp].error_code != NONE or last[tp].error_code != NONE:
                code = first[tp].error_code or last[tp].error_code
                raise ValueError(f"ListOffsets {tp[0]}-{tp[1]}: {common_pb2.ErrorCode.Name(code)}")
            bounds.append(PartitionBounds(tp[0], tp[1], first[tp].offset, last[tp].offset, leader))
    return bounds, endpoints


def read_range(part: RangePartition) -> Iterator[tuple]:
    """Fetch ``[start, end)`` from the leader, re-discovering it after leadership moves."""
    r, s = part.range, part.settings
    address, offset = part.leader_address, r.start
    deadline = time.monotonic() + s.timeout_s
    backoff = 0.05
    while offset < r.end:
        try:
            with BrokerClient(address, s.timeout_s) as client:
                while offset < r.end:
                    reply = client.fetch(
                        {(r.topic, r.partition): offset}, partition_max_bytes=s.fetch_max_bytes
                    )[(r.topic, r.partition)]
                    if reply.error_code != NONE:
                        break
                    rows = [x for x in reply.decoded_records if offset <= x.offset < r.end]
                    if not rows:
                        break  # not replicated that far yet (new leader): back off and retry
                    for x in rows:
                        yield record_row(r.topic, r.partition, x)
                    offset = rows[-1].offset + 1
                    deadline = time.monotonic() + s.timeout_s
            if offset >= r.end:
                return
            if reply.error_code not in _RETRIABLE | {NONE}:
                name = common_pb2.ErrorCode.Name(reply.error_code)
                raise RuntimeError(f"Fetch {r.topic}-{r.partition}@{offset}: {name}")
        except grpc.RpcError as e:
            if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"reading {r.topic}-{r.partition} stuck at offset {offset}")
        time.sleep(backoff)
        backoff = min(backoff * 2, 1.0)
        address = _current_leader(s, r.topic, r.partition) or address


def _current_leader(settings: ReadSettings, topic: str, partition: int) -> str | None:
    try:
        endpoints, leaders = leaders_from_metadata(discover(settings, [topic]))
    except ConnectionError:
        return None
    leader = leaders.get((topic, partition), -1)
    return endpoints[leader].address if leader in endpoints else None


class LeaseholdReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        # Spark hands options in a case-insensitive map whose keys come out lower-cased.
        opts = {k.lower(): v for k, v in options.items()}
        self.topics = parse_topics(opts.get("topic"))
        self.starting = parse_offsets(opts.get("startingoffsets"), EARLIEST)
        self.ending = parse_offsets(opts.get("endingoffsets"), LATEST)
        split = opts.get("maxrecordsperpartition")
        self.max_records = int(split) if split else None
        timeout = float(opts.get("timeoutms", "30000")) / 1000
        if opts.get("admin"):
            bootstrap = tuple(b.address for b in describe_brokers(opts["admin"], timeout))
        else:
            bootstrap = tuple(a.strip() for a in opts.get("bootstrap", "").split(",") if a.strip())
        if not bootstrap:
            raise ValueError("option 'admin' or 'bootstrap' is required (and must find brokers)")
        fetch_max = int(opts.get("fetchmaxbytes", str(1 << 20)))
        self.settings = ReadSettings(bootstrap, fetch_max, timeout)

    def partitions(self) -> Sequence[InputPartition]:
        bounds, endpoints = partition_bounds(self.settings, self.topics)
        ranges = plan_ranges(bounds, self.starting, self.ending, self.max_records)
        return [RangePartition(r, endpoints[r.leader].address, self.settings) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        # Spark hands a bare InputPartition(None) when there was nothing to plan.
        if isinstance(partition, RangePartition):
            yield from read_range(partition)


class LeaseholdDataSource(DataSource):
    """Registered by :func:`services.pipeline.session.build_session` as ``leasehold``."""

    @classmethod
    def name(cls) -> str:
        return "leasehold"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return LeaseholdReader(dict(self.options))
