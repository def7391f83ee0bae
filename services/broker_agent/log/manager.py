"""All the replica logs of one broker agent, under one data directory (Kafka's LogManager).

Layout::

    <data_dir>/
        replication-offset-checkpoint     high watermark of every partition
        log-start-offset-checkpoint       log start offset of every partition
        leader-epoch-journal              leader-epoch entries of every partition
        <topic>-<partition>/              one Log (segments, recovery-point,
                                          partition.metadata)

Every log shares one bounded LRU of file descriptors, so an agent can host tens of thousands
of replicas. The watermark checkpoints are written when the owner asks (periodically and on
shutdown), as Kafka does; each write is atomic.

A LeaderAndIsr naming thousands of partitions uses the batch path: ``create_logs`` opens the
new logs on worker threads, ``get_or_create(..., defer_sync=True)`` only changes memory and
deferred epoch assignments only stage their journal records, and ``sync_pending`` then makes
everything owed durable at once: new topic-id files in one batch (``durable.BatchWriter``),
every new leader epoch in one append to the epoch journal (``epoch_journal``) — instead of two
fsyncs per file, serially, per replica.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from services.broker_agent.log import checkpoint
from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.durable import BatchWriter, PendingFile, chunked_map
from services.broker_agent.log.epoch_file import EpochStore
from services.broker_agent.log.epoch_journal import EpochJournal
from services.broker_agent.log.errors import (
    InconsistentTopicIdError,
    KafkaStorageError,
    storage_errors,
)
from services.broker_agent.log.handles import DEFAULT_MAX_OPEN, FileHandleCache
from services.broker_agent.log.local_log import DELETE_SUFFIX, remove_log_directory
from services.broker_agent.log.log import Log

HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
PARTITION_METADATA = "partition.metadata"

TopicPartition = tuple[str, int]
LogError = KafkaStorageError | ValueError
SYNC_WORKERS = 4  # fsync and file creation wait on the disk, not the CPU

# Kafka's legal topic names; anything else could escape the data directory.
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def log_dir_name(topic: str, partition: int) -> str:
    if not _TOPIC_NAME.match(topic) or topic in (".", ".."):
        raise ValueError(f"illegal topic name {topic!r}")
    if partition < 0:
        raise ValueError(f"illegal partition {partition}")
    return f"{topic}-{partition}"


def parse_log_dir_name(name: str) -> TopicPartition | None:
    """``(topic, partition)`` for a log directory name; None for anything else."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not partition.isdigit() or not _TOPIC_NAME.match(topic):
        return None
    return topic, int(partition)


