"""The log cleaner: compaction of ``cleanup.policy=compact`` logs (Kafka's LogCleaner).

Each round picks the filthiest compacted log — the highest dirty ratio at or above its
``min.cleanable.dirty.ratio``, or any log past ``max.compaction.lag.ms`` — and cleans it as
Kafka's ``Cleaner.doClean`` does:

1. build the offset map (latest offset of each key) over the dirty section, as far as the map
   holds (``log.cleaner.dedupe.buffer.size``);
2. rewrite every segment below the map's end, a group of small segments into one, keeping the
   records ``compaction.retained`` keeps; tombstones are kept in segments newer than the delete
   horizon;
3. each cleaned segment is written to ``<base>.cleaned``, fsynced, renamed to a ``.swap`` file
   naming the segments it replaces, and swapped in under the log's lock (``Log.swap_cleaned``);
   a crash at any point is finished or undone on the next load (``loader.complete_swaps``);
4. the log's cleaner point moves to the map's end, durably.

Reads and writes are throttled to ``log.cleaner.io.max.bytes.per.second``. Everything here is
blocking: the broker runs rounds on a worker thread.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from services.broker_agent.log import checkpoint
from services.broker_agent.log.batch import BatchView
from services.broker_agent.log.cleaning import CleanerView
from services.broker_agent.log.compaction import (
    Cleanable,
    SegmentInfo,
    cleanable,
    delete_horizon_ms,
    group_segments,
    rebuild_batch,
    retained,
)
from services.broker_agent.log.errors import CorruptRecordError, KafkaStorageError
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.loader import CLEANED_SUFFIX, swap_name
from services.broker_agent.log.log import Log
from services.broker_agent.log.offset_map import OffsetMap
from services.broker_agent.log.segment import LogSegment, segment_name

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class CleanerSettings:
    """Kafka's ``log.cleaner.*`` broker configs (``dedupe_buffer_size`` is smaller than Kafka's
    128 MiB: a Python dict entry costs several times the 24 bytes a slot costs in Kafka)."""

    enable: bool = True
    dedupe_buffer_size: int = 16 * 1024 * 1024
    io_max_bytes_per_second: float = math.inf
    backoff_ms: int = 15_000

    def __post_init__(self) -> None:
        if self.dedupe_buffer_size < 1024:
            raise ValueError("--log-cleaner-dedupe-buffer-size must be at least 1024")
        if self.io_max_bytes_per_second <= 0:
            raise ValueError("--log-cleaner-io-max-bytes-per-second must be positive")
        if self.backoff_ms < 1:
            raise ValueError("--log-cleaner-backoff-ms must be positive")


class Throttler:
    """Kafka's Throttler: sleeps whenever the bytes observed since the last check came faster
    than ``rate`` per second (checked every ``check_interval_s``)."""

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        check_interval_s: float = 0.3,
    ) -> None:
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._interval = check_interval_s
        self._start = clock()
        self._observed = 0.0
        self.slept_s = 0.0

    def maybe_throttle(self, nbytes: int) -> None:
        if math.isinf(self.rate):
            return
        self._observed += nbytes
        now = self._clock()
        elapsed = now - self._start
        if elapsed < self._interval:
            return
        wanted = self._observed / self.rate
        if wanted > elapsed:
            self._sleep(wanted - elapsed)
            self.slept_s += wanted - elapsed
        self._start = self._clock()
        self._observed = 0.0


@dataclass(frozen=True)
class CleanResult:
    """One log cleaned: its dirty section ``[first_dirty, end)`` and what it cost."""

    tp: TopicPartition
    first_dirty: int
    end: int
    bytes_read: int
    bytes_written: int
    records_read: int
    records_kept: int
    swapped: bool  # False: the log changed meanwhile and the round was dropped


class _Counts:
    def __init__(self) -> None:
        self.bytes_read = self.bytes_written = self.records_read = self.records_kept = 0


def _batches(
    handles: FileHandleCache, segment: LogSegment, size: int
) -> Iterator[tuple[BatchView, bytes]]:
    """The segment's first ``size`` bytes as batches, read in chunks as they are used."""
    with handles.use(segment.log_path) as fd:
        for _, header, data in LogSegment._batches(fd, 0, size, True):
            assert data is not None
            yield BatchView(header, memoryview(data)), data


