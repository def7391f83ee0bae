"""Sparse per-segment indexes: offset -> file position, and timestamp -> offset.

Both are append-only files of fixed-size big-endian entries, mirrored in memory (two
``array`` columns searched with ``bisect``) so a lookup costs no I/O. Offsets are stored
relative to the segment's base offset (int32), as in Kafka.

- ``.index``: ``(relative offset, position)`` — the batch with that base offset starts at
  that byte of the ``.log`` file. Added every ``index.interval.bytes`` of appended data.
- ``.timeindex``: ``(timestamp, relative offset)`` — the segment's running maximum
  timestamp first reached that value in the batch starting at that offset. Only appended when
  the maximum grows, so both columns strictly increase.

Neither file is trusted blindly after a crash: ``load`` keeps the longest well-formed prefix
(a torn last entry or a pointer past the end of the log file is dropped).
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from services.broker_agent.log.handles import FileHandleCache


class _SparseIndex:
    """Two strictly increasing columns backed by a file of ``ENTRY``-sized records."""

    ENTRY: struct.Struct
    KEY_TYPE: str
    VALUE_TYPE: str

    def __init__(self, path: Path, base_offset: int, handles: FileHandleCache) -> None:
        self.path = path
        self.base_offset = base_offset
        self._handles = handles
        self._keys = array(self.KEY_TYPE)
        self._values = array(self.VALUE_TYPE)
        self.dirty = False

    def __len__(self) -> int:
        return len(self._keys)

    def _is_next_valid(self, key: int, value: int, limit: int) -> bool:
        raise NotImplementedError

    def _decode(self, raw: tuple[int, int]) -> tuple[int, int]:
        return raw

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value)

    def load(self, limit: int) -> bool:
        """Read the file; keep the longest valid prefix. True if the file was intact.

        ``limit`` bounds the values (the log file's size for positions, the segment's offset
        span for relative offsets), so an entry pointing into a lost tail is dropped.
        """
        self._keys = array(self.KEY_TYPE)
        self._values = array(self.VALUE_TYPE)
        if not self.path.exists():
            return True  # never written (created with its first entry): empty
        with self._handles.use(self.path, create=True) as fd:
            size = os.fstat(fd).st_size
            data = os.pread(fd, size, 0)
        intact = size % self.ENTRY.size == 0
        for raw in self.ENTRY.iter_unpack(data[: size - size % self.ENTRY.size]):
            key, value = self._decode(raw)
            if not self._is_next_valid(key, value, limit):
                intact = False
                break
            self._keys.append(key)
            self._values.append(value)
        if not intact:
            self._truncate_file()
        return intact

    def _append(self, key: int, value: int) -> None:
        with self._handles.use(self.path, create=True) as fd:
            os.pwrite(fd, self._encode(key, value), len(self._keys) * self.ENTRY.size)
        self._keys.append(key)
        self._values.append(value)
        self.dirty = True

    def _truncate_entries(self, keep: int) -> None:
        if keep < len(self._keys):
            del self._keys[keep:]
            del self._values[keep:]
            self._truncate_file()

    def _truncate_file(self) -> None:
        with self._handles.use(self.path, create=True) as fd:
            os.ftruncate(fd, len(self._keys) * self.ENTRY.size)
        self.dirty = True

    def reset(self) -> None:
        self._truncate_entries(0)


class OffsetIndex(_SparseIndex):
    """Base offset of a batch -> its byte position in the segment's log file."""

    ENTRY = struct.Struct(">ii")
    KEY_TYPE = "i"
    VALUE_TYPE = "i"

    def _is_next_valid(self, key: int, value: int, limit: int) -> bool:
        if key < 0 or value < 0 or value >= limit:
            return False
        return not self._keys or (key > self._keys[-1] and value > self._values[-1])

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last indexed ``(offset, position)`` at or before ``offset``; else the start."""
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int] | None:
        if not self._keys:
            return None
        return self.base_offset + self._keys[-1], self._values[-1]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for batches starting at or after ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._keys, offset - self.base_offset))

    def truncate_to_position(self, position: int) -> None:
        """Drop entries for batches starting at or after byte ``position``."""
        self._truncate_entries(bisect.bisect_left(self._values, position))


class TimeIndex(_SparseIndex):
    """Running maximum timestamp -> base offset of the batch where it was first reached."""

    ENTRY = struct.Struct(">qi")
    KEY_TYPE = "q"
    VALUE_TYPE = "i"

    def _is_next_valid(self, key: int, value: int, limit: int) -> bool:
        if value < 0 or value >= limit:
            return False
        return not self._keys or (key > self._keys[-1] and value > self._values[-1])

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if not self._keys or timestamp > self._keys[-1]:
            self._append(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> int:
        """Offset to start scanning at for the first batch with max timestamp >= ``timestamp``.

        Every batch before the returned offset has a max timestamp below the entry's, which
        is <= ``timestamp``, so none of them can qualify.
        """
        i = bisect.bisect_right(self._keys, timestamp) - 1
        return self.base_offset + (self._values[i] if i >= 0 else 0)

    def last_entry(self) -> tuple[int, int] | None:
        """``(timestamp, absolute offset)`` of the newest entry."""
        if not self._keys:
            return None
        return self._keys[-1], self.base_offset + self._values[-1]

    def truncate_to_offset(self, offset: int) -> None:
        keep = bisect.bisect_left(self._values, offset - self.base_offset)
        self._truncate_entries(keep)
