"""The analyze job on a hand-written state-change log with known windows (two controllers'
files), run through the CLI so the whole job (tables, summary, HTML report) is exercised."""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest
from click.testing import CliRunner

from leasehold.statechange import StateChangeRecord
from services.pipeline.cli import pipeline

pytestmark = pytest.mark.spark
T0 = 1_700_000_000_000


def part(ts, topic, p, frm, to, leader, epoch, isr, reason, ctl=1):
    return StateChangeRecord(T0 + ts, "partition", ctl, ctl, topic, p, -1, frm, to, leader,
                             epoch, tuple(isr), reason)  # fmt: skip


def replica(ts, topic, p, r, frm, to, leader, epoch, isr, ctl=1):
    return StateChangeRecord(T0 + ts, "replica", ctl, ctl, topic, p, r, frm, to, leader, epoch,
                             tuple(isr), "offline")  # fmt: skip


def event(ts, kind, name, ctl, broker=-1, duration=-1.0):
    return StateChangeRecord(T0 + ts, kind, ctl, ctl, event=name, broker_id=broker,
                             duration_ms=duration)  # fmt: skip


ON, OFF, NEW, GONE = "OnlinePartition", "OfflinePartition", "NewPartition", "NonExistentPartition"
CONTROLLER_1 = [
    # incident 1: controller 1 takes over
    event(0, "controller", "elected", 1),
    event(250, "controller", "failover_done", 1, duration=250.0),
    part(300, "orders", 0, NEW, ON, 1, 0, [1, 2], "new"),
    part(300, "orders", 1, NEW, ON, 3, 0, [3, 2], "new"),
    part(300, "solo", 0, NEW, ON, 3, 0, [3], "new"),
    # incident 2: broker 3 dies; orders-1 fails over in 2 ms, solo-0 (rf 1) waits for it
    event(100_000, "broker", "expired", 1, broker=3),
    part(100_010, "solo", 0, ON, OFF, 3, 0, [3], "offline"),
    part(100_010, "orders", 1, ON, OFF, 3, 0, [3, 2], "offline"),
    part(100_012, "orders", 1, OFF, ON, 2, 1, [2], "offline"),
    replica(100_015, "solo", 0, 3, "OnlineReplica", "OfflineReplica", -1, 1, [3]),
    replica(100_015, "orders", 1, 3, "OnlineReplica", "OfflineReplica", 2, 1, [2]),
    event(130_000, "broker", "registered", 1, broker=3),
    replica(130_020, "solo", 0, 3, "OfflineReplica", "OnlineReplica", -1, 1, [3]),
    part(130_030, "solo", 0, OFF, ON, 3, 2, [3], "offline"),
    part(131_000, "orders", 1, ON, ON, 2, 1, [2, 3], "isr_expand"),
    part(135_000, "orders", 1, ON, ON, 3, 2, [2, 3], "preferred"),  # outside the incident
    # a deletion is not an outage
    part(160_000, "gone", 0, ON, OFF, 1, 0, [1], "deletion"),
    part(160_010, "gone", 0, OFF, GONE, 1, 0, [1], "deletion"),
]
CONTROLLER_2 = [
    # incident 3: failover to controller 2, then an unclean election of orders-0
    event(300_000, "controller", "elected", 2),
    event(300_400, "controller", "failover_done", 2, duration=400.0),
    part(300_450, "orders", 0, ON, OFF, 1, 0, [1], "offline", ctl=2),
    part(300_500, "orders", 0, OFF, ON, 2, 1, [2], "unclean", ctl=2),
    event(400_000, "controller", "resigned", 2),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    for name, records in (
        ("state-change-1.log", CONTROLLER_1),
        ("state-change-2.log", CONTROLLER_2),
    ):
        (logs / name).write_text("".join(r.to_json() + "\n" for r in records))
    out = tmp_path_factory.mktemp("analysis")
    result = CliRunner().invoke(
        pipeline, ["--shuffle-partitions", "2", "analyze", str(logs), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out


def table(out, name) -> pd.DataFrame:
    return pd.read_parquet(out / f"{name}.parquet")


def test_offline_windows(report):
    w = table(report, "offline_windows")
    got = [(r.topic, r.partition, r.start_ms - T0, r.end_ms - T0, r.duration_ms, r.open,
            r.start_reason, r.end_reason) for r in w.itertuples()]  # fmt: skip
    assert got == [
        ("orders", 1, 100_010, 100_012, 2, False, "offline", "offline"),
        ("solo", 0, 100_010, 130_030, 30_020, False, "offline", "offline"),
        ("orders", 0, 300_450, 300_500, 50, False, "offline", "unclean"),
    ]


def test_under_replicated_failovers_and_broker_downtime(report):
    urp = table(report, "under_replicated")
    assert [
        (r.topic, r.partition, r.start_ms - T0, r.end_ms - T0, r.open) for r in urp.itertuples()
    ] == [
        ("orders", 1, 100_012, 131_000, False),
        ("orders", 0, 300_450, 400_000, True),  # still under-replicated when the log ends
    ]
    fo = table(report, "failovers")
    assert [
        (r.controller_id, r.controller_epoch, r.elected_ms - T0, r.duration_ms)
        for r in fo.itertuples()
    ] == [
        (1, 1, 0, 250.0),
        (2, 2, 300_000, 400.0),
    ]
    down = table(report, "broker_downtime")
    assert [(r.broker_id, r.start_ms - T0, r.duration_ms) for r in down.itertuples()] == [
        (3, 100_000, 30_000)
    ]


def test_incidents_are_separated_by_quiet_gaps(report):
    inc = table(report, "incidents")
    got = [(r.incident, r.start_ms - T0, r.end_ms - T0, r.offline_windows, r.offline_partition_ms,
            r.max_offline_ms, r.under_replicated_partition_ms, r.failovers, r.broker_downs,
            r.unclean_elections, r.elections) for r in inc.itertuples()]  # fmt: skip
    assert got == [
        (1, 0, 250, 0, 0, 0, 0, 1, 0, 0, 0),
        (2, 100_000, 131_000, 2, 30_022, 30_020, 30_988, 0, 1, 0, 2),
        (3, 300_000, 400_000, 1, 50, 50, 99_550, 1, 0, 1, 1),
    ]
    by_incident = table(report, "elections_by_incident")
    assert sorted(map(tuple, by_incident[["incident", "reason", "elections"]].values.tolist())) == [
        (0, "new", 3), (0, "preferred", 1), (2, "offline", 2), (3, "unclean", 1),
    ]  # fmt: skip


def test_summary_and_report(report):
    summary = json.loads((report / "summary.json").read_text())
    assert summary["elections_by_reason"] == {"new": 3, "offline": 2, "preferred": 1, "unclean": 1}
    expected = {
        "records": len(CONTROLLER_1) + len(CONTROLLER_2),
        "incidents": 3, "offline_windows": 3, "open_offline_windows": 0,
        "offline_partitions": 3, "offline_partition_ms": 30_072, "max_offline_ms": 30_020,
        "elections": 7, "unclean_elections": 1, "under_replicated_intervals": 2,
        "under_replicated_partition_ms": 130_538, "controller_failovers": 2,
        "max_failover_ms": 400.0, "mean_failover_ms": 325.0, "broker_downs": 1,
        "log_start_ms": T0, "log_end_ms": T0 + 400_000,
    }  # fmt: skip
    assert {k: summary[k] for k in expected} == expected
    html = (report / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 3  # timeline, elections, incidents
    png = html.split('src="data:image/png;base64,')[1].split('"')[0]
    assert base64.b64decode(png).startswith(b"\x89PNG")
    for text in (
        "Incident 2: 2023-11-14 22:15:00.000 to 2023-11-14 22:15:31.000 (31.000 s)",
        "30.020 s",
        "Definitions",
        "unclean",
    ):
        assert text in html
