"""The segments of one log directory and their durability (Kafka's LocalLog).

This layer knows files: which segment holds an offset (bisect over base offsets), when to
roll, what is dirty and must be fsynced, and the recovery point — the offset below which
everything is known to be on disk. It knows nothing of leaders, epochs or watermarks.

The recovery point is a small per-log file. It is rewritten when it goes *down* (a
truncation, immediately, so that data appended later is never trusted without validation) and
otherwise when the owner checkpoints it; a stale value is only ever lower than the truth,
which costs extra validation on restart, never correctness.
"""

from __future__ import annotations

import bisect
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from services.broker_agent.log import checkpoint
from services.broker_agent.log.batch import BatchHeader
from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.loader import load_segments
from services.broker_agent.log.retention import SegmentSummary
from services.broker_agent.log.segment import LOG_SUFFIX, LogSegment, segment_name

RECOVERY_POINT_FILE = "recovery-point"
# The compacted log's first dirty offset (Kafka keeps one cleaner-offset-checkpoint per data
# directory; one per log goes with the log when it is deleted).
CLEANER_POINT_FILE = "cleaner-offset-checkpoint"
DELETE_SUFFIX = "-delete"


class FlushTicket(NamedTuple):
    """Descriptors to fsync (then close), and the log end and truncation count they cover."""

    fds: tuple[int, ...]
    end: int
    truncations: int


