"""Fetch, ListOffsets and OffsetsForLeaderEpoch as a partition leader serves them.

Consumers (replica id -1) read up to the high watermark; followers (their broker id) read up to
the log end and, by the offset they fetch from, report what they hold — which moves the high
watermark and may admit them to the ISR. A fetch waits (delayed fetch) until ``min_bytes`` are
available, its partitions change, or ``max_wait_ms`` passes; a follower's fetch also returns as
soon as the high watermark moved past what that follower was last told, so followers learn the
watermark promptly. A follower whose last fetched epoch is not in the leader's history gets the
diverging epoch instead of data (KIP-595 style truncation on fetch).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from services.broker_agent.fetch_state import EpochEndOffset
from services.broker_agent.isr_manager import AlterPartitionManager
from services.broker_agent.log import (
    CorruptRecordError,
    DecodedRecord,
    KafkaStorageError,
    OffsetOutOfRangeError,
    decode_records,
)
from services.broker_agent.model import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    UNDEFINED_EPOCH,
    Code,
    TopicPartition,
)
from services.broker_agent.partition import Partition, PartitionError
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.signals import wait_any

MAX_WAIT_MS = 60_000  # a long poll never holds a request longer than this


@dataclass(frozen=True)
class FetchParams:
    replica_id: int = -1
    broker_epoch: int = -1
    max_wait_ms: int = 0
    min_bytes: int = 0
    max_bytes: int = 50 * 1024 * 1024

    @property
    def is_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(frozen=True)
class FetchSpec:
    tp: TopicPartition
    fetch_offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = UNDEFINED_EPOCH
    log_start_offset: int = -1
    max_bytes: int = 1024 * 1024


@dataclass(frozen=True)
class FetchResult:
    tp: TopicPartition
    error: Code = Code.NONE
    message: str = ""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes = b""
    diverging_epoch: EpochEndOffset | None = None
    current_leader: tuple[int, int] | None = None


@dataclass(frozen=True)
class OffsetResult:
    tp: TopicPartition
    error: Code = Code.NONE
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


def decoded(result: FetchResult, fetch_offset: int) -> list[DecodedRecord]:
    """The records of a fetch answer at or after ``fetch_offset`` (a batch may start before)."""
    return [r for r in decode_records(result.records) if r.offset >= fetch_offset]


class FetchHandler:
    def __init__(self, replicas: ReplicaManager, isr: AlterPartitionManager | None) -> None:
        self._replicas = replicas
        self._isr = isr

    def _error(self, tp: TopicPartition, code: Code, message: str = "") -> FetchResult:
        leader = None
        if code in (Code.NOT_LEADER_OR_FOLLOWER, Code.FENCED_LEADER_EPOCH):
            leader = self._replicas.current_leader(tp)
        return FetchResult(tp, code, message, current_leader=leader)

    async def fetch(self, params: FetchParams, specs: Sequence[FetchSpec]) -> list[FetchResult]:
        wait_ms = min(max(params.max_wait_ms, 0), MAX_WAIT_MS)
        deadline = time.monotonic() + wait_ms / 1000.0
        results = self._read_all(params, specs, first=True)
        while not self._satisfied(params, results):
            # Take the futures before re-reading, so a change in between still wakes us.
            futures = [p.signal.future() for p in self._partitions(specs)]
            results = self._read_all(params, specs, first=False)
            remaining = deadline - time.monotonic()
            if self._satisfied(params, results) or remaining <= 0 or not futures:
                break
            await wait_any(futures, remaining)
        if params.is_follower:
            for result in results:
                partition = self._replicas.partition(result.tp)
                if partition is not None and result.error == Code.NONE:
                    partition.note_high_watermark_sent(params.replica_id, result.high_watermark)
        return results

    def _partitions(self, specs: Sequence[FetchSpec]) -> list[Partition]:
        found = (self._replicas.partition(s.tp) for s in specs)
        return [p for p in found if p is not None]

    def _satisfied(self, params: FetchParams, results: list[FetchResult]) -> bool:
        if params.max_wait_ms <= 0 or not results:
            return True
        if any(r.error != Code.NONE or r.diverging_epoch is not None for r in results):
            return True
        if sum(len(r.records) for r in results) >= max(params.min_bytes, 1):
            return True
        if params.is_follower:
            for r in results:
                partition = self._replicas.partition(r.tp)
                state = partition.followers.get(params.replica_id) if partition else None
                if state is not None and r.high_watermark > state.last_sent_hw:
                    return True
        return False

    def _read_all(
        self, params: FetchParams, specs: Sequence[FetchSpec], first: bool
    ) -> list[FetchResult]:
        remaining = params.max_bytes if params.max_bytes > 0 else 50 * 1024 * 1024
        results = []
        for spec in specs:
            result = self._read_one(params, spec, remaining, first, min_one=remaining > 0)
            remaining = max(0, remaining - len(result.records))
            results.append(result)
        return results

    def _read_one(
        self, params: FetchParams, spec: FetchSpec, budget: int, first: bool, min_one: bool
    ) -> FetchResult:
        tp = spec.tp
        try:
            partition = self._replicas.leader_partition(tp)
            log_ = partition.check_leader(spec.current_leader_epoch)
            if params.is_follower:
                diverging = self._diverging(partition, spec)
                if diverging is not None:
                    return FetchResult(
                        tp,
                        high_watermark=log_.high_watermark,
                        log_start_offset=log_.log_start_offset,
                        log_end_offset=log_.log_end_offset,
                        diverging_epoch=diverging,
                    )
            max_offset = None if params.is_follower else log_.high_watermark
            limit = min(spec.max_bytes if spec.max_bytes > 0 else budget, budget)
            if params.is_follower and self._throttled(partition, params.replica_id):
                limit = 0
            data = log_.read(
                spec.fetch_offset, limit, max_offset, min_one_batch=min_one and limit > 0
            )
            if params.is_follower and first:
                partition.record_follower_fetch(
                    params.replica_id, spec.fetch_offset, spec.log_start_offset, params.broker_epoch
                )
                if self._isr is not None:
                    self._isr.submit(partition.propose_expansion())
            if params.is_follower and data.records and self._is_throttled_tp(partition):
                self._replicas.leader_quota.record(len(data.records))
        except PartitionError as exc:
            return self._error(tp, exc.code, str(exc))
        except OffsetOutOfRangeError as exc:
            return self._error(tp, Code.OFFSET_OUT_OF_RANGE, str(exc))
        except KafkaStorageError as exc:
            return self._error(tp, Code.KAFKA_STORAGE_ERROR, str(exc))
        except CorruptRecordError as exc:
            return self._error(tp, Code.CORRUPT_MESSAGE, str(exc))
        return FetchResult(
            tp,
            high_watermark=log_.high_watermark,
            log_start_offset=log_.log_start_offset,
            log_end_offset=log_.log_end_offset,
            records=data.records,
        )

    def _diverging(self, partition: Partition, spec: FetchSpec) -> EpochEndOffset | None:
        """The leader's end of the follower's last epoch, if the follower's log diverges."""
        if spec.last_fetched_epoch < 0 or partition.log is None:
            return None
        epoch, end = partition.log.end_offset_for_epoch(spec.last_fetched_epoch)
        if epoch == UNDEFINED_EPOCH or end < 0:
            return None
        if epoch < spec.last_fetched_epoch or end < spec.fetch_offset:
            return EpochEndOffset(epoch, end)
        return None

    def _is_throttled_tp(self, partition: Partition) -> bool:
        settings = self._replicas.settings(partition.tp.topic)
        return partition.tp.partition in settings.leader_throttled

    def _throttled(self, partition: Partition, replica_id: int) -> bool:
        """KIP-73 on the leader: throttle listed replicas that are out of sync, over quota."""
        return (
            replica_id not in partition.isr
            and self._is_throttled_tp(partition)
            and self._replicas.leader_quota.is_exceeded()
        )

    # ---------------------------------------------------------------- offsets

    def list_offsets(
        self, replica_id: int, requests: Sequence[tuple[TopicPartition, int, int]]
    ) -> list[OffsetResult]:
        """(tp, current leader epoch, timestamp) -> offsets; consumers see up to the HW."""
        out = []
        for tp, current_epoch, timestamp in requests:
            try:
                partition = self._replicas.leader_partition(tp)
                log_ = partition.check_leader(current_epoch)
                found = log_.offset_for_timestamp(timestamp)
            except PartitionError as exc:
                out.append(OffsetResult(tp, exc.code))
                continue
            except KafkaStorageError:
                out.append(OffsetResult(tp, Code.KAFKA_STORAGE_ERROR))
                continue
            except ValueError:
                out.append(OffsetResult(tp, Code.INVALID_REQUEST))
                continue
            if found is None:
                out.append(OffsetResult(tp))
                continue
            offset, ts, epoch = found.offset, found.timestamp, found.leader_epoch
            if replica_id < 0:
                hw = log_.high_watermark
                if timestamp == LATEST_TIMESTAMP:
                    offset = hw
                    epoch = partition.leader_epoch
                elif timestamp != EARLIEST_TIMESTAMP and offset >= hw:
                    out.append(OffsetResult(tp))
                    continue
            out.append(OffsetResult(tp, Code.NONE, ts, offset, epoch))
        return out

    def offsets_for_leader_epoch(
        self, requests: Sequence[tuple[TopicPartition, int, int]]
    ) -> list[tuple[TopicPartition, Code, int, int]]:
        """(tp, current leader epoch, epoch) -> (tp, error, epoch, end offset) from the leader's
        epoch cache (Kafka's lastOffsetForLeaderEpoch)."""
        out = []
        for tp, current_epoch, epoch in requests:
            try:
                partition = self._replicas.leader_partition(tp)
                log_ = partition.check_leader(current_epoch)
                found_epoch, end = log_.end_offset_for_epoch(epoch)
            except PartitionError as exc:
                out.append((tp, exc.code, UNDEFINED_EPOCH, -1))
                continue
            except KafkaStorageError:
                out.append((tp, Code.KAFKA_STORAGE_ERROR, UNDEFINED_EPOCH, -1))
                continue
            out.append((tp, Code.NONE, found_epoch, end))
        return out
