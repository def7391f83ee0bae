"""One log segment: ``<base offset>.log`` of whole batches plus its two sparse indexes.

Batches are appended verbatim; every ``index.interval.bytes`` of data an offset-index entry
(and, if the running maximum timestamp grew, a time-index entry) is added — Kafka's rule, so
that replaying the same batches always reproduces the same entries. That property is what
lets truncation and crash recovery rebuild the in-memory tail state by replaying only the
batches after the last index entry, instead of the whole segment.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from services.broker_agent.log.batch import (
    HEADER_SIZE,
    LAST_OFFSET_DELTA_AT,
    LOG_OVERHEAD,
    MIN_HEADER_SIZE,
    BatchHeader,
    BatchView,
    parse_header,
)
from services.broker_agent.log.errors import CorruptRecordError
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.index import OffsetIndex, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
MAX_RELATIVE_OFFSET = 2**31 - 1
_CHUNK = 64 * 1024
_LOCATE = struct.Struct(">qi")  # base_offset, batch_length
_LAST_DELTA = struct.Struct(">i")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    """In-memory state of one segment; all I/O goes through the shared handle cache."""

    def __init__(
        self, directory: Path, base_offset: int, handles: FileHandleCache, index_interval: int
    ) -> None:
        stem = directory / segment_name(base_offset)
        self.base_offset = base_offset
        self.log_path = stem.with_name(stem.name + LOG_SUFFIX)
        self.offset_index = OffsetIndex(
            stem.with_name(stem.name + INDEX_SUFFIX), base_offset, handles
        )
        self.time_index = TimeIndex(
            stem.with_name(stem.name + TIME_INDEX_SUFFIX), base_offset, handles
        )
        self.index_interval = index_interval
        self._handles = handles
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self.rolling_timestamp = -1  # max timestamp of the first batch: segment.ms counts from it
        self._bytes_since_index = 0
        self.log_dirty = False

    # ----------------------------------------------------------------- lifecycle

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, handles: FileHandleCache, index_interval: int
    ) -> LogSegment:
        segment = cls(directory, base_offset, handles, index_interval)
        # Only the log file: the index files appear with their first entry (as Kafka's lazy
        # indexes do). A missing index reads as empty, which is all a new one holds, and
        # creating files is most of what a new replica costs (10,000 per LeaderAndIsr).
        with handles.use(segment.log_path, create=True) as fd:
            os.ftruncate(fd, 0)
        return segment

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        handles: FileHandleCache,
        index_interval: int,
        recover_from: int | None,
    ) -> tuple[LogSegment, int]:
        """Load a segment; validate batches at/after ``recover_from`` (None: trust it all).

        Returns the segment and how many bytes of torn or corrupt tail were cut off.
        """
        segment = cls(directory, base_offset, handles, index_interval)
        with handles.use(segment.log_path) as fd:
            size = os.fstat(fd).st_size
        segment.offset_index.load(limit=size)
        segment.time_index.load(limit=MAX_RELATIVE_OFFSET + 1)
        if recover_from is None:
            try:
                segment._replay(validate=False)
                return segment, 0
            except CorruptRecordError:
                recover_from = base_offset  # the "trusted" data is not: check all of it
        return segment, segment._recover(recover_from)

    def flush(self) -> None:
        """fsync whatever this segment wrote since the last flush."""
        for dirty, path in (
            (self.log_dirty, self.log_path),
            (self.offset_index.dirty, self.offset_index.path),
            (self.time_index.dirty, self.time_index.path),
        ):
            if dirty:
                with self._handles.use(path, create=True) as fd:
                    os.fsync(fd)
        self.log_dirty = self.offset_index.dirty = self.time_index.dirty = False

    def take_dirty(self) -> list[int]:
        """Duplicated descriptors of the files written since the last flush, now counted as
        clean: the caller fsyncs and closes them without holding the log's lock (a duplicate
        stays valid if the cache closes the original or the file is deleted meanwhile)."""
        fds = []
        for dirty, path in (
            (self.log_dirty, self.log_path),
            (self.offset_index.dirty, self.offset_index.path),
            (self.time_index.dirty, self.time_index.path),
        ):
            if dirty:
                with self._handles.use(path, create=True) as fd:
                    fds.append(os.dup(fd))
        self.log_dirty = self.offset_index.dirty = self.time_index.dirty = False
        return fds

    @property
    def is_dirty(self) -> bool:
        return self.log_dirty or self.offset_index.dirty or self.time_index.dirty

    def close(self) -> None:
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            self._handles.close(path)

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            path.unlink(missing_ok=True)

    # -------------------------------------------------------------------- writes

    def should_roll(
        self, size: int, max_timestamp: int, last_offset: int, config_bytes: int, config_ms: int
    ) -> bool:
        """Kafka's roll rule for an incoming append of ``size`` bytes."""
        if last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
            return True
        if self.size == 0:
            return False
        return self.size + size > config_bytes or max_timestamp - self.rolling_timestamp > config_ms

    def append(self, data: bytes | memoryview, headers: Sequence[BatchHeader]) -> None:
        """Write whole batches (already validated by the caller) at the end of the file."""
        view = memoryview(data)
        with self._handles.use(self.log_path) as fd:
            position = self.size
            while view:
                written = os.pwrite(fd, view, position)
                view = view[written:]
                position += written
        position = self.size
        for header in headers:
            self._track(position, header)
            position += header.size
        self.size = position
        self.log_dirty = True

    def truncate_to(self, offset: int) -> int:
        """Drop every batch whose last offset is >= ``offset``; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        # Indexes first: a crash in between leaves extra data, never an index past the end.
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(header.base_offset)
        with self._handles.use(self.log_path) as fd:
            os.ftruncate(fd, position)
        self.log_dirty = True
        self._replay(validate=False)
        return removed

    # --------------------------------------------------------------------- reads

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        if offset >= self.next_offset:
            return None
        _, start = self.offset_index.lookup(offset)
        with self._handles.use(self.log_path) as fd:
            for position, header, _ in self._batches(fd, start, self.size, False):
                if header.last_offset >= offset:
                    return position, header
        return None

    def headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches here whose last offset is >= ``offset``, in order."""
        if offset >= self.next_offset:
            return
        _, start = self.offset_index.lookup(offset)
        with self._handles.use(self.log_path) as fd:
            for _, header, _ in self._batches(fd, start, self.size, False):
                if header.last_offset >= offset:
                    yield header

    def read(
        self, offset: int, max_bytes: int, max_offset: int, min_one_batch: bool
    ) -> bytes | None:
        """Whole batches from the one containing ``offset``; None if it is not here.

        Stops before a batch reaching ``max_offset`` or overflowing ``max_bytes``, except
        that with ``min_one_batch`` the first batch is returned whatever its size.
        """
        found = self.translate_offset(offset)
        if found is None:
            return None
        position, first = found
        if first.last_offset >= max_offset:
            return b""
        with self._handles.use(self.log_path) as fd:
            if first.size > max_bytes:
                return os.pread(fd, first.size, position) if min_one_batch else b""
            buf = os.pread(fd, min(max_bytes, self.size - position), position)
        # Only lengths and last offsets matter here: unpack just those (a hot loop).
        end = 0
        while end + MIN_HEADER_SIZE <= len(buf):
            base_offset, length = _LOCATE.unpack_from(buf, end)
            (last_delta,) = _LAST_DELTA.unpack_from(buf, end + LAST_OFFSET_DELTA_AT)
            if end + length + LOG_OVERHEAD > len(buf) or base_offset + last_delta >= max_offset:
                break
            end += length + LOG_OVERHEAD
        return buf[:end]

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int
    ) -> tuple[int, int, int] | None:
        """``(record timestamp, offset, batch leader epoch)`` of the first record here at or
        after ``start_offset`` with timestamp >= ``timestamp``, or None."""
        if self.max_timestamp < timestamp or start_offset >= self.next_offset:
            return None
        from_offset = max(self.time_index.lookup(timestamp), start_offset)
        _, start = self.offset_index.lookup(from_offset)
        with self._handles.use(self.log_path) as fd:
            for position, header, _ in self._batches(fd, start, self.size, False):
                if header.max_timestamp < timestamp or header.last_offset < start_offset:
                    continue
                batch = BatchView(header, memoryview(os.pread(fd, header.size, position)))
                for record in batch.records():
                    if record.timestamp_ms >= timestamp and record.offset >= start_offset:
                        return record.timestamp_ms, record.offset, header.partition_leader_epoch
        return None

    # ---------------------------------------------------------------- internals

    def _track(self, position: int, header: BatchHeader) -> None:
        """Account for one batch at ``position``: Kafka's index-interval rule."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.base_offset
        if self._bytes_since_index > self.index_interval:
            self.offset_index.append(header.base_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        if position == 0:
            self.rolling_timestamp = header.max_timestamp
        self.next_offset = header.next_offset

    def _recover(self, from_offset: int) -> int:
        """Validate (CRC included) every batch from ``from_offset`` on; cut a bad tail."""
        self.offset_index.truncate_to_offset(from_offset)
        self.time_index.truncate_to_offset(from_offset)
        removed = 0
        while True:
            removed += self._replay(validate=True)
            last_index = self.offset_index.last_entry()
            last_time = self.time_index.last_entry()
            if last_index is not None and last_index[1] >= self.size:
                # The batch an index entry points at was itself cut: forget it and rescan.
                self.offset_index.truncate_to_offset(last_index[0])
                self.time_index.truncate_to_offset(last_index[0])
            elif last_time is not None and last_time[1] >= self.next_offset:
                self.time_index.truncate_to_offset(self.next_offset)
            else:
                return removed

    def _replay(self, validate: bool) -> int:
        """Rebuild size/next offset/max timestamp from the last index entry to the end.

        With ``validate``, batches are CRC-checked and the file is cut at the first bad or
        torn one (returning the bytes cut); without, any anomaly raises CorruptRecordError.
        """
        last = self.offset_index.last_entry()
        expected, start = last if last is not None else (self.base_offset, 0)
        last_time = self.time_index.last_entry()
        self.max_timestamp, self._offset_of_max_timestamp = (
            last_time if last_time is not None else (-1, self.base_offset)
        )
        self._bytes_since_index = 0
        self.next_offset = expected
        self.rolling_timestamp = -1
        exact = last is not None
        good_end = start
        with self._handles.use(self.log_path) as fd:
            file_size = os.fstat(fd).st_size
            try:
                for position, header, data in self._batches(fd, start, file_size, validate):
                    if (exact and header.base_offset != expected) or header.base_offset < expected:
                        raise CorruptRecordError(f"offset {header.base_offset} out of order")
                    if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                        raise CorruptRecordError(f"offset {header.last_offset} overflows segment")
                    if data is not None:
                        BatchView(header, memoryview(data)).ensure_valid()
                    exact, expected = False, header.next_offset
                    self._track(position, header)
                    good_end = position + header.size
            except CorruptRecordError:
                if not validate:
                    raise
            removed = file_size - good_end
            if removed:
                os.ftruncate(fd, good_end)
                self.log_dirty = True
            if good_end and start:
                head = parse_header(os.pread(fd, HEADER_SIZE, 0))
                self.rolling_timestamp = head.max_timestamp if head else -1
        self.size = good_end
        if last_time is not None and last_time[1] >= self.next_offset and not validate:
            raise CorruptRecordError("time index points past the end of the segment")
        return removed

    @staticmethod
    def _batches(
        fd: int, position: int, end: int, with_data: bool
    ) -> Iterator[tuple[int, BatchHeader, bytes | None]]:
        """Batches in ``[position, end)``, read in chunks; a torn batch raises
        CorruptRecordError, as do malformed headers."""
        buf = b""
        buf_start = position
        while position < end:
            rel = position - buf_start
            if len(buf) - rel < HEADER_SIZE:
                buf, buf_start, rel = (
                    os.pread(fd, min(_CHUNK, end - position), position),
                    position,
                    0,
                )
            header = parse_header(buf, rel)
            if header is None or position + header.size > end:
                raise CorruptRecordError(f"torn batch at position {position}")
            data: bytes | None = None
            if with_data:
                if rel + header.size <= len(buf):
                    data = buf[rel : rel + header.size]
                else:
                    data = os.pread(fd, header.size, position)
            yield position, header, data
            position += header.size
