"""Many small atomic file replacements made durable together (one LeaderAndIsr's worth).

A LeaderAndIsr naming thousands of new replicas writes a small file for each
(``partition.metadata``; their leader epochs go to the epoch journal, ``epoch_journal``).
Replacing them one at a time costs an fsync of the file and one of its directory each,
serially: seconds per 10,000 partitions. A batch gives the same guarantee — after a crash each
file holds its old or its new content, and once ``write_batch`` returns every new content is on
disk — for a fraction of the cost:

1. every new content goes to ``<name>.batch.tmp`` (worker threads, several files at once);
2. the temporary files are made durable: one ``syncfs(2)`` of the filesystem when available
   (the technique PostgreSQL's ``recovery_init_sync_method=syncfs`` uses), else an fsync each,
   in parallel;
3. each is renamed over its target, unless ``commit`` says a newer content was meanwhile
   written directly (then the stale temporary is dropped);
4. the renames are made durable: one more ``syncfs``, else one fsync per distinct directory,
   plus any ``extra_dirs`` (the data directory after new log directories were created).

A ``syncfs`` failure cannot be attributed to one file, so the batch is then redone with
per-file fsyncs, which attribute every error to the file that caused it.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from services.broker_agent.log.checkpoint import fsync_dir

BATCH_TMP_SUFFIX = ".batch.tmp"
# Below this many files, per-file fsyncs in parallel are as quick as two syncfs calls and
# do not flush unrelated dirty data of the filesystem.
SYNCFS_MIN_FILES = 64
CHUNK = 128  # files per worker task
T = TypeVar("T")
R = TypeVar("R")


def _always() -> bool:
    return True


@dataclass(frozen=True)
class PendingFile:
    """One atomic replacement: ``data`` becomes ``path``'s content.

    ``lock`` (if any) is held around the rename, and ``commit`` is asked under it whether this
    content is still the newest: the owner may have written a newer one directly meanwhile.
    """

    path: Path
    data: bytes
    key: object = None  # what a failure is reported against (e.g. the partition)
    lock: threading.Lock | None = field(default=None, compare=False)
    commit: Callable[[], bool] = field(default=_always, compare=False)


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


class BatchWriter:
    """Writes batches of ``PendingFile`` with the threads of ``pool`` (the owner's)."""

    def __init__(self, pool: ThreadPoolExecutor, use_syncfs: bool = True) -> None:
        self._pool = pool
        self._syncfs = _load_syncfs() if use_syncfs else None

    def write_batch(
        self, files: Sequence[PendingFile], extra_dirs: Iterable[Path] = ()
    ) -> dict[object, OSError]:
        """Replace every file durably (see the module doc); returns the failures by ``key``.

        Blocking: call it from a worker thread (``asyncio.to_thread``), not the event loop.
        """
        extra = sorted(set(extra_dirs))
        if not files and not extra:
            return {}
        if self._syncfs is not None and len(files) >= SYNCFS_MIN_FILES:
            try:
                return self._with_syncfs(files, extra)
            except OSError:
                pass  # redo with per-file fsyncs, which say which file failed
        return self._with_fsync(files, extra)

    # ---------------------------------------------------------------- strategies

    def _with_syncfs(self, files: Sequence[PendingFile], extra: list[Path]) -> dict:
        failures: dict[object, OSError] = {}
        written = self._each(files, lambda f: _write_tmp(f, fsync=False), failures)
        anchor = files[0].path.parent if files else extra[0]
        self._syncfs_of(anchor)
        self._each(written, _rename, failures)
        self._syncfs_of(anchor)
        return failures

    def _with_fsync(self, files: Sequence[PendingFile], extra: list[Path]) -> dict:
        failures: dict[object, OSError] = {}
        written = self._each(files, lambda f: _write_tmp(f, fsync=True), failures)
        renamed = self._each(written, _rename, failures)
        by_dir: dict[Path, list[PendingFile]] = {}
        for f in renamed:
            by_dir.setdefault(f.path.parent, []).append(f)
        for directory in extra:
            by_dir.setdefault(directory, [])
        dirs = list(by_dir)
        outcomes = chunked_map(self._pool, _try_fsync_dir, dirs)
        for directory, outcome in zip(dirs, outcomes, strict=True):
            if outcome is not None:
                for f in by_dir[directory]:
                    failures[f.key] = outcome
                if not by_dir[directory]:
                    raise outcome  # a directory of new logs could not be made durable
        return failures

    # ------------------------------------------------------------------ helpers

    def _each(
        self,
        files: Sequence[PendingFile],
        action: Callable[[PendingFile], None],
        failures: dict[object, OSError],
    ) -> list[PendingFile]:
        """Run ``action`` on every file in parallel; the ones that succeeded, in order."""

        def attempt(f: PendingFile) -> OSError | None:
            try:
                action(f)
            except OSError as exc:
                return exc
            return None

        done = []
        for f, outcome in zip(files, chunked_map(self._pool, attempt, files), strict=True):
            if outcome is None:
                done.append(f)
            else:
                failures[f.key] = outcome
        return done

    def _syncfs_of(self, directory: Path) -> None:
        assert self._syncfs is not None
        fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if self._syncfs(fd) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, f"syncfs: {os.strerror(errno)}")
        finally:
            os.close(fd)


def chunked_map(
    pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Sequence[T], chunk: int = CHUNK
) -> list[R]:
    """``[fn(x) for x in items]`` on the pool's threads, a chunk of items per task: one
    future per item would cost more than the small file operations it runs."""
    if len(items) <= chunk:
        return [fn(x) for x in items]

    def run(part: Sequence[T]) -> list[R]:
        return [fn(x) for x in part]

    parts = [items[i : i + chunk] for i in range(0, len(items), chunk)]
    return [r for done in pool.map(run, parts) for r in done]


def _tmp_of(path: Path) -> Path:
    return path.with_name(path.name + BATCH_TMP_SUFFIX)


def _write_tmp(f: PendingFile, *, fsync: bool) -> None:
    fd = os.open(_tmp_of(f.path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(f.data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _rename(f: PendingFile) -> None:
    tmp = _tmp_of(f.path)
    if f.lock is None:
        os.replace(tmp, f.path)
        return
    with f.lock:
        if f.commit():
            os.replace(tmp, f.path)
            return
    os.unlink(tmp)  # a newer content was written (durably) meanwhile


def _try_fsync_dir(directory: Path) -> OSError | None:
    try:
        fsync_dir(directory)
    except OSError as exc:
        return exc
    return None
