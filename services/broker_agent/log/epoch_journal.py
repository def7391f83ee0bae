"""Every log's leader-epoch entries in one append-only journal per data directory.

Kafka keeps a ``leader-epoch-checkpoint`` file per partition and rewrites it (write, fsync,
rename, fsync the directory) whenever the entries change. A broker taking leadership of 5,000
partitions in one LeaderAndIsr then owes 5,000 file replacements before it may answer: about
half a second of worker-thread time here even batched. This journal gives the same guarantee —
once a change is reported durable, a restart sees it — with one ``write`` and one
``fdatasync`` per batch, whatever its size.

Each record is one line, ``<crc32c> <topic> <partition> <n> <epoch> <start> ...``: the whole
entry list of one partition after a change (``n`` = 0 for a deleted or emptied log). Replay
keeps the last record per partition, so records are idempotent and need no sequence numbers.
The CRC finds a torn tail after a crash: replay stops at the first damaged line, and the file
is cut back to its intact prefix before anything is appended to it. Lines are written in the
order their partitions changed (callers stage a record while holding the log's lock), so the
last record of a partition is its newest state.

The file only grows, so it is compacted: rewritten with one record per live log (plus the
records staged meanwhile) once it is several times larger than that.

After a failed write or fsync the journal refuses every later one: the kernel may have dropped
the unwritten pages, so only a restart, which re-reads the file, can tell what is on disk.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import crc32c

from services.broker_agent.log.checkpoint import fsync_dir

JOURNAL = "leader-epoch-journal"
COMPACT_MIN_BYTES = 4 << 20  # never compact a journal smaller than this
COMPACT_RATIO = 4  # ... or one less than this many times its live size

_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC

TopicPartition = tuple[str, int]
Pairs = list[tuple[int, int]]


def encode_record(tp: TopicPartition, pairs: Iterable[tuple[int, int]]) -> bytes:
    flat = [str(x) for pair in pairs for x in pair]
    body = " ".join([tp[0], str(tp[1]), str(len(flat) // 2), *flat]).encode("ascii")
    return b"%08x %s\n" % (crc32c.crc32c(body), body)


def decode_records(data: bytes) -> tuple[dict[TopicPartition, Pairs], int]:
    """The last entry list of every partition, and the length of the intact prefix."""
    latest, good, _live = _replay(data)
    return latest, good


def _replay(data: bytes) -> tuple[dict[TopicPartition, Pairs], int, int]:
    """``decode_records``, plus the bytes the last records take (what compaction keeps)."""
    latest: dict[TopicPartition, Pairs] = {}
    sizes: dict[TopicPartition, int] = {}
    good = 0
    while good < len(data):
        end = data.find(b"\n", good)
        if end < 0:
            break  # a torn last line
        parsed = _parse(data[good:end])
        if parsed is None:
            break
        latest[parsed[0]] = parsed[1]
        sizes[parsed[0]] = end + 1 - good
        good = end + 1
    return latest, good, sum(sizes.values())


def _parse(line: bytes) -> tuple[TopicPartition, Pairs] | None:
    crc, _, body = line.partition(b" ")
    try:
        if int(crc, 16) != crc32c.crc32c(body):
            return None
        topic, partition, count, *flat = body.decode("ascii").split(" ")
        numbers = [int(x) for x in flat]
        if len(numbers) != 2 * int(count):
            return None
        return (topic, int(partition)), list(zip(numbers[::2], numbers[1::2], strict=True))
    except (ValueError, UnicodeDecodeError):
        return None


class EpochJournal:
    """The data directory's leader-epoch journal. Thread-safe.

    ``snapshot`` holds what the file said when opened (the logs read their entries from it);
    ``stage`` queues a record and numbers it, ``sync`` writes and fdatasyncs everything queued,
    ``record`` does both; ``is_synced`` tells whether a numbered record is on disk (whichever
    ``sync`` wrote it). Lock order: a log's lock, then the journal's.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / JOURNAL
        self._lock = threading.Lock()
        self._staged: list[bytes] = []
        self._staged_number = 0  # how many records were ever staged: the newest one's number
        self._synced_number = 0  # every record up to this number is on disk
        self._since_capture: list[bytes] | None = None  # records written while compacting
        self._failed: OSError | None = None
        existed = self.path.exists()
        data = self.path.read_bytes() if existed else b""
        self.snapshot, good, live = _replay(data)
        self._fd = os.open(self.path, _APPEND, 0o644)
        if good < len(data):
            os.ftruncate(self._fd, good)  # drop a torn tail before appending after it
            os.fsync(self._fd)
        if not existed:
            fsync_dir(self.path.parent)
        self._size = good
        self._live_size = live

    # ---------------------------------------------------------------- writing

    def stage(self, tp: TopicPartition, pairs: Iterable[tuple[int, int]]) -> int:
        """Queue ``tp``'s entry list; durable after the next ``sync``. Returns the record's
        number, for ``is_synced``."""
        record = encode_record(tp, pairs)
        with self._lock:
            self._staged.append(record)
            self._staged_number += 1
            return self._staged_number

    def is_synced(self, number: int) -> bool:
        """Whether the record ``stage`` gave this number is on disk. (Read without the lock:
        a stale answer can only be a no that has just become a yes.)"""
        return number <= self._synced_number

    def record(self, tp: TopicPartition, pairs: Iterable[tuple[int, int]]) -> None:
        """Write ``tp``'s entry list durably (with anything staged before it)."""
        self.stage(tp, pairs)
        self.sync()

    def sync(self) -> None:
        """Write and fdatasync every staged record; raises OSError if the disk fails."""
        with self._lock:
            self._sync_locked()

    def _sync_locked(self) -> None:
        if self._failed is not None:
            raise OSError(self._failed.errno, f"leader-epoch journal failed: {self._failed}")
        if not self._staged:
            return
        data, upto = b"".join(self._staged), self._staged_number
        self._staged.clear()
        try:
            _write_all(self._fd, data)
            os.fdatasync(self._fd)
        except OSError as exc:
            self._failed = exc  # the records are lost: none of their numbers becomes synced
            raise
        self._size += len(data)
        self._synced_number = upto
        if self._since_capture is not None:
            self._since_capture.append(data)

    # ------------------------------------------------------------- compaction

    def needs_compaction(self) -> bool:
        with self._lock:
            return self._size > max(COMPACT_MIN_BYTES, COMPACT_RATIO * self._live_size)

    def compact(self, capture: Callable[[], Iterable[tuple[TopicPartition, Pairs]]]) -> None:
        """Rewrite the file as one record per live log (``capture``, which takes each log's
        lock in turn) plus every record written while capturing, then swap it in atomically.

        Records written after the capture began are appended after the captured ones: each
        holds a partition's newest state when written, so the last one still wins on replay.
        """
        with self._lock:
            self._sync_locked()
            self._since_capture = []
        tmp = self.path.with_name(self.path.name + ".compact.tmp")
        try:
            snapshot = b"".join(encode_record(tp, pairs) for tp, pairs in capture())
            fd = os.open(tmp, _APPEND | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, snapshot)
                with self._lock:
                    self._sync_locked()
                    tail = b"".join(self._since_capture)
                    _write_all(fd, tail)
                    os.fsync(fd)
                    os.replace(tmp, self.path)
                    # From here on only the new file is the journal: append to it alone.
                    old, self._fd = self._fd, fd
                    fd = old
                    self._size = self._live_size = len(snapshot) + len(tail)
                    try:
                        fsync_dir(self.path.parent)
                    except OSError as exc:  # the rename may not survive a crash
                        self._failed = exc
                        raise
            finally:
                os.close(fd)
        finally:
            with self._lock:
                self._since_capture = None
            tmp.unlink(missing_ok=True)

    def close(self) -> None:
        """Write what is still staged (tombstones of deleted logs), then close."""
        with self._lock:
            if self._fd >= 0:
                with contextlib.suppress(OSError):
                    self._sync_locked()
                os.close(self._fd)
                self._fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
