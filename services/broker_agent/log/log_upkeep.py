"""The log's upkeep: truncation, retention and the leader-epoch cache (part of ``Log``).

Split from ``log`` for size: ``Log`` inherits these methods, which work on its state (the
segments, the epoch cache, the producer state, the offsets) under its lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.epoch_cache import EpochEntry, LeaderEpochCache
from services.broker_agent.log.epoch_file import LeaderEpochFileCache
from services.broker_agent.log.errors import OffsetOutOfRangeError
from services.broker_agent.log.guard import guarded
from services.broker_agent.log.local_log import LocalLog
from services.broker_agent.log.producer_log import ProducerLog
from services.broker_agent.log.retention import deletable_prefix


class LogUpkeep:
    directory: Path
    _lock: threading.RLock
    _offline: str | None
    _local: LocalLog
    _epochs: LeaderEpochCache
    _producers: ProducerLog
    _log_start_offset: int
    _high_watermark: int
    _clock: Callable[[], int]
    # Properties of ``Log``:
    config: LogConfig
    log_end_offset: int

    # ------------------------------------------------------ truncation, retention

    @guarded
    def truncate_to(self, offset: int) -> bool:
        """Drop every record at ``offset`` or beyond (a follower's divergent suffix); False
        if there was nothing to drop. The epoch cache is trimmed to the log end either way: a
        stale entry there (a leader that never appended) must not survive."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            self._epochs.truncate_from_end(self.log_end_offset)
            return False
        if offset < self._local.first_base_offset:
            self._truncate_fully(offset)
            return True
        self._local.truncate_to(offset)
        leo = self.log_end_offset
        self._epochs.truncate_from_end(leo)
        self._log_start_offset = min(self._log_start_offset, leo)
        self._high_watermark = min(self._high_watermark, leo)
        self._producers.truncated(self._log_start_offset, leo, self._local.headers_from)
        return True

    @guarded
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete everything and continue empty at ``offset`` (the follower is so far behind
        that the leader no longer has the data after its log end)."""
        if offset < 0:
            raise ValueError(f"cannot start a log at negative offset {offset}")
        self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        self._local.truncate_fully(offset)
        self._epochs.clear()
        self._producers.truncated_fully()
        self._log_start_offset = offset
        self._high_watermark = offset

    @guarded
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Advance the log start offset (DeleteRecords, or the leader's, on a follower).

        Raises OffsetOutOfRangeError beyond the high watermark, as Kafka does. Segments
        wholly below the new start are deleted by the next retention run.
        """
        if offset <= self._log_start_offset:
            return False
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}, beyond the high watermark "
                f"{self._high_watermark}"
            )
        self._set_log_start_offset(offset)
        return True

    @guarded
    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention.ms / retention.bytes (cleanup.policy delete) and the log start
        offset; returns segments deleted."""
        config = self.config
        now = self._clock() if now_ms is None else now_ms
        self._producers.expire(now, config.producer_id_expiration_ms)
        count = deletable_prefix(
            self._local.summaries(),
            now_ms=now,
            retention_ms=config.retention_ms if config.delete else -1,
            retention_bytes=config.retention_bytes if config.delete else -1,
            high_watermark=self._high_watermark,
            log_start_offset=self._log_start_offset,
        )
        if count:
            self._local.delete_oldest(count)
            self._set_log_start_offset(max(self._log_start_offset, self._local.first_base_offset))
        return count

    def _set_log_start_offset(self, offset: int) -> None:
        self._log_start_offset = offset
        self._epochs.truncate_from_start(offset)
        self._producers.log_start_moved(offset)

    # ----------------------------------------------------------- leader epochs

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs.latest_epoch

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return self._epochs.entries()

    def epoch_pairs(self) -> list[tuple[int, int]]:
        """The leader-epoch entries as ``(epoch, start offset)``, read under the lock."""
        with self._lock:
            return self._epochs.pairs()

    @guarded
    def assign_epoch_start_offset(
        self, epoch: int, start_offset: int, *, defer_sync: bool = False
    ) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a new leader does this at its
        log end offset before accepting writes).

        With ``defer_sync`` the entries are staged in the journal but not synced: the caller
        syncs the journal for a whole batch (``epoch_record_owed`` says what this log waits
        for) and must not accept appends until it is durable.
        """
        if isinstance(self._epochs, LeaderEpochFileCache):
            self._epochs.assign(epoch, start_offset, defer_sync)
        else:
            self._epochs.assign(epoch, start_offset)

    def epoch_record_owed(self) -> int | None:
        """The journal number of a deferred leader-epoch change not yet on disk (None:
        nothing owed, or the log is offline). Without the lock: the deferred change was made
        before this call, and only the journal's sync clears it meanwhile."""
        epochs = self._epochs
        if self._offline is not None or not isinstance(epochs, LeaderEpochFileCache):
            return None
        return epochs.owed()

    def mark_offline(self, reason: str) -> None:
        """A write this log depends on failed elsewhere (a batched checkpoint): as after any
        I/O error, its state can no longer be trusted to match the disk."""
        with self._lock:
            if self._offline is None:
                self._offline = reason

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: ``(epoch, end offset)``, (-1, -1) when unknown."""
        with self._lock:
            return self._epochs.end_offset_for(requested_epoch, self.log_end_offset)

    def _maybe_assign_epoch(self, epoch: int, start_offset: int) -> None:
        latest = self._epochs.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            self._epochs.assign(epoch, start_offset)
