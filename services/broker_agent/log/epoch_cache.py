"""The leader-epoch cache: which leader epoch wrote which range of offsets.

Followers truncate by asking the leader where their last epoch ends (OffsetsForLeaderEpoch,
KIP-101/279, seed 001), so this cache must answer exactly as Kafka's LeaderEpochFileCache
does. It is pure: mutators return whether anything changed and the ``Log`` persists the
entries (``epoch_file``: the epoch journal, or a standalone log's
``leader-epoch-checkpoint``) when they did.

Invariant: epochs and start offsets both strictly increase along the entry list.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, order=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Ordered ``(epoch, start offset)`` entries with Kafka's assign/truncate/lookup rules."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, s) for e, s in zip(self._epochs, self._starts, strict=True)]

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._starts[0]) if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        A repeat of the latest epoch at a later offset is a no-op (an epoch's start never
        moves forward). Any entry that would break monotonicity — an epoch >= the new one or a
        start offset >= the new one — is dropped first, as Kafka does: the log has diverged
        and the newest knowledge wins.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and self._starts[-1] <= start_offset:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetsForLeaderEpoch, Kafka's ``endOffsetFor``.

        - undefined requested epoch, empty cache, or an epoch above every known one:
          ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)``;
        - the latest epoch: ``(latest, log_end_offset)``;
        - otherwise the end offset is the start of the first epoch above the requested one,
          and the epoch is the largest known epoch <= requested — or the requested epoch
          itself when it is below every known epoch (its data has been deleted; the
          follower should start at the leader's first known epoch).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range contains ``offset`` (None before the first entry)."""
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[index] if index >= 0 else None

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset < 0:
            return False
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep == len(self._starts):
            return False
        del self._epochs[keep:], self._starts[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget epochs wholly before ``start_offset``; the one covering it now starts there.

        Exclusive: truncating at an entry's own start offset keeps that entry unchanged.
        """
        if start_offset < 0:
            return False
        covering = bisect.bisect_right(self._starts, start_offset) - 1
        if covering < 0 or (covering == 0 and self._starts[0] == start_offset):
            return False
        del self._epochs[:covering], self._starts[:covering]
        self._starts[0] = start_offset
        return True

    def clear(self) -> bool:
        changed = bool(self._epochs)
        self._epochs.clear()
        self._starts.clear()
        return changed
