"""Idempotent producers' state in one log (Kafka's ProducerStateManager, KIP-98).

For every producer id with a batch in the log, the entry keeps its producer epoch and the
metadata of its last ``RETAINED_BATCHES`` batches (sequence range and offsets). The leader asks
``check`` before appending a producer's batch:

- same epoch and the same sequence range as a retained batch: a **duplicate** (a retry whose
  answer was lost); the leader answers with the original offsets and appends nothing;
- an epoch older than the entry's: **fenced** (InvalidProducerEpochError);
- a newer epoch: its first sequence must be 0 (the producer reset its sequences);
- the same epoch: the first sequence must follow the last one (wrapping after 2**31 - 1),
  else OutOfOrderSequenceError — a gap, or a batch older than those retained;
- an unknown producer (never seen, or its batches are gone through retention or expiry) must
  start at sequence 0, else UnknownProducerIdError: a batch overtaken by a later one of the same
  producer (requests served out of order) is refused rather than stored after it, and a
  producer whose state is gone restarts its sequences under a new epoch (KIP-360).

Every appended batch, leader or follower, goes through ``update`` (a follower only records,
it does not judge: the leader did), so a follower that becomes leader already holds the state.
The state covers the log up to its end offset; a log rebuilds it after a restart or a
truncation from a snapshot plus a scan of the batch headers after it (``log.producer_log``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from leasehold.records import BatchHeader, increment_sequence
from services.broker_agent.log.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)

RETAINED_BATCHES = 5  # Kafka's NUM_BATCHES_TO_RETAIN: a producer has at most 5 in flight


class BatchMetadata(NamedTuple):
    """One appended batch of a producer: its sequence range, offsets and max timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_timestamp(self) -> int:
        return self.batches[-1].timestamp if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def add(self, epoch: int, batch: BatchMetadata) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        self.batches.append(batch)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == increment_sequence(last_seq, 1) if last_seq >= 0 else True


def check_sequence(
    entry: ProducerEntry | None, epoch: int, first_seq: int, last_seq: int
) -> BatchMetadata | None:
    """The leader's verdict on an idempotent batch: the duplicated batch's metadata, None to
    append it, or InvalidProducerEpochError / OutOfOrderSequenceError / UnknownProducerIdError."""
    if entry is None:
        if first_seq != 0:
            raise UnknownProducerIdError(
                f"no state for this producer: its first batch here must have sequence 0, "
                f"not {first_seq}"
            )
        return None
    duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
    if duplicate is not None:
        return duplicate
    pid = entry.producer_id
    if epoch < entry.epoch:
        raise InvalidProducerEpochError(
            f"producer {pid} epoch {epoch} is older than the last seen epoch {entry.epoch}"
        )
    if epoch > entry.epoch:
        if first_seq != 0:
            raise OutOfOrderSequenceError(
                f"producer {pid}: new epoch {epoch} must start at sequence 0, not {first_seq}"
            )
        return None
    if not in_sequence(entry.last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"producer {pid}: sequence {first_seq} does not follow {entry.last_seq}"
        )
    return None


class ProducerStateManager:
    """The entries of one log, by producer id; not thread-safe (the log's lock guards it)."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """``check_sequence`` for a batch about to be appended by the leader."""
        if header.producer_id < 0:
            return None
        return check_sequence(
            self.entries.get(header.producer_id),
            header.producer_epoch,
            header.base_sequence,
            header.last_sequence,
        )

    def update(self, header: BatchHeader) -> None:
        """Record an appended batch (of any origin) at its offsets."""
        pid = header.producer_id
        if pid < 0:
            return
        batch = BatchMetadata(
            header.base_sequence,
            header.last_sequence,
            header.base_offset,
            header.last_offset,
            header.max_timestamp,
        )
        entry = self.entries.get(pid)
        if entry is None:
            entry = self.entries[pid] = ProducerEntry(pid, header.producer_epoch)
        entry.add(header.producer_epoch, batch)

    def update_all(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            if header.producer_id >= 0:
                self.update(header)

    def max_last_offset(self) -> int:
        """The greatest offset any entry refers to (-1 with no entries)."""
        return max((e.last_offset for e in self.entries.values()), default=-1)

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose every retained batch is below the new log start."""
        gone = [pid for pid, e in self.entries.items() if e.last_offset < log_start_offset]
        for pid in gone:
            del self.entries[pid]

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (producer.id.expiration.ms); how many."""
        gone = [
            pid for pid, e in self.entries.items() if now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in gone:
            del self.entries[pid]
        return len(gone)

    def clear(self) -> None:
        self.entries.clear()
