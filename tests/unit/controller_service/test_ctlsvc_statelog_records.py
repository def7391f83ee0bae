"""State-change records: the JSON written is exactly the old ``asdict`` encoding, and the
controller's log is encoded and written at ``flush`` (once per event), in the trace each record
was written in, with transitions logged at DEBUG."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import asdict, fields

import pytest

from leasehold import telemetry
from leasehold.statechange import StateChangeRecord
from services.controller.statelog import StateChangeLog


def _reference(r: StateChangeRecord, trace_id: str = "") -> str:
    """The encoding before it was hand-built (kept here as the format's definition)."""
    data = asdict(r)
    data["isr"] = list(r.isr)
    if trace_id and not r.trace_id:
        data["trace_id"] = trace_id
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


RECORDS = [
    StateChangeRecord(1, "controller", 1, 2, event="elected"),
    StateChangeRecord(2, "controller", 1, 2, event="failover_done", duration_ms=12.5),
    StateChangeRecord(3, "broker", 1, 2, event="expired", broker_id=3),
    StateChangeRecord(
        4,
        "partition",
        1,
        2,
        't\u00e9"x\\',
        7,
        -1,
        "OfflinePartition",
        "OnlinePartition",
        3,
        9,
        (3, 1),
        "unclean",
    ),  # fmt: skip
    StateChangeRecord(
        5,
        "replica",
        1,
        2,
        "t",
        0,
        2,
        "OnlineReplica",
        "OfflineReplica",
        -1,
        4,
        (1,),
        "x",
        trace_id="abc",
    ),  # fmt: skip
]

# Only for the encoding: control characters and non-ASCII in every string field, an int
# duration, big numbers, non-finite durations.
ODD_RECORDS = [
    StateChangeRecord(
        2**53 + 1,
        "partition",
        -7,
        0,
        "\u2603\t\x00",
        2**31 - 1,
        -1,
        "New\nPartition",
        "\U0001f600",
        -1,
        0,
        (),
        "a\u2028b/c",
        "ev\r",
        12,
        7,
        "\x7f",
    ),  # fmt: skip
    StateChangeRecord(6, "controller", 1, 2, event="failover_done", duration_ms=float("nan")),
    StateChangeRecord(7, "controller", 1, 2, event="failover_done", duration_ms=float("-inf")),
    StateChangeRecord(8, "controller", 1, 2, event="failover_done", duration_ms=1e-7),
]


@pytest.mark.parametrize("record", RECORDS + ODD_RECORDS)
@pytest.mark.parametrize("trace_id", ["", "f00d"])
def test_to_json_matches_the_reference_encoding(record: StateChangeRecord, trace_id: str) -> None:
    assert record.to_json(trace_id) == _reference(record, trace_id)
    back = StateChangeRecord.from_json(record.to_json())
    if back.duration_ms != back.duration_ms:  # NaN equals nothing, itself included
        assert record.duration_ms != record.duration_ms
        back = dataclasses.replace(back, duration_ms=record.duration_ms)
    assert back == record


def test_to_json_names_every_field() -> None:
    keys = set(json.loads(RECORDS[3].to_json()))
    assert keys == {f.name for f in fields(StateChangeRecord)}


def test_log_is_deferred_until_flush_and_transitions_log_at_debug(tmp_path, caplog) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(str(path), controller_id=1)
    with caplog.at_level(logging.INFO, logger="state.change"):
        log.write(RECORDS[:2])
        log.write(RECORDS[2:])
        assert (path.read_text(), caplog.records, log.count) == ("", [], 5)  # nothing encoded yet
        log.flush()
    assert path.read_text().splitlines() == [r.to_json() for r in RECORDS]
    assert [m.getMessage() for m in caplog.records] == [r.to_json() for r in RECORDS[:3]]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="state.change"):
        log.write(RECORDS[3:])
        log.flush()
    assert [m.levelno for m in caplog.records] == [logging.DEBUG, logging.DEBUG]
    log.write(RECORDS[:1])
    log.close()  # flushes the rest
    assert len(path.read_text().splitlines()) == 8 and log.count == 8


def test_records_carry_the_trace_they_were_written_in(tmp_path, monkeypatch) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(str(path), controller_id=1)
    monkeypatch.setattr(telemetry, "current_trace_id", lambda: "t1")
    log.write(RECORDS[3:])
    monkeypatch.setattr(telemetry, "current_trace_id", lambda: "")
    log.write(RECORDS[:1])
    log.close()
    traces = [json.loads(line)["trace_id"] for line in path.read_text().splitlines()]
    assert traces == ["t1", "abc", ""]  # a record's own trace id wins