class LogManager:
    """Creates, finds, checkpoints, retains and deletes the logs under ``data_dir``.

    Loading happens in the constructor: every log directory is opened and recovered. A log
    that cannot be opened is recorded in ``offline`` and answers KafkaStorageError.
    """

    def __init__(
        self,
        data_dir: Path | str,
        *,
        default_config: LogConfig | None = None,
        max_open_files: int = DEFAULT_MAX_OPEN,
        clock: Callable[[], int] | None = None,
        use_syncfs: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.default_config = default_config or LogConfig()
        self.handles = FileHandleCache(max_open_files)
        self._clock = clock
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        self._by_topic: dict[str, dict[int, Log]] = {}
        self._topic_ids: dict[TopicPartition, str] = {}
        self._unsynced_topic_ids: dict[TopicPartition, str] = {}
        self._new_dirs = False  # log directories created since the data dir was last fsynced
        self._topic_configs: dict[str, LogConfig] = {}
        self.offline: dict[TopicPartition, str] = {}
        self._pool = ThreadPoolExecutor(max_workers=SYNC_WORKERS, thread_name_prefix="log-io")
        self._writer = BatchWriter(self._pool, use_syncfs)
        # Journal entries of logs that failed to open: kept through compactions.
        self._offline_epochs: dict[TopicPartition, list[tuple[int, int]]] = {}
        # What each offsets checkpoint file holds (written by this process), by file name.
        self._written: dict[str, dict[TopicPartition, int]] = {}
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._journal = EpochJournal(self.data_dir)
        self._load()

    def _load(self) -> None:
        high_watermarks = checkpoint.read_partition_offsets(
            self.data_dir / HIGH_WATERMARK_CHECKPOINT
        )
        start_offsets = checkpoint.read_partition_offsets(
            self.data_dir / LOG_START_OFFSET_CHECKPOINT
        )
        journaled = self._journal.snapshot
        for path in sorted(self.data_dir.iterdir()):
            if path.is_dir() and path.name.endswith(DELETE_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)  # a deletion interrupted by a crash
                continue
            tp = parse_log_dir_name(path.name) if path.is_dir() else None
            if tp is None:
                continue
            try:
                hw, start = high_watermarks.get(tp, 0), start_offsets.get(tp, 0)
                self._add(tp, self._open(path, tp, hw, start, journaled.get(tp)))
                topic_id = checkpoint.read_topic_id(path / PARTITION_METADATA)
                if topic_id:
                    self._topic_ids[tp] = topic_id
            except KafkaStorageError as exc:
                self.offline[tp] = str(exc)
                if tp in journaled:
                    self._offline_epochs[tp] = journaled[tp]
        self._journal.snapshot = {}
        # Rewrite the journal without deleted logs' records and with the logs read from an
        # old per-log checkpoint file, so the next start reads the journal alone.
        if set(journaled) - self._logs.keys() - self._offline_epochs.keys() or any(
            tp not in journaled and log.epoch_pairs() for tp, log in self._logs.items()
        ):
            self._journal.compact(self._epoch_records)

    def _open(
        self,
        path: Path,
        tp: TopicPartition,
        high_watermark: int,
        start: int,
        epochs: list[tuple[int, int]] | None,
    ) -> Log:
        return Log.open(
            path,
            self.config_for(tp[0]),
            handles=self.handles,
            high_watermark=high_watermark,
            log_start_offset=start,
            clock=self._clock,
            epochs=EpochStore(self._journal, tp, epochs),
        )

    # --------------------------------------------------------------- lookups

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def update_topic_config(self, topic: str, config: LogConfig | Mapping[str, str]) -> None:
        """Apply a topic's (changed) configs to its existing and future logs.

        ``config`` may be Kafka-named strings (``{"retention.ms": "60000"}``), overlaid on the
        default config; a bad value raises ValueError before anything changes.
        """
        if not isinstance(config, LogConfig):
            config = LogConfig.from_properties(config, self.default_config)
        with self._lock:
            if self._topic_configs.get(topic) == config:
                return  # every log of the topic has it already
            self._topic_configs[topic] = config
            for log in self._by_topic.get(topic, {}).values():
                log.config = config

    def get(self, topic: str, partition: int) -> Log | None:
        with self._lock:
            self._raise_if_offline((topic, partition))
            return self._logs.get((topic, partition))

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def topic_id(self, topic: str, partition: int) -> str | None:
        return self._topic_ids.get((topic, partition))

    def get_or_create(
        self,
        topic: str,
        partition: int,
        topic_id: str = "",
        config: LogConfig | Mapping[str, str] | None = None,
        *,
        defer_sync: bool = False,
    ) -> Log:
        """The partition's log, created empty if absent.

        ``config`` (if given) becomes the topic's config. A non-empty ``topic_id`` must match
        the one recorded in the directory: a different one means a stale log of a deleted
        topic with the same name (InconsistentTopicIdError). With ``defer_sync`` a new topic id
        is only recorded in memory; ``sync_pending`` writes it.
        """
        tp = (topic, partition)
        with self._lock:
            log = self._logs.get(tp)
            if (
                log is not None
                and config is None
                and not log.is_offline
                and not (self.offline and tp in self.offline)
                and (not topic_id or self._topic_ids.get(tp) == topic_id)
            ):
                return log  # the usual case in a LeaderAndIsr: nothing to check or record
            # An open log's name was checked when it was created or loaded.
            name = log_dir_name(topic, partition) if log is None else f"{topic}-{partition}"
            self._raise_if_offline(tp)
            if config is not None:
                self.update_topic_config(topic, config)
            known_id = self._topic_ids.get(tp)
            if topic_id and known_id and known_id != topic_id:
                raise InconsistentTopicIdError(f"{name} holds topic id {known_id}, not {topic_id}")
            if log is None:
                log = self._add(tp, self._open(self.data_dir / name, tp, 0, 0, []))
                self._new_dirs = True
            if topic_id and not known_id:
                if defer_sync:
                    self._unsynced_topic_ids[tp] = topic_id
                else:
                    with storage_errors(f"cannot record the topic id of {name}"):
                        checkpoint.write_topic_id(log.directory / PARTITION_METADATA, topic_id)
                self._topic_ids[tp] = topic_id
            return log

    def create_logs(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, LogError]:
        """Open (creating) the logs of ``tps`` not open yet, several at once on worker threads.

        Blocking: call it from a thread. Returns what failed (KafkaStorageError, or ValueError
        for an illegal name); the others are then found by ``get_or_create`` without I/O.
        """
        with self._lock:
            missing = [tp for tp in dict.fromkeys(tps) if tp not in self._logs]
            missing = [tp for tp in missing if tp not in self.offline]

        def open_one(tp: TopicPartition) -> Log | LogError:
            try:
                return self._open(self.data_dir / log_dir_name(*tp), tp, 0, 0, [])
            except (KafkaStorageError, ValueError) as exc:
                return exc

        failures: dict[TopicPartition, LogError] = {}
        opened = chunked_map(self._pool, open_one, missing)
        with self._lock:
            for tp, outcome in zip(missing, opened, strict=True):
                if isinstance(outcome, Log):
                    self._add(tp, outcome)
                    self._new_dirs = True
                else:
                    failures[tp] = outcome
        return failures

    def sync_pending(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, str]:
        """Make what ``tps`` owe the disk durable in one batch; returns the failures.

        What they owe: a deferred ``partition.metadata`` and leader-epoch entries each, and
        the data directory entry of a new log. A log whose file could not be written goes
        offline. Blocking: call it from a thread.
        """
        files: list[PendingFile] = []
        with self._lock:
            extra_dirs = [self.data_dir] if self._new_dirs else []
            self._new_dirs = False
            logs, unsynced_ids = self._logs, self._unsynced_topic_ids
            owed = [(tp, log) for tp in dict.fromkeys(tps) if (log := logs.get(tp)) is not None]
            for tp, log in owed if unsynced_ids else ():
                topic_id = unsynced_ids.get(tp)
                if topic_id is not None:
                    path = log.directory / PARTITION_METADATA
                    files.append(PendingFile(path, checkpoint.topic_id_bytes(topic_id), tp))
        staged = [(tp, log) for tp, log in owed if log.epoch_record_owed() is not None]
        try:
            failures = self._writer.write_batch(files, extra_dirs)
        except OSError as exc:  # the data directory itself: every new log is suspect
            failures = {f.key: exc for f in files}
            failures.update({tp: exc for tp, _log in owed})
        if staged:  # their records were staged when deferred: one sync writes them all
            try:
                self._journal.sync()
            except OSError as exc:
                failures.update({tp: exc for tp, _log in staged})
        reasons: dict[TopicPartition, str] = {}
        with self._lock:
            for f in files:  # the topic ids now on disk
                if f.key not in failures:
                    self._unsynced_topic_ids.pop(f.key, None)  # type: ignore[call-overload]
            for tp, exc in failures.items():
                reason = f"cannot write the metadata of {tp[0]}-{tp[1]}: {exc}"
                reasons[tp] = reason  # type: ignore[index]
                log = self._logs.get(tp)  # type: ignore[arg-type]
                if log is not None:
                    log.mark_offline(reason)
        return reasons

    def delete(self, topic: str, partition: int) -> bool:
        """Remove the partition's log and its directory (StopReplica with delete).

        An offline log is removed too: deleting is how a broken replica gets cleaned up.
        """
        tp = (topic, partition)
        with self._lock:
            self._topic_ids.pop(tp, None)
            self._unsynced_topic_ids.pop(tp, None)
            was_offline = self.offline.pop(tp, None) is not None
            log = self._logs.pop(tp, None)
            self._by_topic.get(topic, {}).pop(partition, None)
            self._offline_epochs.pop(tp, None)
            if log is not None:
                log.delete()
            elif was_offline:
                with storage_errors(f"cannot delete {topic}-{partition}"):
                    remove_log_directory(self.data_dir / log_dir_name(topic, partition))
            # Its journal entries go too, with the next sync: not one fdatasync per partition
            # of a deleted topic. Until then nothing needs them gone: a start drops records of
            # logs that no longer exist, a new log of the same name starts empty, and its first
            # durable epoch record follows this one in the file.
            self._journal.stage(tp, [])
            return log is not None or was_offline

    # ----------------------------------------------------------- maintenance

    def checkpoint_high_watermarks(self) -> None:
        self._write_offsets(HIGH_WATERMARK_CHECKPOINT, lambda log: log.high_watermark)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_offsets(LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset)

    def checkpoint_recovery_points(self) -> None:
        """Persist each log's recovery point (only those that moved are rewritten), and
        compact the epoch journal once it has grown well past its live size."""
        for log in self._online_logs():
            log.checkpoint_recovery_point()
        if self._journal.needs_compaction():
            with storage_errors("cannot compact the leader-epoch journal"):
                self._journal.compact(self._epoch_records)

    def flush_all(self) -> None:
        for log in self._online_logs():
            log.flush()

    def run_retention(self, now_ms: int | None = None) -> dict[TopicPartition, int]:
        """Apply retention to every log; returns the segments deleted per log that lost any
        (their log start moved: leaders tell their followers).

        A log whose disk fails is marked offline and skipped; the others still run.
        """
        deleted = {}
        for tp, log in self.all_logs().items():
            if log.is_offline:
                continue
            try:
                count = log.delete_old_segments(now_ms)
            except KafkaStorageError as exc:
                self.offline[tp] = str(exc)
                continue
            if count:
                deleted[tp] = count
        return deleted

    def close(self) -> None:
        """Flush and close every log, then write the watermark checkpoints."""
        with self._lock:
            for log in self._online_logs():
                log.close()
            self.checkpoint_high_watermarks()
            self.checkpoint_log_start_offsets()
            self.handles.close_all()
            self._journal.close()
        self._pool.shutdown(wait=True)

    # ------------------------------------------------------------- internals

    def _epoch_records(self) -> list[tuple[TopicPartition, list[tuple[int, int]]]]:
        """Every log's leader-epoch entries, for a journal compaction (each log's lock in
        turn, never the manager's and a log's at once with the journal's)."""
        with self._lock:
            logs = list(self._logs.items())
            kept = list(self._offline_epochs.items())
        return [(tp, log.epoch_pairs()) for tp, log in logs] + kept

    def _add(self, tp: TopicPartition, log: Log) -> Log:
        self._logs[tp] = log
        self._by_topic.setdefault(tp[0], {})[tp[1]] = log
        return log

    def _online_logs(self) -> list[Log]:
        return [log for log in self.all_logs().values() if not log.is_offline]

    def _raise_if_offline(self, tp: TopicPartition) -> None:
        reason = self.offline.get(tp) if self.offline else None
        if reason is None and (log := self._logs.get(tp)) is not None and log.is_offline:
            reason = f"log {tp[0]}-{tp[1]} is offline"
        if reason is not None:
            raise KafkaStorageError(reason)

    def _write_offsets(self, name: str, value: Callable[[Log], int]) -> None:
        """Rewrite an offsets checkpoint, unless it already holds exactly these offsets (an
        idle broker with 100,000 logs would otherwise format and sync them every interval)."""
        with self._lock:
            offsets = {tp: value(log) for tp, log in self._logs.items()}
        if self._written.get(name) == offsets:
            return
        with storage_errors(f"cannot write {name}"):
            checkpoint.write_partition_offsets(self.data_dir / name, offsets)
        self._written[name] = offsets
