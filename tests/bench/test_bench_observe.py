"""The benchmark observers that need no cluster: state-change log reading, CPU accounting."""

from __future__ import annotations

import json
import os

import pytest

from bench.observe import Steady, cpu_seconds, log_size, state_change_records, wait_record

RECORDS = [
    {"kind": "controller", "event": "elected", "controller_epoch": 2, "ts_ms": 10},
    {"kind": "partition", "event": "", "controller_epoch": 2, "ts_ms": 11},
    {"kind": "controller", "event": "failover_done", "controller_epoch": 2, "duration_ms": 5.5},
    {"kind": "controller", "event": "failover_done", "controller_epoch": 3, "duration_ms": 7.0},
]


def write_log(path, records, partial: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + partial)


@pytest.mark.parametrize(
    ("match", "skip", "expected"),
    [
        ({"event": "failover_done"}, 0, [RECORDS[2], RECORDS[3]]),
        ({"event": "failover_done", "controller_epoch": 3}, 0, [RECORDS[3]]),
        ({"kind": "controller"}, 0, [RECORDS[0], RECORDS[2], RECORDS[3]]),
        ({"kind": "controller"}, 2, [RECORDS[2], RECORDS[3]]),
        ({"kind": "broker"}, 0, []),
        ({}, 4, []),
    ],
)
def test_state_change_records_from_an_offset(tmp_path, match, skip, expected):
    path = tmp_path / "state-change-1.log"
    since = len("".join(json.dumps(r) + "\n" for r in RECORDS[:skip]).encode())
    write_log(path, RECORDS, partial='{"kind": "contr')  # a line still being written
    assert state_change_records(path, since, **match) == expected


def test_records_after_an_offset_skip_what_was_there(tmp_path):
    path = tmp_path / "state-change-1.log"
    write_log(path, RECORDS[:2])
    since = log_size(path)
    with path.open("a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in RECORDS[2:]) + '{"kind": "contr')
    assert state_change_records(path, since, kind="controller") == RECORDS[2:]
    assert state_change_records(path, 0, kind="controller") == [RECORDS[0], *RECORDS[2:]]


def test_missing_log_has_no_records_and_no_size(tmp_path):
    path = tmp_path / "absent.log"
    assert (state_change_records(path, event="elected"), log_size(path)) == ([], 0)


async def test_wait_record_returns_the_first_match_or_times_out(tmp_path):
    path = tmp_path / "state-change-2.log"
    write_log(path, RECORDS)
    assert await wait_record(path, timeout=1, event="failover_done") == RECORDS[2]
    with pytest.raises(TimeoutError):
        await wait_record(path, since=log_size(path), timeout=0.3, event="elected")


def test_cpu_seconds_of_this_process_and_of_no_process():
    spent = cpu_seconds(os.getpid())
    sum(i * i for i in range(200_000))  # burn a little CPU
    assert cpu_seconds(os.getpid()) >= spent > 0
    assert cpu_seconds(2**22 + 12345) == 0.0


def test_steady_describes_the_named_processes():
    steady = Steady(4.0, {"broker-2": 0.41, "controller-1": 0.0, "broker-1": 0.384})
    assert steady.describe("broker-") == "broker-1 38%, broker-2 41%"
