"""Consumer: reads assigned partitions from their leaders, from chosen offsets, in order.

Partitions are assigned explicitly (no consumer groups) and start at the earliest or latest
offset (``ListOffsets``) or at a given one. ``poll`` sends one long-polling ``Fetch`` per leader
broker, takes the record batches as the log stores them (the broker decodes nothing), checks
their CRCs and decodes them here, and returns records at or after each partition's position,
advancing it. When a leader moves (NOT_LEADER_OR_FOLLOWER, fenced or unknown leader epoch, an
unreachable broker) the consumer takes the response's leader hint, refreshes metadata and
continues from the same position on the new leader; OFFSET_OUT_OF_RANGE resets the position as
``auto_offset_reset`` says.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import grpc

from leasehold.broker.v1 import broker_pb2
from leasehold.client.errors import error_from_code, error_from_rpc
from leasehold.client.metadata import ClusterMetadata
from leasehold.client.producer import RETRIABLE
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.errors import InvalidRequestError, LeaseholdError, UnavailableError
from leasehold.records import CorruptRecordError, iter_batches

log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1
_NAMED = {"earliest": EARLIEST, "latest": LATEST}

Start = str | int
TP = tuple[str, int]


class CorruptDataError(LeaseholdError):
    """A fetched batch failed its CRC or does not decode: the data, not the call, is bad."""

    grpc_status = "DATA_LOSS"


@dataclass(frozen=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    leader_epoch: int = -1  # the epoch of the leader that appended it (its batch's)


def _start_code(start: Start) -> int:
    if isinstance(start, str):
        if start not in _NAMED:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REQUEST,
                f"start must be 'earliest', 'latest' or an offset, got {start!r}",
            )
        return _NAMED[start]
    if start < 0:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REQUEST, f"an offset must not be negative: {start}"
        )
    return start


class Consumer:
    """Async consumer of explicitly assigned partitions."""

    def __init__(
        self,
        metadata: ClusterMetadata | None = None,
        *,
        admin: str | None = None,
        bootstrap: Sequence[str] = (),
        tls: TlsConfig | None = None,
        max_wait_ms: int = 500,
        partition_max_bytes: int = 1024 * 1024,
        max_bytes: int = 50 * 1024 * 1024,
        auto_offset_reset: str = "earliest",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self._own_metadata = metadata is None
        self.metadata = metadata or ClusterMetadata(admin, bootstrap=bootstrap, tls=tls)
        self.max_wait_ms = max_wait_ms
        self.partition_max_bytes = partition_max_bytes
        self.max_bytes = max_bytes
        self.reset = _start_code(auto_offset_reset)
        self.timeout = request_timeout_ms / 1000.0
        self.backoff = retry_backoff_ms / 1000.0
        self.positions: dict[TP, int] = {}
        # The leader epoch of the last record returned per partition: a committed position
        # carries it (KIP-320), as Kafka's consumer commits.
        self.last_epochs: dict[TP, int] = {}
        self.high_watermarks: dict[TP, int] = {}

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_metadata:
            await self.metadata.close()

    # --- assignment and positions ---------------------------------------------------------------

    async def assign(
        self, partitions: Iterable[TP], start: Start | Mapping[TP, Start] = "earliest"
    ) -> None:
        """Read ``partitions`` from ``start`` (one for all, or per partition)."""
        tps = list(dict.fromkeys(partitions))
        starts = {tp: _start_code(start[tp] if isinstance(start, Mapping) else start) for tp in tps}
        for topic in {t for t, _ in tps}:
            count = await self.metadata.partitions(topic)
            for t, p in tps:
                if t == topic and not 0 <= p < count:
                    raise InvalidRequestError(
                        common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic '{topic}' has {count} partitions; partition {p} does not exist.",
                    )
        resolved = await self.offsets_for({tp: s for tp, s in starts.items() if s < 0})
        self.positions = {tp: resolved.get(tp, starts[tp]) for tp in tps}

    async def assign_topic(self, topic: str, start: Start = "earliest") -> list[TP]:
        count = await self.metadata.partitions(topic)
        tps = [(topic, p) for p in range(count)]
        await self.assign(tps, start)
        return tps

    def assignment(self) -> list[TP]:
        return list(self.positions)

    def position(self, topic: str, partition: int) -> int:
        return self.positions[(topic, partition)]

    async def seek(self, topic: str, partition: int, start: Start) -> None:
        code = _start_code(start)
        if code < 0:
            code = (await self.offsets_for({(topic, partition): code}))[(topic, partition)]
        self.positions[(topic, partition)] = code

    async def offsets_for(self, wanted: Mapping[TP, int]) -> dict[TP, int]:
        """ListOffsets (EARLIEST / LATEST) from each partition's leader, retrying leader moves."""
        pending = dict(wanted)
        found: dict[TP, int] = {}
        deadline = time.monotonic() + self.timeout
        while pending:
            by_leader = await self._group(pending)
            for broker_id, tps in by_leader.items():
                found.update(await self._list_offsets(broker_id, {tp: pending[tp] for tp in tps}))
            pending = {tp: code for tp, code in pending.items() if tp not in found}
            if pending:
                if time.monotonic() > deadline:
                    raise UnavailableError(
                        common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
                        f"No leader answered for {sorted(pending)} in time.",
                    )
                await asyncio.sleep(self.backoff)
                await self._refresh(pending)
        return found

    async def _list_offsets(self, broker_id: int, wanted: Mapping[TP, int]) -> dict[TP, int]:
        topics: dict[str, list[broker_pb2.ListOffsetsPartition]] = {}
        for (t, p), code in wanted.items():
            leader = self.metadata.leader(t, p)
            topics.setdefault(t, []).append(
                broker_pb2.ListOffsetsPartition(
                    partition=p,
                    current_leader_epoch=leader.leader_epoch if leader else -1,
                    timestamp=code,
                )
            )
        request = broker_pb2.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                broker_pb2.ListOffsetsTopic(topic=t, partitions=ps) for t, ps in topics.items()
            ],
        )
        try:
            resp = await self.metadata.stub(broker_id).ListOffsets(request, timeout=self.timeout)
        except grpc.aio.AioRpcError as e:
            log.info("ListOffsets to broker %d failed: %s", broker_id, error_from_rpc(e))
            return {}
        except LeaseholdError:
            return {}
        out: dict[TP, int] = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == common_pb2.ERROR_CODE_NONE:
                    out[(t.topic, p.partition)] = p.offset
                elif p.error_code not in RETRIABLE:
                    raise error_from_code(p.error_code, f"ListOffsets {t.topic}-{p.partition}")
        return out

    async def _refresh(self, tps: Iterable[TP]) -> None:
        try:
            await self.metadata.refresh({t for t, _ in tps})
        except LeaseholdError as e:
            log.info("metadata refresh failed: %s", e)

    async def _group(self, tps: Iterable[TP]) -> dict[int, list[TP]]:
        tps = list(tps)
        if any(self.metadata.leader(*tp) is None for tp in tps):
            await self._refresh(tps)
        groups: dict[int, list[TP]] = {}
        for tp in tps:
            leader = self.metadata.leader(*tp)
            if leader is not None:
                groups.setdefault(leader.leader, []).append(tp)
        return groups

    # --- fetching -------------------------------------------------------------------------------

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to ``timeout_ms`` for some."""
        if not self.positions:
            return []
        deadline = time.monotonic() + timeout_ms / 1000.0
        while True:
            remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
            wait_ms = min(self.max_wait_ms, remaining_ms)
            groups = await self._group(self.positions)
            results = await asyncio.gather(
                *(self._fetch(bid, tps, wait_ms) for bid, tps in groups.items())
            )
            records = [r for batch, _ in results for r in batch]
            trouble = any(t for _, t in results) or sum(map(len, groups.values())) < len(
                self.positions
            )
            if records or time.monotonic() >= deadline:
                return records
            if trouble:
                await asyncio.sleep(min(self.backoff, max(0.0, deadline - time.monotonic())))
                await self._refresh(self.positions)

    async def _fetch(
        self, broker_id: int, tps: list[TP], wait_ms: int
    ) -> tuple[list[ConsumerRecord], bool]:
        """Fetch from one broker; return the records and whether anything needs a refresh."""
        topics: dict[str, list[broker_pb2.FetchPartition]] = {}
        for t, p in tps:
            leader = self.metadata.leader(t, p)
            topics.setdefault(t, []).append(
                broker_pb2.FetchPartition(
                    partition=p,
                    current_leader_epoch=leader.leader_epoch if leader else -1,
                    fetch_offset=self.positions[(t, p)],
                    last_fetched_epoch=-1,
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        request = broker_pb2.FetchRequest(
            replica_id=-1,
            replica_broker_epoch=-1,
            max_wait_ms=wait_ms,
            min_bytes=1,
            max_bytes=self.max_bytes,
            topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            record_format=broker_pb2.RECORD_FORMAT_BATCHES,
        )
        try:
            resp = await self.metadata.stub(broker_id).Fetch(
                request, timeout=self.timeout + wait_ms / 1000.0
            )
        except grpc.aio.AioRpcError as e:
            log.info("Fetch from broker %d failed: %s", broker_id, error_from_rpc(e))
            return [], True
        except LeaseholdError:
            return [], True
        if resp.error_code != common_pb2.ERROR_CODE_NONE:
            return [], True
        records: list[ConsumerRecord] = []
        trouble = False
        for t in resp.topics:
            for p in t.partitions:
                tp = (t.topic, p.partition)
                if tp not in self.positions:
                    continue
                if p.error_code == common_pb2.ERROR_CODE_NONE:
                    records += self._take(tp, p)
                elif p.error_code == common_pb2.ERROR_CODE_OFFSET_OUT_OF_RANGE:
                    await self._reset(tp)
                elif p.error_code in RETRIABLE:
                    if p.HasField("current_leader"):
                        self.metadata.note_leader(t.topic, p.partition, p.current_leader)
                    trouble = True
                else:
                    raise error_from_code(p.error_code, p.error_message)
        return records, trouble

    def _take(self, tp: TP, p: broker_pb2.FetchPartitionResponse) -> list[ConsumerRecord]:
        """The records of ``p`` at or after the position (a batch may start before it)."""
        self.high_watermarks[tp] = p.high_watermark
        position = self.positions[tp]
        topic, partition = tp
        out: list[ConsumerRecord] = []
        try:
            for batch in iter_batches(p.records):
                if batch.last_offset < position:
                    continue
                batch.ensure_valid()
                for r in batch.records():
                    if r.offset >= position:
                        out.append(
                            ConsumerRecord(
                                topic,
                                partition,
                                r.offset,
                                r.timestamp_ms,
                                r.key,
                                r.value,
                                r.headers,
                                batch.partition_leader_epoch,
                            )  # fmt: skip
                        )
                        position = r.offset + 1
                        self.last_epochs[tp] = batch.partition_leader_epoch
        except CorruptRecordError as exc:
            raise CorruptDataError(
                common_pb2.ERROR_CODE_CORRUPT_MESSAGE,
                f"{topic}-{partition} at offset {position}: {exc}",
            ) from None
        self.positions[tp] = position
        return out

    async def _reset(self, tp: TP) -> None:
        log.info("offset %d out of range for %s-%d; resetting", self.positions[tp], *tp)
        self.positions[tp] = (await self.offsets_for({tp: self.reset}))[tp]