class LogCleaner:
    """Cleans the compacted logs ``logs()`` returns, one log per ``clean_once``."""

    def __init__(
        self,
        logs: Callable[[], Mapping[TopicPartition, Log]],
        handles: FileHandleCache,
        settings: CleanerSettings | None = None,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        throttler: Throttler | None = None,
    ) -> None:
        self._logs = logs
        self._handles = handles
        self.settings = settings or CleanerSettings()
        self._clock_ms = clock_ms
        self.throttler = throttler or Throttler(self.settings.io_max_bytes_per_second)
        self.results: list[CleanResult] = []  # the last few, for tests and metrics
        self.max_dirty_ratio = 0.0

    # ----------------------------------------------------------------- choosing

    def filthiest(
        self, now_ms: int, skip: frozenset[TopicPartition] = frozenset()
    ) -> tuple[TopicPartition, Log, CleanerView, Cleanable] | None:
        """The compacted log most in need of cleaning, or None when none is due."""
        best = None
        best_key = (-1.0, False)
        max_ratio = 0.0
        for tp, candidate in self._logs().items():
            if tp in skip or candidate.is_offline or not candidate.config.compact:
                continue
            try:
                view = candidate.cleaner_view()
            except KafkaStorageError:
                continue
            found = self._cleanable(view, now_ms)
            if found.empty:
                continue
            max_ratio = max(max_ratio, found.ratio)
            due = found.must_clean or found.ratio >= view.config.min_cleanable_dirty_ratio
            key = (found.ratio, found.must_clean)
            if due and (best is None or key > best_key):
                best, best_key = (tp, candidate, view, found), key
        self.max_dirty_ratio = max_ratio
        return best

    @staticmethod
    def _cleanable(view: CleanerView, now_ms: int) -> Cleanable:
        return cleanable(
            view.infos,
            cleaner_point=view.cleaner_point,
            log_start=view.log_start,
            high_watermark=view.high_watermark,
            now_ms=now_ms,
            min_lag_ms=view.config.min_compaction_lag_ms,
            max_lag_ms=view.config.max_compaction_lag_ms,
        )

    def clean_once(self, now_ms: int | None = None) -> CleanResult | None:
        """Clean the filthiest log, if one is due."""
        now = self._clock_ms() if now_ms is None else now_ms
        found = self.filthiest(now)
        if found is None:
            return None
        return self.clean(*found, now_ms=now)

    def clean_all_due(self, now_ms: int | None = None) -> list[CleanResult]:
        """Clean every log that is due, each once (a cleaner thread's round)."""
        now = self._clock_ms() if now_ms is None else now_ms
        done: list[CleanResult] = []
        seen: set[TopicPartition] = set()
        while (found := self.filthiest(now, frozenset(seen))) is not None:
            seen.add(found[0])
            try:
                done.append(self.clean(*found, now_ms=now))
            except KafkaStorageError as exc:
                log.error("cleaning %s-%d failed: %s", *found[0], exc)
        return done

    # ----------------------------------------------------------------- cleaning

    def clean(
        self,
        tp: TopicPartition,
        target: Log,
        view: CleanerView,
        dirty: Cleanable,
        *,
        now_ms: int,
    ) -> CleanResult:
        """Clean ``target``'s dirty section as ``view`` saw it (Cleaner.doClean)."""
        counts = _Counts()
        offsets = OffsetMap(self.settings.dedupe_buffer_size)
        try:
            self._build_offset_map(view, dirty, offsets, counts)
            end = (
                offsets.latest_offset + 1 if offsets.latest_offset >= 0 else dirty.first_uncleanable
            )
            horizon = delete_horizon_ms(
                view.infos, dirty.first_dirty, view.config.delete_retention_ms
            )
            swapped = True
            for group in group_segments(view.infos, view.config.segment_bytes, end):
                old = tuple(view.segments[i] for i in group)
                infos = [view.infos[i] for i in group]
                group_end = view.infos[group[-1] + 1].base_offset
                swap = self._write_cleaned(
                    view.directory, old, infos, offsets, horizon, group_end, counts
                )
                if not target.swap_cleaned(old, swap, old[0].base_offset, view.generation):
                    swapped = False
                    break
            if swapped:
                swapped = target.set_cleaner_point(end, view.generation)
        except (FileNotFoundError, CorruptRecordError) as exc:
            # A segment removed under us (retention, truncation) or torn by a crash since
            # read: the next round starts from what the log holds then.
            log.info("cleaning %s-%d dropped: %s", tp[0], tp[1], exc)
            end, swapped = dirty.first_dirty, False
        except OSError as exc:
            raise KafkaStorageError(f"cleaning {tp[0]}-{tp[1]}: {exc}") from exc
        result = CleanResult(
            tp,
            dirty.first_dirty,
            end,
            counts.bytes_read,
            counts.bytes_written,
            counts.records_read,
            counts.records_kept,
            swapped,
        )
        self.results = [*self.results[-9:], result]
        log.info(
            "cleaned %s-%d: dirty section [%d, %d), %d of %d records kept, %d -> %d bytes%s",
            tp[0], tp[1], result.first_dirty, result.end, result.records_kept,
            result.records_read, result.bytes_read, result.bytes_written,
            "" if swapped else " (dropped: the log changed meanwhile)",
        )  # fmt: skip
        return result

    def _build_offset_map(
        self, view: CleanerView, dirty: Cleanable, offsets: OffsetMap, counts: _Counts
    ) -> None:
        """Latest offset per key over ``[first_dirty, first_uncleanable)``, stopping where the
        map is full (its ``latest_offset`` then marks how far this round cleans)."""
        for segment, info in zip(view.segments, view.infos, strict=True):
            if info.next_offset <= dirty.first_dirty:
                continue
            if info.base_offset >= dirty.first_uncleanable or offsets.full:
                return
            for batch, data in _batches(self._handles, segment, info.size):
                self.throttler.maybe_throttle(len(data))
                for record in batch.records():
                    if not dirty.first_dirty <= record.offset < dirty.first_uncleanable:
                        continue
                    if record.key is not None and not offsets.put(record.key, record.offset):
                        return

    def _write_cleaned(
        self,
        directory: Path,
        old: tuple[LogSegment, ...],
        infos: list[SegmentInfo],
        offsets: OffsetMap,
        horizon_ms: int,
        group_end: int,
        counts: _Counts,
    ) -> Path:
        """The group's cleaned segment, written aside and renamed to its swap name."""
        base = old[0].base_offset
        cleaned = directory / f"{segment_name(base)}{CLEANED_SUFFIX}"
        fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            for segment, info in zip(old, infos, strict=True):
                retain_deletes = info.modified_ms > horizon_ms
                for batch, data in _batches(self._handles, segment, info.size):
                    counts.bytes_read += len(data)
                    self.throttler.maybe_throttle(len(data))
                    records = batch.records()
                    kept = retained(records, offsets, retain_deletes)
                    counts.records_read += len(records)
                    counts.records_kept += len(kept)
                    if not kept:
                        continue
                    out = data if len(kept) == len(records) else rebuild_batch(batch.header, kept)
                    _write_all(fd, out)
                    counts.bytes_written += len(out)
                    self.throttler.maybe_throttle(len(out))
            os.fsync(fd)
        finally:
            os.close(fd)
        newest = max(info.modified_ms for info in infos)
        os.utime(cleaned, ns=(newest * 1_000_000, newest * 1_000_000))
        swap = directory / swap_name(base, group_end)
        cleaned.replace(swap)
        checkpoint.fsync_dir(directory)
        return swap


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
