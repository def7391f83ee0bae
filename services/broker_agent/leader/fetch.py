"""Fetch, ListOffsets and OffsetsForLeaderEpoch as a partition leader serves them.

Consumers (replica id -1) read up to the high watermark; followers (their broker id) read up to
the log end and, by the offset they fetch from, report what they hold — which moves the high
watermark and may admit them to the ISR. A fetch waits (delayed fetch) until ``min_bytes`` are
available, its partitions change, or ``max_wait_ms`` passes; a follower's fetch also returns as
soon as the high watermark moved past what that follower was last told, so followers learn the
watermark promptly. A follower whose last fetched epoch is not in the leader's history gets the
diverging epoch instead of data (KIP-595 style truncation on fetch).

A request may run in an incremental fetch session (KIP-227, ``fetch_session``): the session
remembers each partition's last request, so a request names only what changed and the answer
only partitions with something to report. A partition with nothing to send (fetched at the log
end, or a consumer at the high watermark) is answered without touching the log's files.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from services.broker_agent.control_priority import SLICE
from services.broker_agent.follower.fetch_state import EpochEndOffset
from services.broker_agent.isr_manager import AlterPartitionManager
from services.broker_agent.leader import leader_offsets
from services.broker_agent.leader.fetch_session import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
)
from services.broker_agent.leader.leader_offsets import OffsetResult
from services.broker_agent.log import (
    CorruptRecordError,
    DecodedRecord,
    KafkaStorageError,
    Log,
    OffsetOutOfRangeError,
    decode_records,
)
from services.broker_agent.model import UNDEFINED_EPOCH, Code, TopicPartition
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
    session_id: int = INVALID_SESSION_ID
    session_epoch: int = FINAL_EPOCH  # sessionless unless the request says otherwise

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
    fetch_offset: int = -1  # what the records were read from (decoding skips what is before)


@dataclass(frozen=True)
class FetchAnswer:
    """A Fetch's answer: a request-level error, or results and the session to continue in."""

    results: list[FetchResult]
    error: Code = Code.NONE
    session_id: int = INVALID_SESSION_ID


