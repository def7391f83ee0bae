"""The leader-epoch cache persisted to its ``leader-epoch-checkpoint`` file.

Every change is written (atomically, fsynced) before the call returns. Changes are rare — a
new leader epoch, a truncation, a log start offset move — and a follower must never lose an
epoch boundary it has acknowledged data under, so there is no deferred write.
"""

from __future__ import annotations

from pathlib import Path

from services.broker_agent.log import checkpoint
from services.broker_agent.log.epoch_cache import LeaderEpochCache

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class LeaderEpochFileCache(LeaderEpochCache):
    """A LeaderEpochCache loaded from, and written through to, the log directory's file."""

    def __init__(self, directory: Path) -> None:
        self._path: Path | None = None  # no writes while loading
        super().__init__(checkpoint.read_epoch_entries(directory / LEADER_EPOCH_CHECKPOINT))
        self._path = directory / LEADER_EPOCH_CHECKPOINT

    def _persisted(self, changed: bool) -> bool:
        if changed and self._path is not None:
            checkpoint.write_epoch_entries(self._path, self.pairs())
        return changed

    def assign(self, epoch: int, start_offset: int) -> bool:
        return self._persisted(super().assign(epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> bool:
        return self._persisted(super().truncate_from_end(end_offset))

    def truncate_from_start(self, start_offset: int) -> bool:
        return self._persisted(super().truncate_from_start(start_offset))

    def clear(self) -> bool:
        return self._persisted(super().clear())
