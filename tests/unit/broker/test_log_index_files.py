"""A new segment creates only its log file; the index files appear with their first entry."""

from __future__ import annotations

import os
from pathlib import Path

from services.broker_agent.log import Log, LogConfig, Record, decode_records

T0 = 1_000_000
BASE = f"{0:020d}"


def open_log(directory: Path, interval: int) -> Log:
    return Log.open(directory, LogConfig(index_interval_bytes=interval), clock=lambda: T0)


def segment_files(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith(BASE))


def test_a_new_log_creates_only_the_segment_log_file(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", interval=4096)
    assert segment_files(tmp_path / "t-0") == [f"{BASE}.log"]
    log.append_as_leader([Record(b"small")], 0, now_ms=T0)  # below the interval: no entry
    log.flush()
    assert segment_files(tmp_path / "t-0") == [f"{BASE}.log"]
    log.close()


def test_index_files_appear_with_the_first_entry_and_survive_a_reopen(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, interval=100)
    for i in range(10):
        log.append_as_leader([Record(b"v" * 60)], 0, now_ms=T0 + i)
    log.flush()
    assert segment_files(directory) == [f"{BASE}.index", f"{BASE}.log", f"{BASE}.timeindex"]
    segment = log._local.segments[0]
    entries = list(segment.offset_index._keys)
    assert entries == list(range(1, 10))  # each batch is over 100 bytes: all but the 1st
    log.close()
    reopened = open_log(directory, interval=100)
    assert list(reopened._local.segments[0].offset_index._keys) == entries
    records = decode_records(reopened.read(0, 1 << 20).records)
    assert [r.offset for r in records] == list(range(10))
    reopened.close()


def test_a_log_without_index_files_reopens_empty_and_appends(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    open_log(directory, interval=4096).close()
    reopened = open_log(directory, interval=4096)
    assert segment_files(directory) == [f"{BASE}.log"]  # reading a missing index creates nothing
    assert reopened.log_end_offset == 0
    info = reopened.append_as_leader([Record(b"x")], 0, now_ms=T0)
    assert (info.first_offset, reopened.log_end_offset) == (0, 1)
    reopened.close()