def decoded(result: FetchResult, fetch_offset: int) -> list[DecodedRecord]:
    """The records of a fetch answer at or after ``fetch_offset`` (a batch may start before)."""
    return [r for r in decode_records(result.records) if r.offset >= fetch_offset]


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class FetchHandler:
    def __init__(
        self,
        replicas: ReplicaManager,
        isr: AlterPartitionManager | None,
        sessions: FetchSessionCache | None = None,
        clock: Callable[[], int] = _monotonic_ms,
    ) -> None:
        self._replicas = replicas
        self._isr = isr
        self.sessions = sessions if sessions is not None else FetchSessionCache()
        self._clock = clock

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
            await wait_any(futures, min(remaining, self._throttle_delay(params) or remaining))
        if params.is_follower:
            for result in results:
                partition = self._replicas.partition(result.tp)
                if partition is not None and result.error == Code.NONE:
                    partition.note_high_watermark_sent(params.replica_id, result.high_watermark)
        return results

    async def fetch_in_session(
        self,
        params: FetchParams,
        specs: Sequence[FetchSpec],
        forgotten: Iterable[TopicPartition] = (),
    ) -> FetchAnswer:
        """A Fetch with its session fields (Kafka's FetchManager.newContext, then the read).

        Sessionless requests (and a session the full cache cannot hold) are served by
        ``fetch``; a session request reads what its session says is worth reading.
        """
        if params.session_id == INVALID_SESSION_ID and params.session_epoch == FINAL_EPOCH:
            return FetchAnswer(await self.fetch(params, specs))
        found = self.sessions.lookup(
            params.replica_id, params.session_id, params.session_epoch, forgotten, self._clock()
        )
        if found.error != Code.NONE:
            return FetchAnswer([], found.error)
        session = found.session
        if session is None:
            return FetchAnswer(await self.fetch(params, specs))
        named = [session.put(spec.tp, spec) for spec in specs]
        results = await self._serve_session(params, session, named, found.full)
        return FetchAnswer(results, session_id=session.id)

    async def _serve_session(
        self, params: FetchParams, session: FetchSession, named: list[CachedPartition], full: bool
    ) -> list[FetchResult]:
        """Read the named, dirty, unsettled and retry-due partitions; if nothing is worth
        answering, wait for a partition of the session to change (or ``max_wait_ms``)."""
        wait_ms = min(max(params.max_wait_ms, 0), MAX_WAIT_MS)
        deadline = time.monotonic() + wait_ms / 1000.0
        now = self._clock()
        to_read = dict.fromkeys(named)
        if not full:
            to_read.update(dict.fromkeys(session.take_dirty()))
            to_read.update(dict.fromkeys(session.unsettled))
            if session.is_follower:
                due = session.due_for_retry(now, self.sessions.config.retry_ms)
                to_read.update(dict.fromkeys(due))
        read: dict[CachedPartition, FetchResult] = {}
        budget = [params.max_bytes if params.max_bytes > 0 else 50 * 1024 * 1024]
        await self._session_round(params, session, to_read, read, budget, now)
        while not full and wait_ms > 0 and not self._session_satisfied(params, read):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or session.closed:
                break
            throttled = self._throttle_delay(params)
            wait = min(remaining, throttled or remaining)
            if not session.dirty:
                try:
                    await asyncio.wait_for(session.wake.wait(), wait)
                except TimeoutError:
                    if throttled is not None and throttled < remaining:
                        break  # the quota allows more now: the next request reads it
            await self._session_round(
                params, session, session.take_dirty(), read, budget, self._clock()
            )
        answer = []
        for cached, r in read.items():
            if not full and not cached.has_news(r):
                continue
            answer.append(r)
            if r.error != Code.NONE:
                continue
            cached.sent_high_watermark = r.high_watermark
            cached.sent_log_start_offset = r.log_start_offset
            if params.is_follower:
                partition = self._replicas.partition(r.tp)
                if partition is not None:
                    partition.note_high_watermark_sent(params.replica_id, r.high_watermark)
        return answer

    async def _session_round(
        self,
        params: FetchParams,
        session: FetchSession,
        to_read: Iterable[CachedPartition],
        read: dict[CachedPartition, FetchResult],
        budget: list[int],
        now: int,
    ) -> None:
        """Read ``to_read`` from their session state into ``read`` (a re-read replaces the
        earlier result and gives its bytes back to the budget); note which stay unsettled.

        A control request arriving meanwhile goes first every ``SLICE`` partitions
        (``ControlPriority.pause``); each partition is read as it is then, as Kafka reads a
        fetch's partitions one after another."""
        pause = self._replicas.priority.pause
        for i, cached in enumerate(to_read):
            if i and not i % SLICE:
                await pause()
            if cached.forgotten:
                continue  # by a later request of the session, while this one waited
            spec: FetchSpec = cached.request  # type: ignore[assignment]
            partition = self._replicas.partition(spec.tp)
            if partition is not None:
                session.arm(cached, partition.signal)  # before reading: a later change wakes us
                if params.is_follower:
                    partition.note_session_fetch(params.replica_id, cached)
            earlier = read.get(cached)
            if earlier is not None:
                budget[0] += len(earlier.records)
            result = self._read_one(
                params, spec, budget[0], first=earlier is None, min_one=budget[0] > 0
            )
            budget[0] = max(0, budget[0] - len(result.records))
            read[cached] = result
            end = result.log_end_offset if params.is_follower else result.high_watermark
            if (
                result.error != Code.NONE
                or result.records
                or result.diverging_epoch is not None
                or spec.fetch_offset < end
            ):
                session.unsettled.add(cached)
                session.note_read(cached, now, retry=False)
            else:
                session.unsettled.discard(cached)
                outside_isr = partition is not None and params.replica_id not in partition.isr
                session.note_read(cached, now, retry=params.is_follower and outside_isr)

    def _session_satisfied(
        self, params: FetchParams, read: dict[CachedPartition, FetchResult]
    ) -> bool:
        """Answer now: enough bytes, an error or divergence, or (to a follower) a moved
        high watermark or log start, which it must learn promptly."""
        total = 0
        for cached, r in read.items():
            if r.error != Code.NONE or r.diverging_epoch is not None:
                return True
            total += len(r.records)
            if params.is_follower and cached.has_news(r):
                return True
        return total >= max(params.min_bytes, 1)

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
        records = b""
        diverging = None
        try:
            partition = self._replicas.leader_partition(tp)
            log_ = partition.check_leader(spec.current_leader_epoch)
            if params.is_follower:
                # At the log end under our latest epoch: nothing to send and nothing diverges.
                idle = spec.fetch_offset == log_.log_end_offset and (
                    spec.last_fetched_epoch < 0 or spec.last_fetched_epoch == log_.latest_epoch
                )
                if not idle:
                    diverging = leader_offsets.diverging_epoch(
                        log_, spec.last_fetched_epoch, spec.fetch_offset
                    )
            else:
                idle = spec.fetch_offset == log_.high_watermark
            if not idle and diverging is None:
                records = self._read_records(params, partition, log_, spec, budget, min_one)
            if params.is_follower and first and diverging is None:
                partition.record_follower_fetch(
                    params.replica_id, spec.fetch_offset, spec.log_start_offset, params.broker_epoch
                )
                if self._isr is not None and params.replica_id not in partition.isr:
                    self._isr.submit(partition.propose_expansion())
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
            records=records,
            diverging_epoch=diverging,
            fetch_offset=spec.fetch_offset,
        )

    def _read_records(
        self,
        params: FetchParams,
        partition: Partition,
        log_: Log,
        spec: FetchSpec,
        budget: int,
        min_one: bool,
    ) -> bytes:
        max_offset = None if params.is_follower else log_.high_watermark
        limit = min(spec.max_bytes if spec.max_bytes > 0 else budget, budget)
        throttled = params.is_follower and self._throttled(partition, params.replica_id)
        if throttled:
            # KIP-73 on the leader: a listed replica out of sync gets what the quota allows.
            allowance = self._replicas.leader_quota.allowance()
            if allowance is not None:
                limit = max(0, min(limit, allowance))
        data = log_.read(spec.fetch_offset, limit, max_offset, min_one_batch=min_one and limit > 0)
        if throttled and data.records:
            self._replicas.leader_quota.record(len(data.records))
        return data.records

    def _throttle_delay(self, params: FetchParams) -> float | None:
        """For a follower's fetch while the leader's replication quota is used up: how long
        until it allows more (a throttled partition is worth reading again then)."""
        return self._replicas.leader_quota.delay_s() if params.is_follower else None

    def _throttled(self, partition: Partition, replica_id: int) -> bool:
        """Whether the leader throttles ``replica_id``'s reads of ``partition`` (KIP-73)."""
        if replica_id in partition.isr or not self._replicas.leader_quota.enabled:
            return False
        settings = self._replicas.settings(partition.tp.topic)
        return partition.tp.partition in settings.leader_throttled

    # ---------------------------------------------------------------- offsets

    def list_offsets(
        self, replica_id: int, requests: Sequence[tuple[TopicPartition, int, int]]
    ) -> list[OffsetResult]:
        return leader_offsets.list_offsets(self._replicas, replica_id, requests)

    def offsets_for_leader_epoch(
        self, requests: Sequence[tuple[TopicPartition, int, int]]
    ) -> list[tuple[TopicPartition, Code, int, int]]:
        return leader_offsets.offsets_for_leader_epoch(self._replicas, requests)
