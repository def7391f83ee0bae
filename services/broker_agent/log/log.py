"""One replica's log: ``<data_dir>/<topic>-<partition>/``, Kafka's UnifiedLog in miniature.

The leader assigns offsets and stamps its epoch (``append_as_leader``); a follower stores the
leader's bytes verbatim (``append_as_follower``). Reads return whole batches. The leader-epoch
cache, the recovery point and the segments are kept consistent through truncation, retention
and crash recovery. High watermark and log start offset live in memory here and are made
durable by the LogManager's per-directory checkpoints, as in Kafka.

Calls are synchronous and serialised by a per-log lock; an OSError turns the log offline
(every later call raises KafkaStorageError) because its in-memory state can no longer be
trusted to match the disk.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from services.broker_agent.log.batch import (
    BatchHeader,
    Record,
    build_batch,
    check_produced,
    decode_records,
    stamp,
    validated_batches,
)
from services.broker_agent.log.cleaning import LogCleaning
from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.epoch_cache import LeaderEpochCache
from services.broker_agent.log.epoch_file import EpochStore, LeaderEpochFileCache
from services.broker_agent.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    storage_errors,
)
from services.broker_agent.log.guard import guarded
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.local_log import LocalLog
from services.broker_agent.log.log_upkeep import LogUpkeep
from services.broker_agent.log.producer_log import ProducerLog
from services.broker_agent.log.results import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchDataInfo,
    LogAppendInfo,
    TimestampAndOffset,
)


def _system_clock() -> int:
    return time.time_ns() // 1_000_000


class Log(LogUpkeep, LogCleaning):
    """A partition replica's log. Create with :meth:`Log.open`."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        handles: FileHandleCache,
        clock: Callable[[], int],
    ) -> None:
        self.directory = directory
        self._local = LocalLog(directory, config, handles)
        self._clock = clock
        self._lock = threading.RLock()
        self._offline: str | None = None
        self._epochs = LeaderEpochCache()
        self._producers = ProducerLog(self.directory)
        self._log_start_offset = 0
        self._high_watermark = 0

    @classmethod
    def open(
        cls,
        directory: Path | str,
        config: LogConfig | None = None,
        *,
        handles: FileHandleCache | None = None,
        high_watermark: int = 0,
        log_start_offset: int = 0,
        clock: Callable[[], int] | None = None,
        epochs: EpochStore | None = None,
    ) -> Log:
        """Open (creating if needed) and recover the log in ``directory``. The watermarks
        are the LogManager's checkpointed values, clamped to what survived recovery; its
        leader epochs live in ``epochs`` (the manager's journal) or, standalone, in the
        log's own checkpoint file."""
        log = cls(
            Path(directory),
            config or LogConfig(),
            handles or FileHandleCache(),
            clock or _system_clock,
        )
        try:
            with log._lock:
                log._load(high_watermark, log_start_offset, epochs)
        except (OSError, CorruptRecordError) as exc:  # the latter: below the recovery point
            log._local.close()
            raise KafkaStorageError(f"cannot open log {directory}: {exc}") from exc
        return log

    def _load(self, high_watermark: int, log_start_offset: int, epochs: EpochStore | None) -> None:
        self._local.load(initial_base_offset=max(log_start_offset, 0))
        leo = self.log_end_offset
        self._log_start_offset = min(max(log_start_offset, self._local.first_base_offset), leo)
        self._high_watermark = min(max(high_watermark, self._log_start_offset), leo)
        self._epochs = LeaderEpochFileCache(self.directory, epochs)
        self._epochs.truncate_from_end(leo)
        self._epochs.truncate_from_start(self._log_start_offset)
        self._producers.load(self._log_start_offset, leo, self._local.headers_from)

    # ---------------------------------------------------------------- offsets

    @property
    def config(self) -> LogConfig:
        return self._local.config

    @config.setter
    def config(self, config: LogConfig) -> None:
        """New topic configs apply to later appends, rolls and retention runs."""
        with self._lock:
            self._local.config = config

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self.update_high_watermark(offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark clamped to ``[log_start_offset, log_end_offset]``."""
        with self._lock:
            leo = self.log_end_offset
            self._high_watermark = min(max(offset, self._log_start_offset), leo)
            return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Every offset below this is fsynced."""
        return self._local.recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._local.segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return [segment.base_offset for segment in self._local.segments]

    @property
    def is_offline(self) -> bool:
        return self._offline is not None

    # ---------------------------------------------------------------- appends

    @guarded
    def append_as_leader(
        self,
        records: Sequence[Record],
        leader_epoch: int,
        now_ms: int | None = None,
        producer: tuple[int, int, int] = (-1, -1, -1),
    ) -> LogAppendInfo:
        """Assign the next offsets to ``records``, stamp ``leader_epoch``, append one batch;
        ``now_ms`` (default: the clock) replaces record timestamps of 0. ``producer`` is an
        idempotent producer's (id, epoch, base sequence), checked as in ``append_batch``."""
        now = self._clock() if now_ms is None else now_ms
        batch = build_batch(self.log_end_offset, leader_epoch, records, now, producer)
        return self._append_leader_batch(batch, check_produced(batch), leader_epoch)

    @guarded
    def append_batch_as_leader(
        self, data: bytes | bytearray | memoryview, leader_epoch: int
    ) -> LogAppendInfo:
        """Append a producer's own batch (header and CRC checked, records left alone) at the
        next offset under ``leader_epoch``.

        An idempotent producer's batch is checked against its state first: a duplicate of a
        batch still in the log appends nothing and answers that batch's offsets
        (``LogAppendInfo.duplicate``); a fenced epoch or a sequence gap raises
        InvalidProducerEpochError / OutOfOrderSequenceError.
        """
        return self._append_leader_batch(data, check_produced(data), leader_epoch)

    def _append_leader_batch(
        self, data: bytes | bytearray | memoryview, header: BatchHeader, leader_epoch: int
    ) -> LogAppendInfo:
        if len(data) > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {len(data)} bytes exceeds max.message.bytes "
                f"{self.config.max_message_bytes}"
            )
        if self.config.compact and any(r.key is None for r in decode_records(data)):
            raise InvalidRecordError(
                f"Compacted topic cannot accept message without key in topic partition "
                f"{self.directory.name}."
            )
        duplicate = self._producers.check(header)
        if duplicate is not None:
            return LogAppendInfo.of_duplicate(duplicate, self._log_start_offset)
        first = self.log_end_offset
        batch = stamp(data, first, leader_epoch)
        header = header._replace(base_offset=first, partition_leader_epoch=leader_epoch)
        self._maybe_assign_epoch(leader_epoch, first)
        self._append_local(batch, [header])
        return LogAppendInfo.of([header], len(batch), self._log_start_offset)

    def _append_local(self, data: bytes | bytearray | memoryview, headers: list[BatchHeader]):
        """Append validated batches; snapshot producers when a segment rolled for them."""
        active = self._local.segments[-1]
        self._local.append(data, headers)
        if self._local.segments[-1] is not active:
            self._producers.rolled(self._local.segments[-1].base_offset)
        self._producers.appended(headers)

    @guarded
    def append_as_follower(self, data: bytes | memoryview) -> LogAppendInfo:
        """Append the leader's batches verbatim after checking CRCs and offset order.

        Nothing is written unless every batch is valid. A trailing partial batch (possible in
        a size-capped fetch response) is ignored, as Kafka does.
        """
        views = validated_batches(data, self.log_end_offset)
        if not views:
            return LogAppendInfo(-1, -1, -1, -1, 0, 0, self._log_start_offset)
        for view in views:
            self._maybe_assign_epoch(view.partition_leader_epoch, view.base_offset)
        valid_bytes = sum(view.size for view in views)
        headers = [view.header for view in views]
        self._append_local(memoryview(data)[:valid_bytes], headers)
        return LogAppendInfo.of(headers, valid_bytes, self._log_start_offset)

    @guarded
    def roll(self) -> None:
        """Start a new active segment at the log end offset (no-op if the active is empty)."""
        if self._local.segments[-1].size:
            self._local.roll(self.log_end_offset)
            self._producers.rolled(self.log_end_offset)

    # ------------------------------------------------------------------ reads

    @guarded
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> FetchDataInfo:
        """Whole batches from the one containing ``start_offset``, below ``max_offset``.

        At most ``max_bytes``, except that with ``min_one_batch`` the first batch is
        returned even if larger (so a consumer can always make progress). Consumers pass the
        high watermark as ``max_offset``; followers read to the log end.
        """
        leo = self.log_end_offset
        if not self._log_start_offset <= start_offset <= leo:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} outside [{self._log_start_offset}, {leo}] "
                f"of {self.directory.name}"
            )
        limit = leo if max_offset is None else min(max_offset, leo)
        records = b""
        if start_offset < limit:
            records = self._local.read(start_offset, max_bytes, limit, min_one_batch)
        return FetchDataInfo(
            start_offset, records, self._high_watermark, self._log_start_offset, leo
        )

    @guarded
    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, else the first record with timestamp >= it.

        None when no record is that recent. (The broker clamps "latest" to the high
        watermark for consumers; the log answers for the whole log.)
        """
        if timestamp == EARLIEST_TIMESTAMP:
            epoch = self._epochs.epoch_for_offset(self._log_start_offset)
            return TimestampAndOffset(-1, self._log_start_offset, -1 if epoch is None else epoch)
        if timestamp == LATEST_TIMESTAMP:
            epoch = self._epochs.latest_epoch
            return TimestampAndOffset(-1, self.log_end_offset, -1 if epoch is None else epoch)
        if timestamp < 0:
            raise ValueError(f"invalid ListOffsets timestamp {timestamp}")
        found = self._local.find_offset_by_timestamp(timestamp, self._log_start_offset)
        return None if found is None else TimestampAndOffset(*found)

    # -------------------------------------------------------------- lifecycle

    def flush(self) -> None:
        """fsync every append so far (acks=all); free when nothing changed since last time.

        The fsyncs run without the log's lock, so appends (on the event loop) never wait for
        the disk; concurrent flushes each make what they saw durable.
        """
        with self._lock:
            if self._offline is not None:
                raise KafkaStorageError(f"log {self.directory} is offline: {self._offline}")
            try:
                ticket = self._local.begin_flush()
            except OSError as exc:
                self._offline = str(exc)
                raise KafkaStorageError(f"I/O error in log {self.directory}: {exc}") from exc
        failure: OSError | None = None
        for fd in ticket.fds:
            try:
                if failure is None:
                    os.fsync(fd)
            except OSError as exc:
                failure = exc
            finally:
                os.close(fd)
        with self._lock:
            if failure is not None:
                self._offline = self._offline or str(failure)
                raise KafkaStorageError(f"I/O error in log {self.directory}: {failure}")
            self._local.end_flush(ticket)

    @guarded
    def checkpoint_recovery_point(self) -> None:
        """Persist the recovery point (cheap no-op when unchanged)."""
        self._local.checkpoint_recovery_point()

    @guarded
    def close(self) -> None:
        """Flush, record the recovery point and the producers, release file handles; the log
        goes offline."""
        self._local.flush()
        self._local.checkpoint_recovery_point()
        self._producers.closing(self.log_end_offset)
        self._local.close()
        self._offline = "closed"

    def delete(self) -> None:
        """Remove the directory and everything in it; the log goes offline.

        Works on an offline log too: deleting is how a broken replica is cleaned up.
        """
        with self._lock, storage_errors(f"cannot delete log {self.directory}"):
            self._offline = "deleted"
            self._local.delete()