class LocalLog:
    """Ordered segments; the last one is active. Not thread-safe: ``Log`` serialises calls."""

    def __init__(self, directory: Path, config: LogConfig, handles: FileHandleCache) -> None:
        self.directory = directory
        self.config = config
        self._handles = handles
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._dirty: set[LogSegment] = set()
        self._dir_dirty = False
        self.recovery_point = 0
        self._persisted_recovery_point = 0
        self._truncations = 0  # bumped whenever the end moves down
        self.cleaner_point = 0
        # Bumped by every change that removes or rewrites data (truncation, retention): a
        # cleaner round that read the segments before one does not swap its result in.
        self.generation = 0

    def load(self, initial_base_offset: int) -> None:
        """Recover the directory; an empty one gets a segment at ``initial_base_offset``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        recovery_point = checkpoint.read_offset(self.directory / RECOVERY_POINT_FILE, 0)
        self.cleaner_point = checkpoint.read_offset(self.directory / CLEANER_POINT_FILE, 0)
        loaded = load_segments(
            self.directory, self._handles, self.config.index_interval_bytes, recovery_point
        )
        self._set_segments(loaded.segments or [self._create_segment(initial_base_offset)])
        self.recovery_point = self._persisted_recovery_point = min(
            recovery_point, self.log_end_offset
        )
        self._dirty = {segment for segment in self.segments if segment.is_dirty}
        if self._dirty or self.recovery_point < self.log_end_offset:
            # Everything now on disk has been validated: make it durable and say so.
            self.flush()
            self.checkpoint_recovery_point()

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def first_base_offset(self) -> int:
        return self._bases[0]

    def segment_index(self, offset: int) -> int:
        """Index of the segment whose base offset is the greatest <= ``offset`` (0 if none)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def read(self, offset: int, max_bytes: int, max_offset: int, min_one_batch: bool) -> bytes:
        """Whole batches from the one holding ``offset`` (see ``LogSegment.read``)."""
        for segment in self.segments[self.segment_index(offset) :]:
            found = segment.read(offset, max_bytes, max_offset, min_one_batch)
            if found is not None:
                return found
        return b""

    def headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """Headers of every batch whose last offset is >= ``offset`` (a producer-state scan)."""
        for segment in self.segments[self.segment_index(offset) :]:
            yield from segment.headers_from(offset)

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int
    ) -> tuple[int, int, int] | None:
        """The first record at/after ``start_offset`` with a timestamp >= ``timestamp``.

        Segments whose maximum timestamp is lower are skipped without reading them.
        """
        for segment in self.segments[self.segment_index(start_offset) :]:
            if segment.max_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, start_offset)
                if found is not None:
                    return found
        return None

    def summaries(self) -> list[SegmentSummary]:
        return [SegmentSummary(s.base_offset, s.size, s.max_timestamp) for s in self.segments]

    # ------------------------------------------------------------------ writes

    def append(self, data: bytes | memoryview, headers: Sequence[BatchHeader]) -> None:
        """Append validated whole batches, rolling first if the active segment is full/old."""
        segment = self.segments[-1]
        if segment.should_roll(
            len(data),
            max(header.max_timestamp for header in headers),
            headers[-1].last_offset,
            self.config.segment_bytes,
            self.config.segment_ms,
        ):
            segment = self.roll(headers[0].base_offset)
        segment.append(data, headers)
        self._dirty.add(segment)

    def roll(self, base_offset: int) -> LogSegment:
        """A new active segment at ``base_offset``; an empty active one is replaced."""
        if self.segments[-1].size == 0:
            self.remove_segments([self.segments[-1]])
        segment = self._create_segment(base_offset)
        self._set_segments([*self.segments, segment])
        return segment

    def truncate_to(self, offset: int) -> None:
        """Drop every batch reaching ``offset`` or beyond (``offset`` >= first base)."""
        self.generation += 1
        self.remove_segments([s for s in self.segments if s.base_offset > offset])
        active = self.segments[-1]
        if active.truncate_to(offset):
            self._dirty.add(active)
        self._lower_recovery_point(self.log_end_offset)
        self._lower_cleaner_point(self.log_end_offset)

    def truncate_fully(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset``."""
        self.generation += 1
        self._lower_cleaner_point(offset)
        self.remove_segments(list(self.segments))
        self._set_segments([self._create_segment(offset)])
        self._lower_recovery_point(offset)
        if self.recovery_point < offset:  # moved up to an empty log: nothing to validate
            self.recovery_point = offset

    def delete_oldest(self, count: int) -> None:
        """Retention: delete the ``count`` oldest segments (never the active one)."""
        count = min(count, len(self.segments) - 1)
        if count > 0:
            self.generation += 1
            self.remove_segments(self.segments[:count], newest_first=False)

    def remove_segments(self, doomed: Sequence[LogSegment], newest_first: bool = True) -> None:
        """Delete segments in an order that leaves a contiguous log if we crash half-way:
        newest first when truncating (a prefix survives), oldest first for retention."""
        if not doomed:
            return
        ids = {id(segment) for segment in doomed}
        for segment in sorted(doomed, key=lambda s: s.base_offset, reverse=newest_first):
            segment.delete()
            self._dirty.discard(segment)
        self._set_segments([s for s in self.segments if id(s) not in ids])
        self._dir_dirty = True

    def replace_segments(self, old: Sequence[LogSegment], swap: Path, base_offset: int) -> None:
        """Swap a cleaned segment in for ``old`` (consecutive, not the active one): the old
        files go, then ``swap`` becomes ``<base_offset>.log`` (a crash between the two is
        completed by ``loader.complete_swaps``)."""
        position = self.segments.index(old[0])
        for segment in old:
            segment.delete()
            self._dirty.discard(segment)
        checkpoint.fsync_dir(self.directory)
        new_path = self.directory / f"{segment_name(base_offset)}{LOG_SUFFIX}"
        swap.replace(new_path)
        checkpoint.fsync_dir(self.directory)
        segment, _ = LogSegment.open(
            self.directory,
            base_offset,
            self._handles,
            self.config.index_interval_bytes,
            recover_from=base_offset,  # builds its indexes, checking every batch
        )
        segment.flush()
        kept = self.segments[:position] + [segment] + self.segments[position + len(old) :]
        self._set_segments(kept)

    def set_cleaner_point(self, offset: int) -> None:
        """The cleaner cleaned everything below ``offset``: persist it."""
        checkpoint.write_offset(self.directory / CLEANER_POINT_FILE, offset)
        self.cleaner_point = offset

    # -------------------------------------------------------------- durability

    def flush(self) -> None:
        """fsync everything written since the last flush; free when nothing was."""
        if self._dirty or self._dir_dirty:
            for segment in sorted(self._dirty, key=lambda s: s.base_offset):
                segment.flush()
            self._dirty.clear()
            if self._dir_dirty:
                checkpoint.fsync_dir(self.directory)
                self._dir_dirty = False
        self.recovery_point = self.log_end_offset

    def begin_flush(self) -> FlushTicket:
        """What a flush outside the lock must fsync to make everything so far durable."""
        fds: list[int] = []
        try:
            for segment in sorted(self._dirty, key=lambda s: s.base_offset):
                fds += segment.take_dirty()
            self._dirty.clear()
            if self._dir_dirty:
                fds.append(os.open(self.directory, os.O_RDONLY | os.O_CLOEXEC))
                self._dir_dirty = False
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return FlushTicket(tuple(fds), self.log_end_offset, self._truncations)

    def end_flush(self, ticket: FlushTicket) -> None:
        """The ticket's files are durable: so is the log below its end offset, unless the
        log was truncated meanwhile (then later appends may not be covered)."""
        if ticket.truncations == self._truncations and ticket.end > self.recovery_point:
            self.recovery_point = ticket.end

    def checkpoint_recovery_point(self) -> None:
        """Persist the recovery point if it changed since it was last written."""
        if self.recovery_point != self._persisted_recovery_point:
            checkpoint.write_offset(self.directory / RECOVERY_POINT_FILE, self.recovery_point)
            self._persisted_recovery_point = self.recovery_point

    def close(self) -> None:
        for segment in self.segments:
            segment.close()
        self._handles.close_under(self.directory)

    def delete(self) -> None:
        self.close()
        remove_log_directory(self.directory)

    # ------------------------------------------------------------- internals

    def _lower_recovery_point(self, offset: int) -> None:
        self._truncations += 1
        if offset < self.recovery_point:
            self.recovery_point = offset
        if self.recovery_point < self._persisted_recovery_point:
            checkpoint.write_offset(self.directory / RECOVERY_POINT_FILE, self.recovery_point)
            self._persisted_recovery_point = self.recovery_point

    def _lower_cleaner_point(self, offset: int) -> None:
        """Truncated below the clean part: what is appended there next is dirty. Written at
        once, as the recovery point is, or a restart would take new records for clean ones."""
        if offset < self.cleaner_point:
            self.set_cleaner_point(max(offset, 0))

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self.segments = segments
        self._bases = [segment.base_offset for segment in segments]

    def _create_segment(self, base_offset: int) -> LogSegment:
        self._dir_dirty = True
        return LogSegment.create(
            self.directory, base_offset, self._handles, self.config.index_interval_bytes
        )


def remove_log_directory(directory: Path) -> None:
    """Remove a log directory. It is renamed first, so a crash mid-way leaves a
    ``*-delete`` directory (removed by the next load), never a half-deleted log."""
    doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
    try:
        directory.rename(doomed)
    except FileNotFoundError:
        return
    checkpoint.fsync_dir(doomed.parent)
    shutil.rmtree(doomed, ignore_errors=True)
