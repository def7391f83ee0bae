"""Produce: append to partition leaders and, for acks=all, wait for the ISR (delayed produce).

A partition's data is either a producer's record batch, stored as sent once its header and CRC
pass (no record is decoded here), or records the leader encodes into one batch. An idempotent
producer's batch is checked against its sequence state first: a retry of a batch still in the
log is answered with that batch's offsets and appends nothing (and acks=all then waits for that
batch as for a new one); a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an old producer epoch
INVALID_PRODUCER_EPOCH.

acks=0 and acks=1 answer once the leader has appended. acks=all (-1) first requires the ISR to
be at least ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS, nothing appended), then waits until the
high watermark passes the appended batch — every ISR member has it — or the request times out
(REQUEST_TIMED_OUT). If the ISR shrank below the minimum meanwhile the records are in the log but
the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND, as in Kafka. Only a loss of leadership fails the
wait (NOT_LEADER_OR_FOLLOWER): a new leader epoch with the same leader does not. Before an
acks=all success the leader's log is fsynced — the flush starts at the append and overlaps the
replication (``group_flush``) — and followers fsync before they report their offsets, so an
acknowledged record survives the loss of any minority of the ISR, even of whole machines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry import trace

from leasehold import telemetry
from services.broker_agent.group_flush import GroupFlush
from services.broker_agent.log import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaStorageError,
    LogError,
    Record,
    RecordTooLargeError,
)
from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.partition import NO_PRODUCER, Partition, PartitionError
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.signals import wait_any

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 300_000  # a hostile timeout must not pin a request for ever
VALID_ACKS = (0, 1, -1)


@dataclass(frozen=True)
class ProduceEntry:
    """One partition's data: a producer's ``batch``, or ``records`` to encode (with the
    idempotent ``producer``'s id, epoch and base sequence)."""

    tp: TopicPartition
    records: Sequence[Record] = ()
    current_leader_epoch: int = -1
    batch: bytes = b""
    producer: tuple[int, int, int] = NO_PRODUCER


@dataclass(frozen=True)
class ProduceResult:
    tp: TopicPartition
    error: Code = Code.NONE
    message: str = ""
    base_offset: int = -1
    log_start_offset: int = -1
    # Who leads now (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH), as (leader id, epoch).
    current_leader: tuple[int, int] | None = None


@dataclass(frozen=True)
class _Waiting:
    entry: ProduceEntry
    partition: Partition
    required_offset: int
    leadership: int
    min_isr: int
    result: ProduceResult
    flushed: asyncio.Task[None]


class ProduceHandler:
    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas
        self._flush = GroupFlush()

    def _error(self, tp: TopicPartition, code: Code, message: str = "") -> ProduceResult:
        leader = None
        if code in (Code.NOT_LEADER_OR_FOLLOWER, Code.FENCED_LEADER_EPOCH):
            leader = self._replicas.current_leader(tp)
        return ProduceResult(tp, code, message, current_leader=leader)

    async def produce(
        self, acks: int, timeout_ms: int, entries: Sequence[ProduceEntry]
    ) -> list[ProduceResult]:
        if acks not in VALID_ACKS:
            return [
                ProduceResult(e.tp, Code.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1: {acks}")
                for e in entries
            ]
        results: dict[TopicPartition, ProduceResult] = {}
        waiting: list[_Waiting] = []
        for entry in entries:
            outcome = self._append(entry, acks)
            if isinstance(outcome, _Waiting):
                waiting.append(outcome)
                results[entry.tp] = outcome.result
            else:
                results[entry.tp] = outcome
        if waiting:
            timeout = min(timeout_ms if timeout_ms > 0 else DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
            timeout /= 1000.0
            for w, result in zip(waiting, await self._await_isr(waiting, timeout), strict=True):
                results[w.entry.tp] = result
        return [results[e.tp] for e in entries]

    def _append(self, entry: ProduceEntry, acks: int) -> ProduceResult | _Waiting:
        tp = entry.tp
        try:
            partition = self._replicas.leader_partition(tp)
            min_isr = self._replicas.settings(tp.topic).min_insync_replicas
            info = partition.append_as_leader(
                entry.records,
                batch=entry.batch,
                producer=entry.producer,
                current_leader_epoch=entry.current_leader_epoch,
                required_acks=acks,
                min_insync_replicas=min_isr,
            )
        except PartitionError as exc:
            return self._error(tp, exc.code, str(exc))
        except RecordTooLargeError as exc:
            return self._error(tp, Code.MESSAGE_TOO_LARGE, str(exc))
        except (InvalidRecordError, CorruptRecordError) as exc:
            code = Code.CORRUPT_MESSAGE if entry.batch and exc.error_code == 2 else None
            return self._error(tp, code or Code.INVALID_RECORD, str(exc))
        except KafkaStorageError as exc:
            return self._error(tp, Code.KAFKA_STORAGE_ERROR, str(exc))
        except LogError as exc:  # fenced producer epoch, sequence gap: the log's own code
            return self._error(tp, _code_of(exc), str(exc))
        result = ProduceResult(
            tp, Code.NONE, base_offset=info.first_offset, log_start_offset=info.log_start_offset
        )
        if acks != -1:
            return result
        end = info.last_offset + 1
        flushed = asyncio.ensure_future(self._flush.flushed_to(partition.local_log(), end))
        return _Waiting(entry, partition, end, partition.leadership, min_isr, result, flushed)

    async def _await_isr(self, waiting: list[_Waiting], timeout: float) -> list[ProduceResult]:
        """Delayed produce: re-check whenever one of the partitions changes, until done."""
        deadline = time.monotonic() + timeout
        outcomes: dict[int, Code] = {}
        while True:
            futures = []
            for i, w in enumerate(waiting):
                if i in outcomes:
                    continue
                futures.append(w.partition.signal.future())
                code = w.partition.acks_all_outcome(w.required_offset, w.leadership, w.min_isr)
                if code is not None:
                    outcomes[i] = code
            if len(outcomes) == len(waiting):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for i in range(len(waiting)):
                    outcomes.setdefault(i, Code.REQUEST_TIMED_OUT)
                break
            await wait_any(futures, remaining)
        results = []
        span = trace.get_current_span()
        for i, w in enumerate(waiting):
            code = outcomes[i]
            moved_by = w.partition.hw_moved_by
            if code == Code.NONE and moved_by is not None and span.is_recording():
                # the replication that satisfied acks=all: the follower fetch that moved the HW
                tp = w.entry.tp
                span.add_link(moved_by, telemetry.attrs(topic=tp.topic, partition=tp.partition))
            if code == Code.NONE:
                code = await self._flushed(w)
            else:
                _discard(w.flushed)
            if code == Code.NONE:
                results.append(w.result)
            else:
                results.append(self._error(w.entry.tp, code))
        return results

    @staticmethod
    async def _flushed(w: _Waiting) -> Code:
        try:
            await w.flushed
        except KafkaStorageError:
            return Code.KAFKA_STORAGE_ERROR
        return Code.NONE


def _discard(task: asyncio.Task[None]) -> None:
    """Stop waiting for a flush whose answer no longer matters (the flush itself goes on,
    shielded, for others); an error it ended with is retrieved so it is not reported."""
    if task.done():
        if not task.cancelled():
            task.exception()
    else:
        task.cancel()


def _code_of(exc: LogError) -> Code:
    try:
        return Code(exc.error_code)
    except ValueError:
        return Code.UNKNOWN_SERVER_ERROR
