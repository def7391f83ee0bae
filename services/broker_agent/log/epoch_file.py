"""The leader-epoch cache, persisted on every change.

A log under a LogManager persists to the data directory's journal (``epoch_journal``: one
append and one fdatasync per batch of partitions); a standalone ``Log`` to its own
``leader-epoch-checkpoint`` file in Kafka's format (atomic replace). A log from before the
journal existed is read from that file once; its next change goes to the journal, which wins
from then on.

Every change is durable before the call returns — except one the caller asks to defer
(``assign(..., defer=True)``: a LeaderAndIsr taking a new leader epoch on thousands of
partitions at once). A deferred change's record is staged in the journal at once (under the
log's lock, so records stay in the order of the changes) but not synced; ``owed`` gives its
number while it is not on disk, and the owner syncs the journal once for the whole batch. That
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
    ``directory``'s checkpoint file. Callers hold the log's lock around every method (``owed``
    and ``unsynced`` only read: they need not)."""

    def __init__(self, directory: Path, store: EpochStore | None = None) -> None:
        self._ready = False  # the constructor's own assignments write nothing
        self._journal = store.journal if store is not None else None
        self._key = store.key if store is not None else None
        self._path = directory / LEADER_EPOCH_CHECKPOINT
        self._owed = 0  # the journal number of the newest deferred change's record (0: none)
        entries = store.entries if store is not None else None
        if entries is None:
            entries = checkpoint.read_epoch_entries(self._path)
        super().__init__(entries)
        self._ready = True

    @property
    def unsynced(self) -> bool:
        """True while a deferred change is not yet on disk."""
        owed = self._owed
        return owed != 0 and not self._journal.is_synced(owed)  # type: ignore[union-attr]

    def owed(self) -> int | None:
        """The journal number of a deferred change's record not yet on disk (None: nothing
        owed): the journal's next ``sync`` writes it."""
        return self._owed if self.unsynced else None

    def _persisted(self, changed: bool, defer: bool = False) -> bool:
        if changed and self._ready:
            pairs = self.pairs()
            if self._journal is None:
                checkpoint.write_epoch_entries(self._path, pairs)
            elif defer:
                self._owed = self._journal.stage(self._key, pairs)  # type: ignore[arg-type]
            else:  # also writes any deferred record staged before it
                self._journal.record(self._key, pairs)  # type: ignore[arg-type]
        return changed

    def assign(self, epoch: int, start_offset: int, defer: bool = False) -> bool:
        # A standalone log has no batch to defer to: it writes at once.
        changed = LeaderEpochCache.assign(self, epoch, start_offset)  # no super object
        return self._persisted(changed, defer and self._journal is not None)

    def truncate_from_end(self, end_offset: int) -> bool:
        return self._persisted(super().truncate_from_end(end_offset))

    def truncate_from_start(self, start_offset: int) -> bool:
        return self._persisted(super().truncate_from_start(start_offset))

    def clear(self) -> bool:
        return self._persisted(super().clear())
