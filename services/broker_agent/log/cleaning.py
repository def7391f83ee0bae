"""What a ``Log`` lets the log cleaner see and change (Kafka's UnifiedLog.replaceSegments side).

The cleaner reads a snapshot of the segments without the log's lock, writes a cleaned segment
beside them, and swaps it in under the lock only if nothing removed or rewrote data meanwhile
(the local log's ``generation`` is unchanged and the old segments are still there): a follower's
truncation or a retention run simply makes that round start over later. Appends go on
throughout; the active segment is never cleaned.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from services.broker_agent.log.compaction import SegmentInfo
from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.errors import KafkaStorageError
from services.broker_agent.log.local_log import LocalLog
from services.broker_agent.log.segment import LogSegment


@dataclass(frozen=True)
class CleanerView:
    """One log as the cleaner found it."""

    directory: Path
    segments: tuple[LogSegment, ...]
    infos: tuple[SegmentInfo, ...]
    cleaner_point: int
    log_start: int
    high_watermark: int
    generation: int
    config: LogConfig


def _info(segment: LogSegment) -> SegmentInfo:
    try:
        modified = os.stat(segment.log_path).st_mtime_ns // 1_000_000
    except FileNotFoundError:
        modified = 0
    return SegmentInfo(
        segment.base_offset,
        segment.next_offset,
        segment.size,
        segment.max_timestamp,
        segment.rolling_timestamp,
        modified,
    )


class LogCleaning:
    """Mixed into ``Log``: the cleaner's entry points, under the log's lock."""

    directory: Path
    _lock: threading.RLock
    _local: LocalLog
    _offline: str | None
    _log_start_offset: int
    _high_watermark: int

    def _check_online(self) -> None:
        if self._offline is not None:
            raise KafkaStorageError(f"log {self.directory} is offline: {self._offline}")

    def cleaner_view(self) -> CleanerView:
        with self._lock:
            self._check_online()
            segments = tuple(self._local.segments)
            return CleanerView(
                self.directory,
                segments,
                tuple(_info(s) for s in segments),
                self._local.cleaner_point,
                self._log_start_offset,
                self._high_watermark,
                self._local.generation,
                self._local.config,
            )

    def swap_cleaned(
        self, old: tuple[LogSegment, ...], swap: Path, base_offset: int, generation: int
    ) -> bool:
        """Replace ``old`` by the cleaned segment in ``swap``; False (and ``swap`` removed)
        when the log changed since the cleaner's view of it."""
        with self._lock:
            present = {id(s) for s in self._local.segments}
            if (
                self._offline is not None
                or self._local.generation != generation
                or any(id(s) not in present for s in old)
                or old[-1] is self._local.segments[-1]
            ):
                swap.unlink(missing_ok=True)
                return False
            try:
                self._local.replace_segments(old, swap, base_offset)
            except OSError as exc:
                self._offline = str(exc)
                raise KafkaStorageError(f"cannot swap a cleaned segment in: {exc}") from exc
            return True

    def set_cleaner_point(self, offset: int, generation: int) -> bool:
        """Everything below ``offset`` is clean, unless the log changed since ``generation``."""
        with self._lock:
            if self._offline is not None or self._local.generation != generation:
                return False
            try:
                self._local.set_cleaner_point(offset)
            except OSError as exc:
                self._offline = str(exc)
                raise KafkaStorageError(f"cannot record the cleaner point: {exc}") from exc
            return True

    @property
    def cleaner_point(self) -> int:
        return self._local.cleaner_point
