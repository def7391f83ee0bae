"""Closing one log's descriptors touches only that directory's files, evicted or not."""

from __future__ import annotations

import os
from pathlib import Path

from services.broker_agent.log import FileHandleCache


def open_all(cache: FileHandleCache, paths: list[Path]) -> None:
    for path in paths:
        with cache.use(path, create=True) as fd:
            os.write(fd, b"x")


def test_close_under_closes_exactly_that_directorys_files(tmp_path: Path) -> None:
    for name in ("t-1", "t-10", "t-2"):
        (tmp_path / name).mkdir()
    cache = FileHandleCache(max_open=10)
    t1 = [tmp_path / "t-1" / f"{i}.log" for i in range(3)]
    t10 = [tmp_path / "t-10" / f"{i}.log" for i in range(2)]  # shares t-1's name prefix
    t2 = [tmp_path / "t-2" / "0.log"]
    open_all(cache, t1 + t10 + t2)
    assert cache.open_count == 6
    cache.close_under(tmp_path / "t-1")
    assert cache.open_count == 3
    cache.close_under(str(tmp_path / "t-10") + os.sep)  # a trailing separator is the same dir
    assert cache.open_count == 1
    cache.close_under(tmp_path / "t-1")  # nothing left there
    assert cache.open_count == 1
    opens = cache.opens
    with cache.use(t2[0]):
        pass
    assert cache.opens == opens  # t-2's descriptor was kept


def test_evicted_and_closed_files_leave_no_trace_for_close_under(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cache = FileHandleCache(max_open=2)
    a = [tmp_path / "a" / f"{i}" for i in range(3)]
    open_all(cache, a)  # a/0 evicted
    cache.close(a[1])
    assert cache.open_count == 1
    open_all(cache, [tmp_path / "b" / "0"])
    cache.close_under(tmp_path / "a")
    assert cache.open_count == 1
    cache.close_under(tmp_path / "b")
    assert cache.open_count == 0
    open_all(cache, a[:1])  # reopening after everything was closed works as before
    assert cache.open_count == 1
    cache.close_all()
    assert cache.open_count == 0
