"""The leader-epoch cache, persisted on every change.

A log under a LogManager persists to the data directory's journal (``epoch_journal``: one
append and one fdatasync per batch of partitions); a standalone ``Log`` to its own
``leader-epoch-checkpoint`` file in Kafka's format (atomic replace). A log from before the
journal existed is read from that file once; its next change goes to the journal, which wins
from then on.

Every change is durable before the call returns — except one the caller asks to defer
(``assign(..., defer=True)``: a LeaderAndIsr taking a new leader epoch on thousands of
partitions at once). The owner then ``stage``\\ s the deferred entries into the journal, syncs
the journal once for the whole batch, and reports the staged version back (``synced``). That
happens before the LeaderAndIsr is answered and before the replica accepts appends under the
new epoch: a follower must never lose an epoch boundary it has acknowledged data under.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from services.broker_agent.log import checkpoint
from services.broker_agent.log.epoch_cache import LeaderEpochCache
from services.broker_agent.log.epoch_journal import EpochJournal, TopicPartition

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


@dataclass(frozen=True)
class EpochStore:
    """Where a LogManager's log keeps its leader epochs: the shared journal under ``key``.
    ``entries`` are the journal's for this log (None: read the log's old checkpoint file)."""

    journal: EpochJournal
    key: TopicPartition
    entries: list[tuple[int, int]] | None = None


class LeaderEpochFileCache(LeaderEpochCache):
    """A LeaderEpochCache written through to ``store``'s journal, or without one to
    ``directory``'s checkpoint file. Callers hold the log's lock around every method."""

    def __init__(self, directory: Path, store: EpochStore | None = None) -> None:
        self._ready = False  # the constructor's own assignments write nothing
        self._journal = store.journal if store is not None else None
        self._key = store.key if store is not None else None
        self._path = directory / LEADER_EPOCH_CHECKPOINT
        self._version = 0
        self._durable_version = 0
        self._defer = False
        entries = store.entries if store is not None else None
        if entries is None:
            entries = checkpoint.read_epoch_entries(self._path)
        super().__init__(entries)
        self._ready = True

    @property
    def unsynced(self) -> bool:
        """True while a deferred change is not yet on disk."""
        return self._durable_version < self._version

    def stage(self) -> int | None:
        """Queue the deferred entries in the journal; the version to report to ``synced``
        once the journal is synced (None: nothing owed)."""
        if not self.unsynced or self._journal is None:
            return None
        self._journal.stage(self._key, self.pairs())  # type: ignore[arg-type]
        return self._version

    def synced(self, version: int) -> None:
        self._durable_version = max(self._durable_version, version)

    def _persisted(self, changed: bool) -> bool:
        if changed and self._ready:
            self._version += 1
            if not self._defer:
                pairs = self.pairs()
                if self._journal is not None:
                    self._journal.record(self._key, pairs)  # type: ignore[arg-type]
                else:
                    checkpoint.write_epoch_entries(self._path, pairs)
                self._durable_version = self._version
        return changed

    def assign(self, epoch: int, start_offset: int, *, defer: bool = False) -> bool:
        # A standalone log has no batch to defer to: it writes at once.
        self._defer = defer and self._journal is not None
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
