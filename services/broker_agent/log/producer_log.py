"""A log's producer state kept consistent with its batches (Kafka's loadProducerState).

The state always describes the log from its start to its end offset:

- **load** (after recovery): the newest snapshot at or below the log end, then the headers of
  every batch after it. Snapshots beyond the end (the crash lost that data) are deleted.
- **append** (leader or follower): every batch's header updates the state.
- **truncation**: snapshots beyond the new end are deleted; if a producer's batch was cut, the
  state is reloaded as on load (else nothing about producers changed).
- **roll**: a snapshot at the new segment's base offset, so a later load scans one segment.
- **close**: a snapshot at the end when producers changed since the last one or the log grew.
- **retention**: producers whose batches are all below the log start are forgotten; so are
  producers idle past ``producer.id.expiration.ms``.

Snapshot writes are not fsynced: a snapshot lost in a crash only means a longer scan, and a
torn one fails its CRC and is ignored. Deleting the snapshots a truncation invalidated is made
durable at once, so a stale snapshot never describes data the log no longer holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from leasehold.records import BatchHeader
from services.broker_agent.log import producer_snapshot
from services.broker_agent.log.checkpoint import fsync_dir
from services.broker_agent.log.producer_state import BatchMetadata, ProducerStateManager

log = logging.getLogger(__name__)

HeaderScan = Callable[[int], Iterator[BatchHeader]]


class ProducerLog:
    """One log's ProducerStateManager and its snapshot files (the log's lock guards it)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state = ProducerStateManager()
        self._snapshot_offset = -1  # newest snapshot written or loaded
        self._dirty = False

    def load(self, log_start: int, log_end: int, scan: HeaderScan) -> None:
        """Rebuild the state of ``[log_start, log_end)`` from a snapshot and a header scan."""
        producer_snapshot.delete_above(self.directory, log_end)
        found = producer_snapshot.read_latest(self.directory, log_end)
        self.state.clear()
        start = log_start
        if found is not None and found[0] >= log_start:
            start, self.state.entries = found
            self._snapshot_offset = start
        else:
            self._snapshot_offset = -1
        if start < log_end:
            self.state.update_all(scan(start))
        self.state.truncate_head(log_start)
        self._dirty = start < log_end and len(self.state) > 0

    # ------------------------------------------------------------------ appends

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        return self.state.check(header)

    def appended(self, headers: Iterable[BatchHeader]) -> None:
        for header in headers:
            if header.producer_id >= 0:
                self.state.update(header)
                self._dirty = True

    def rolled(self, base_offset: int) -> None:
        """A new segment starts at ``base_offset``: snapshot the state as of there."""
        self._write(base_offset)

    def closing(self, log_end: int) -> None:
        if log_end > 0 and (self._dirty or log_end > self._snapshot_offset):
            self._write(log_end)

    # ---------------------------------------------------------- truncation, retention

    def truncated(self, log_start: int, log_end: int, scan: HeaderScan) -> None:
        """The log now ends at ``log_end``: drop later snapshots; reload if producers lost
        batches."""
        had_later = any(o > log_end for o in producer_snapshot.list_snapshots(self.directory))
        if had_later:
            producer_snapshot.delete_above(self.directory, log_end)
            fsync_dir(self.directory)
        if self.state.max_last_offset() >= log_end:
            self.load(log_start, log_end, scan)
        elif self._snapshot_offset > log_end:
            self._snapshot_offset = -1

    def truncated_fully(self) -> None:
        producer_snapshot.delete_all(self.directory)
        fsync_dir(self.directory)
        self.state.clear()
        self._snapshot_offset = -1
        self._dirty = False

    def log_start_moved(self, log_start: int) -> None:
        before = len(self.state)
        self.state.truncate_head(log_start)
        self._dirty = self._dirty or len(self.state) != before

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        if self.state.expire(now_ms, expiration_ms):
            self._dirty = True

    def _write(self, offset: int) -> None:
        try:
            producer_snapshot.write(self.directory, offset, self.state.entries)
        except OSError as exc:  # a missing snapshot costs a longer scan, never correctness
            log.warning("cannot write producer snapshot in %s: %s", self.directory, exc)
            return
        self._snapshot_offset = offset
        self._dirty = False
