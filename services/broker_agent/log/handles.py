"""A bounded LRU of open file descriptors shared by every log of one agent.

One agent may host tens of thousands of replicas, each with several segment files; keeping
them all open would exhaust the process's descriptors. Files are opened on first use and the
least recently used descriptor is closed when the cache is full. A descriptor is pinned while
a caller uses it (``with cache.use(path) as fd``), so eviction never closes — or lets the
kernel reuse — a number someone is still writing to.

Closing a descriptor does not lose durability: on Linux, ``fsync`` on a descriptor opened
later flushes the file's dirty pages no matter which descriptor wrote them, so a log's
``flush()`` simply reopens what it needs.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_MAX_OPEN = 512


class _Entry:
    __slots__ = ("fd", "pins")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pins = 0


class FileHandleCache:
    """Read-write descriptors keyed by path, at most ``max_open`` unpinned ones kept open."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN) -> None:
        if max_open < 1:
            raise ValueError("max_open must be at least 1")
        self.max_open = max_open
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # Open keys by directory, so closing one log is O(its files), not O(open files): an
        # agent closing 10,000 logs would otherwise scan the whole cache for each.
        self._by_dir: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self.opens = 0  # descriptors opened so far, for tests and metrics

    @property
    def open_count(self) -> int:
        return len(self._entries)

    @contextmanager
    def use(self, path: Path | str, create: bool = False) -> Iterator[int]:
        """A pinned descriptor for ``path`` (created if ``create``), valid inside the block."""
        key = os.fspath(path)
        entry = self._acquire(key, create)
        try:
            yield entry.fd
        finally:
            with self._lock:
                entry.pins -= 1
                self._evict_locked()

    def close(self, path: Path | str) -> None:
        """Close ``path``'s descriptor if open (before deleting or renaming the file)."""
        with self._lock:
            entry = self._pop_locked(os.fspath(path))
        if entry is not None:
            os.close(entry.fd)

    def close_under(self, directory: Path | str) -> None:
        """Close every descriptor of a file inside ``directory`` (a log being closed)."""
        parent = os.fspath(directory).rstrip(os.sep)
        with self._lock:
            keys = self._by_dir.pop(parent, set())
            entries = [self._entries.pop(key) for key in keys]
        for entry in entries:
            os.close(entry.fd)

    def close_all(self) -> None:
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            self._by_dir.clear()
        for entry in entries:
            os.close(entry.fd)

    def _acquire(self, key: str, create: bool) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                entry.pins += 1
                return entry
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        fd = os.open(key, flags, 0o644)
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:  # another thread opened it meanwhile
                os.close(fd)
                entry = existing
            else:
                entry = _Entry(fd)
                self._entries[key] = entry
                self._by_dir.setdefault(os.path.dirname(key), set()).add(key)
                self.opens += 1
            self._entries.move_to_end(key)
            entry.pins += 1
            self._evict_locked()
            return entry

    def _evict_locked(self) -> None:
        while len(self._entries) > self.max_open:
            victim = next((key for key, e in self._entries.items() if e.pins == 0), None)
            if victim is None:  # everything is pinned: run over the limit briefly
                return
            os.close(self._pop_locked(victim).fd)  # type: ignore[union-attr]

    def _pop_locked(self, key: str) -> _Entry | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            parent = os.path.dirname(key)
            keys = self._by_dir.get(parent)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_dir[parent]
        return entry
