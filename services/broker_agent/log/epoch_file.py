"""The leader-epoch cache persisted to its ``leader-epoch-checkpoint`` file.

Every change is written (atomically, fsynced) before the call returns — except a change the
caller asks to defer (``assign(..., defer=True)``: a LeaderAndIsr taking a new leader epoch on
thousands of partitions at once). A deferred change is made durable by the owner's batch
(``pending()`` hands out the content to write, ``durable.BatchWriter`` writes it) before the
LeaderAndIsr is answered and before the replica accepts appends under that epoch. A follower
must never lose an epoch boundary it has acknowledged data under, so nothing is left pending
beyond that.

Each change bumps a version. Direct writes and batch renames both happen under one lock and
record the version they made durable, so a batch holding an older snapshot never overwrites a
newer content written directly meanwhile (a truncation, say).
"""

from __future__ import annotations

import threading
from pathlib import Path

from services.broker_agent.log import checkpoint
from services.broker_agent.log.durable import PendingFile
from services.broker_agent.log.epoch_cache import LeaderEpochCache

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class LeaderEpochFileCache(LeaderEpochCache):
    """A LeaderEpochCache loaded from, and written through to, the log directory's file."""

    def __init__(self, directory: Path) -> None:
        self._path: Path | None = None  # no writes while loading
        self._write_lock = threading.Lock()
        self._version = 0
        self._durable_version = 0
        self._defer = False
        super().__init__(checkpoint.read_epoch_entries(directory / LEADER_EPOCH_CHECKPOINT))
        self._path = directory / LEADER_EPOCH_CHECKPOINT

    @property
    def unsynced(self) -> bool:
        """True while a deferred change is not yet on disk."""
        return self._durable_version < self._version

    def pending(self, key: object = None) -> PendingFile | None:
        """The file content that makes the deferred changes durable (None: nothing pending).

        Callers hold the log's lock, so the snapshot is consistent.
        """
        if self._path is None or not self.unsynced:
            return None
        version = self._version
        data = checkpoint.epoch_entries_bytes(self.pairs())

        def commit() -> bool:  # called under self._write_lock by the batch writer
            if version <= self._durable_version:
                return False
            self._durable_version = version
            return True

        return PendingFile(self._path, data, key, self._write_lock, commit)

    def _persisted(self, changed: bool) -> bool:
        if changed and self._path is not None:
            self._version += 1
            if not self._defer:
                version, pairs = self._version, self.pairs()
                with self._write_lock:
                    checkpoint.write_epoch_entries(self._path, pairs)
                    self._durable_version = max(self._durable_version, version)
        return changed

    def assign(self, epoch: int, start_offset: int, *, defer: bool = False) -> bool:
        self._defer = defer
        try:
            return self._persisted(super().assign(epoch, start_offset))
        finally:
            self._defer = False

    def truncate_from_end(self, end_offset: int) -> bool:
        return self._persisted(super().truncate_from_end(end_offset))

    def truncate_from_start(self, start_offset: int) -> bool:
        return self._persisted(super().truncate_from_start(start_offset))

    def clear(self) -> bool:
        return self._persisted(super().clear())
