"""A replica fetcher task: one per (leader broker, fetcher id) (Kafka's AbstractFetcherThread).

Its loop is Kafka's ``doWork``: first truncate every partition in the Truncating phase (by leader
epoch through OffsetsForLeaderEpoch, or to the high watermark where the log knows no epoch), then
send one Fetch for every partition ready to fetch and append what comes back. Errors are handled
per partition, as in ``processFetchRequest``: out-of-range offsets are reset from the leader's
log start / end (``fetchOffsetAndTruncate``), a fenced epoch parks the partition until the next
LeaderAndIsr, everything else backs off for ``replica.fetch.backoff.ms``.

State checks and log changes between two awaits are atomic on the event loop, so partitions
may be added or removed at any time; an answer for one that moved on meanwhile is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from leasehold import telemetry
from services.broker_agent.control_priority import SLICE
from services.broker_agent.follower.fetch_specs import FetchSpecBuilder, FetchStates
from services.broker_agent.follower.fetch_state import (
    EpochEndOffset,
    ErrorAction,
    FetcherSettings,
    PartitionFetchState,
    Phase,
    action_for_error,
    after_append,
    known_end,
    resolve_out_of_range,
    truncation_for,
)
from services.broker_agent.follower.leader_endpoint import (
    FetchedPartition,
    FetchSpec,
    LeaderEndpoint,
    LeaderUnreachableError,
)
from services.broker_agent.log import CorruptRecordError, KafkaStorageError, Log, LogError
from services.broker_agent.model import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    Code,
    Endpoint,
    TopicPartition,
)
from services.broker_agent.partition import Partition, PartitionError
from services.broker_agent.throttle import ReplicationQuota

log = logging.getLogger(__name__)


class PartitionSource(Protocol):
    def partition(self, tp: TopicPartition) -> Partition | None: ...


class ReplicaFetcher:
    def __init__(
        self,
        fetcher_id: int,
        endpoint: LeaderEndpoint,
        partitions: PartitionSource,
        settings: FetcherSettings,
        clock: Callable[[], int],
        quota: ReplicationQuota | None = None,
        is_throttled: Callable[[TopicPartition], bool] = lambda _tp: False,
        data_turn: Callable[[], Awaitable[None]] | None = None,
        pause: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.fetcher_id = fetcher_id
        self.endpoint = endpoint
        self._partitions = partitions
        self._settings = settings
        self._clock = clock
        self._quota = quota
        self._is_throttled = is_throttled
        # Awaited before each round, and between slices of a long answer (``pause``): control
        # requests first (``control_priority``).
        self._data_turn = data_turn
        self._pause = pause
        self.states: FetchStates = FetchStates()
        self.failed: set[TopicPartition] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._specs = FetchSpecBuilder(settings.partition_max_bytes)

    @property
    def leader(self) -> Endpoint:
        return self.endpoint.leader

    def add_partitions(self, initial: dict[TopicPartition, PartitionFetchState]) -> None:
        """Install the given states; they go to the end of the fetch order."""
        if self.failed:
            self.failed.difference_update(initial)
        self.states.put_all(initial)
        self._wake.set()

    def remove_partitions(
        self, tps: set[TopicPartition]
    ) -> dict[TopicPartition, PartitionFetchState]:
        # Walk the smaller side: a LeaderAndIsr moving 10,000 partitions calls this once per
        # fetcher, most of which hold few (or none) of them.
        if len(tps) < len(self.states):
            removed = self.states.pop_all(tps)
        else:
            removed = self.states.pop_all([tp for tp in self.states if tp in tps])
        if self.failed:
            self.failed -= tps
        return removed

    def _mark_failed(self, tp: TopicPartition, why: str) -> None:
        log.info("%s: stopped fetching from broker %d: %s", tp, self.leader.broker_id, why)
        self.states.pop(tp, None)
        self.failed.add(tp)

    def _delay(self, tp: TopicPartition) -> None:
        self._delay_all((tp,))

    def _delay_all(self, tps: Iterable[TopicPartition]) -> None:
        """Back ``tps`` off for replica.fetch.backoff.ms; their specs stay as they were."""
        now, backoff, states = self._clock(), self._settings.backoff_ms, self.states
        for tp in tps:
            state = states.get(tp)
            if state is not None:
                delayed = state.delayed(now, backoff)
                states[tp] = delayed
                self._specs.carry(tp, state, delayed)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        name = f"fetcher-{self.leader.broker_id}-{self.fetcher_id}"
        with telemetry.untraced():  # not under the LeaderAndIsr call that started it
            self._task = asyncio.create_task(self._run(), name=name)

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.endpoint.close()

    async def _run(self) -> None:
        while True:
            try:
                await self.do_work()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not silently stop replication of every partition
                log.exception("fetcher from broker %d failed; retrying", self.leader.broker_id)
                await asyncio.sleep(self._settings.backoff_ms / 1000.0)

    async def do_work(self) -> None:
        if self._data_turn is not None:
            await self._data_turn()
        if not await self.endpoint.wait_ready(self._settings.backoff_ms / 1000.0):
            return  # the leader is still unreachable: build nothing for it yet
        await self.maybe_truncate()
        await self.maybe_fetch()

    def _follower_log(self, tp: TopicPartition, epoch: int) -> Log | None:
        """The log to change, or None (and the partition parked) if it no longer follows."""
        try:
            partition = self._partitions.partition(tp)
            if partition is None:
                raise PartitionError(Code.UNKNOWN_TOPIC_OR_PARTITION, "no longer hosted")
            return partition.follower_log(epoch)
        except PartitionError as exc:
            self._mark_failed(tp, str(exc))
            return None

    # ----------------------------------------------------------------- truncation

    async def maybe_truncate(self) -> None:
        if not self.states.truncating:
            return  # the usual case, known without visiting every partition
        now = self._clock()
        with_epochs: dict[TopicPartition, tuple[int, int]] = {}
        resets: list[TopicPartition] = []
        for tp, state in list(self.states.items()):
            if not state.is_truncating(now):
                continue
            log_ = self._follower_log(tp, state.current_leader_epoch)
            if log_ is None:
                continue
            latest = log_.latest_epoch
            if state.fetch_offset < 0:
                resets.append(tp)
            elif latest is None:
                self._truncate(tp, state, log_, state.fetch_offset, completed=True)
            else:
                with_epochs[tp] = (state.current_leader_epoch, latest)
        for tp in resets:  # each await may change the states: take each one afresh
            state = self.states.get(tp)
            if state is not None and state.fetch_offset < 0 and state.is_truncating(now):
                await self._reset_offset(tp, state)
        if with_epochs:
            await self._truncate_to_epoch_end_offsets(with_epochs)

    async def _truncate_to_epoch_end_offsets(
        self, requests: dict[TopicPartition, tuple[int, int]]
    ) -> None:
        try:
            answers = await self.endpoint.offsets_for_leader_epoch(requests)
        except LeaderUnreachableError as exc:
            log.info("OffsetsForLeaderEpoch failed: %s", exc)
            self._delay_all(requests)
            return
        for tp, (current_epoch, _epoch) in requests.items():
            state = self.states.get(tp)
            # Leadership or epoch changed while we were asking: this answer is stale.
            if state is None or state.current_leader_epoch != current_epoch:
                continue
            answer = answers.get(tp)
            if answer is None:
                self._delay(tp)
                continue
            if answer.error != Code.NONE:
                self._handle_error(tp, answer.error, current_epoch)
                continue
            log_ = self._follower_log(tp, current_epoch)
            if log_ is None:
                continue
            self._truncate_by_epoch(tp, state, log_, answer.epoch_end)

    def _truncate_by_epoch(
        self, tp: TopicPartition, state: PartitionFetchState, log_: Log, leader: EpochEndOffset
    ) -> None:
        decision = truncation_for(
            leader,
            fetch_offset=state.fetch_offset,
            replica_leo=log_.log_end_offset,
            follower_end_offset_for=lambda epoch: known_end(log_.end_offset_for_epoch(epoch)),
        )
        self._truncate(tp, state, log_, decision.offset, completed=decision.completed)

    def _truncate(
        self,
        tp: TopicPartition,
        state: PartitionFetchState,
        log_: Log,
        offset: int,
        completed: bool,
    ) -> None:
        cuts = log_.log_end_offset > offset
        with _truncate_span(tp, state.current_leader_epoch, self.leader.broker_id, offset, cuts):
            try:
                log_.truncate_to(offset)
            except KafkaStorageError as exc:
                self._mark_failed(tp, f"storage error while truncating: {exc}")
                return
        if log_.log_end_offset < offset:
            offset = log_.log_end_offset  # nothing to cut, fetch from where the log ends
        log.info("%s: truncated to %d (%s)", tp, offset, "done" if completed else "continuing")
        phase = Phase.FETCHING if completed else Phase.TRUNCATING
        self.states[tp] = PartitionFetchState(offset, state.current_leader_epoch, phase, state.lag)

    async def _reset_offset(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        """OFFSET_OUT_OF_RANGE: realign with the leader's log end / log start offsets."""
        epoch, leader_start = state.current_leader_epoch, 0
        try:
            code, leader_leo = await self.endpoint.list_offset(tp, epoch, LATEST_TIMESTAMP)
            if code == Code.NONE:
                code, leader_start = await self.endpoint.list_offset(tp, epoch, EARLIEST_TIMESTAMP)
        except LeaderUnreachableError as exc:
            log.info("%s: cannot read the leader's offsets: %s", tp, exc)
            self._delay(tp)
            return
        current = self.states.get(tp)
        if current is None or current.current_leader_epoch != epoch:
            return
        if code != Code.NONE:
            self._handle_error(tp, code, epoch)
            return
        log_ = self._follower_log(tp, epoch)
        if log_ is None:
            return
        decision = resolve_out_of_range(
            replica_leo=log_.log_end_offset, leader_leo=leader_leo, leader_log_start=leader_start
        )
        offset = decision.truncate_fully_at
        if offset is None:
            offset = decision.truncate_to
        cuts = offset is not None and (
            decision.truncate_fully_at is not None or log_.log_end_offset > offset
        )
        with _truncate_span(tp, epoch, self.leader.broker_id, offset, cuts):
            try:
                if decision.truncate_to is not None:
                    log_.truncate_to(decision.truncate_to)
                if decision.truncate_fully_at is not None:
                    log_.truncate_fully_and_start_at(decision.truncate_fully_at)
            except KafkaStorageError as exc:
                self._mark_failed(tp, f"storage error while resetting: {exc}")
                return
        # Truncation removes whole batches, so the log may now end a little earlier.
        fetch_offset = min(decision.fetch_offset, log_.log_end_offset)
        log.warning("%s: reset fetch offset to %d", tp, fetch_offset)
        self.states[tp] = PartitionFetchState(
            fetch_offset, epoch, Phase.FETCHING, lag=max(0, leader_leo - fetch_offset)
        )

    def _handle_error(self, tp: TopicPartition, code: Code, request_epoch: int) -> None:
        state = self.states.get(tp)
        if state is None:
            return
        action = action_for_error(
            code, request_epoch=request_epoch, state_epoch=state.current_leader_epoch
        )
        if action is ErrorAction.FENCED:
            self._mark_failed(tp, "our leader epoch is stale; awaiting LeaderAndIsr")
        elif action is ErrorAction.FAIL:
            self._mark_failed(tp, code.name)
        elif action is ErrorAction.RESET_OFFSET:
            # Re-enter the truncation phase with an unknown offset: the next round asks the
            # leader for its log start and end (fetchOffsetAndTruncate).
            self.states[tp] = PartitionFetchState(
                -1, state.current_leader_epoch, Phase.TRUNCATING, state.lag, state.delayed_until_ms
            )
        else:
            self._delay(tp)

    # ---------------------------------------------------------------------- fetch

    def _build_fetch(self, now: int) -> list[FetchSpec]:
        skip = None
        if self._quota is not None and self._quota.is_exceeded():

            def skip(tp: TopicPartition, state: PartitionFetchState) -> bool:
                return not state.is_replica_in_sync and self._is_throttled(tp)

        return self._specs.build(self.states, now, self._follower_log, skip)

    async def maybe_fetch(self) -> None:
        specs = self._build_fetch(self._clock())
        if not specs:
            wait = self._settings.backoff_ms / 1000.0
            throttled = self._quota.delay_s() if self._quota is not None else None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(wait, throttled or wait))
            return
        try:
            responses = await self.endpoint.fetch(
                specs,
                max_wait_ms=self._settings.max_wait_ms,
                min_bytes=self._settings.min_bytes,
                max_bytes=self._settings.max_bytes,
            )
        except LeaderUnreachableError as exc:
            log.info("fetch failed: %s", exc)
            self._delay_all([spec.tp for spec in specs])
            await asyncio.sleep(min(self._settings.backoff_ms, 200) / 1000.0)
            return
        appended: list[Log] = []
        pause = self._pause
        for i, (tp, data) in enumerate(responses.items()):  # incremental: what has news
            if pause is not None and i and not i % SLICE:
                await pause()  # a full answer after a leader change names thousands
            state = self.states.get(tp)
            spec = self._specs.spec_for(tp, state)
            if spec is None or state is None:
                continue
            # Removed, re-added or moved on while the request was in flight: drop the answer.
            if (
                state.fetch_offset != spec.fetch_offset
                or state.current_leader_epoch != spec.current_leader_epoch
                or state.phase is not Phase.FETCHING
            ):
                continue
            log_ = self._process(spec, state, data)
            if log_ is not None:
                appended.append(log_)
        # Make the appended data durable before the next fetch reports it to the leader:
        # the leader counts it towards acks=all as soon as it sees our new fetch offset.
        # The partitions' fsyncs run side by side (each on a worker thread).
        if self._settings.flush and appended:
            outcomes = await asyncio.gather(
                *(asyncio.to_thread(log_.flush) for log_ in appended), return_exceptions=True
            )
            for outcome in outcomes:
                if isinstance(outcome, KafkaStorageError):
                    log.error("flush failed: %s", outcome)
                elif isinstance(outcome, BaseException):
                    raise outcome

    def _process(
        self, spec: FetchSpec, state: PartitionFetchState, data: FetchedPartition
    ) -> Log | None:
        """Handle one partition's answer; returns the log if something was appended."""
        tp = spec.tp
        if data.error != Code.NONE:
            self._handle_error(tp, data.error, spec.current_leader_epoch)
            return None
        log_ = self._follower_log(tp, state.current_leader_epoch)
        if log_ is None:
            return None
        if data.diverging_epoch is not None:
            self._truncate_by_epoch(tp, state, log_, data.diverging_epoch)
            return None
        partition = self._partitions.partition(tp)
        assert partition is not None  # _follower_log checked it
        try:
            info = partition.append_fetched(
                state.current_leader_epoch,
                spec.fetch_offset,
                data.records,
                data.high_watermark,
                data.log_start_offset,
            )
        except KafkaStorageError as exc:
            self._mark_failed(tp, f"storage error: {exc}")
            return None
        except (CorruptRecordError, PartitionError, LogError) as exc:
            # Corrupt or out-of-order batches may be a transient state of the leader's log
            # (Kafka's reasoning too): keep the partition, retry after the backoff.
            log.warning("%s: cannot append at %d: %s", tp, spec.fetch_offset, exc)
            self._delay(tp)
            return None
        next_offset = info.last_offset + 1 if info.valid_bytes else spec.fetch_offset
        self.states[tp] = after_append(
            state, next_offset=next_offset, leader_hw=data.high_watermark
        )
        if info.valid_bytes and self._quota is not None and self._is_throttled(tp):
            self._quota.record(info.valid_bytes)
        return log_ if info.valid_bytes else None


def _truncate_span(
    tp: TopicPartition, leader_epoch: int, leader: int, offset: int | None, cuts: bool
) -> contextlib.AbstractContextManager:
    """A ``broker.truncate`` span when the follower log really loses records, else nothing
    (every new follower passes the truncation phase; most cut nothing)."""
    if not cuts:
        return contextlib.nullcontext()
    return telemetry.span(
        "broker.truncate",
        topic=tp.topic,
        partition=tp.partition,
        leader_epoch=leader_epoch,
        broker_id=leader,
        truncate_offset=offset,
    )
