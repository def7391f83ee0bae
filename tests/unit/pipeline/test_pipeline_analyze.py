"""The analyze job on a hand-written state-change log with known windows (two controllers'
files), run through the CLI so the whole job (tables, summary, HTML report) is exercised."""

from __future__ import annotations

import base64
import json
import re

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


def event(ts, kind, name, ctl, broker=-1, duration=-1.0, epoch=None, **evidence):
    evidence = {k: T0 + v if k != "lease_ttl_ms" else v for k, v in evidence.items()}
    return StateChangeRecord(T0 + ts, kind, ctl, ctl if epoch is None else epoch, event=name,
                             broker_id=broker, duration_ms=duration, **evidence)  # fmt: skip


ON, OFF, NEW, GONE = "OnlinePartition", "OfflinePartition", "NewPartition", "NonExistentPartition"
CONTROLLER_1 = [
    # incident 1: controller 1 takes over
    event(0, "controller", "elected", 1),
    event(250, "controller", "failover_done", 1, duration=250.0),
    part(300, "orders", 0, NEW, ON, 1, 0, [1, 2], "new"),
    part(300, "orders", 1, NEW, ON, 3, 0, [3, 2], "new"),
    part(300, "solo", 0, NEW, ON, 3, 0, [3], "new"),
    # incident 2: broker 3 dies after its last keep-alive at 96,995 (its lease of 3 s expires,
    # etcd tells the controller at 99,995); orders-1 fails over in 2 ms after the controller's
    # record, solo-0 (rf 1) waits for the broker to come back
    event(
        100_000,
        "broker",
        "expired",
        1,
        broker=3,
        detected_ms=99_995,
        lease_ttl_ms=3_000,
        registered_ms=50_000,
    ),  # fmt: skip
    part(100_010, "solo", 0, ON, OFF, 3, 0, [3], "offline"),
    part(100_010, "orders", 1, ON, OFF, 3, 0, [3, 2], "offline"),
    part(100_012, "orders", 1, OFF, ON, 2, 1, [2], "offline"),
    replica(100_015, "solo", 0, 3, "OnlineReplica", "OfflineReplica", -1, 1, [3]),
    replica(100_015, "orders", 1, 3, "OnlineReplica", "OfflineReplica", 2, 1, [2]),
    event(130_000, "broker", "registered", 1, broker=3, registered_ms=129_900),
    replica(130_020, "solo", 0, 3, "OfflineReplica", "OnlineReplica", -1, 1, [3]),
    part(130_030, "solo", 0, OFF, ON, 3, 2, [3], "offline"),
    part(131_000, "orders", 1, ON, ON, 2, 1, [2, 3], "isr_expand"),
    part(135_000, "orders", 1, ON, ON, 3, 2, [2, 3], "preferred"),  # outside the incident
    # a deletion is not an outage
    part(160_000, "gone", 0, ON, OFF, 1, 0, [1], "deletion"),
    part(160_010, "gone", 0, OFF, GONE, 1, 0, [1], "deletion"),
    # controller 1's last sign of life before it dies
    event(297_000, "controller", "heartbeat", 1),
    # incident 4: controller 2 resigns cleanly; controller 1 takes over (epoch 3)
    event(400_030, "controller", "elected", 1, epoch=3, detected_ms=400_020, lease_ttl_ms=5_000),
    event(400_040, "controller", "failover_done", 1, epoch=3, duration=10.0),
]
CONTROLLER_2 = [
    # incident 3: controller 1 died (last heartbeat 297,000); controller 2 won at 299,990, its
    # predecessor's lease (5 s) having expired; then an unclean election of orders-0
    event(300_000, "controller", "elected", 2, detected_ms=299_990, lease_ttl_ms=5_000),
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


def test_offline_windows_start_at_the_evidence_of_their_fault(report):
    w = table(report, "offline_windows")
    got = [(r.topic, r.partition, r.start_ms - T0, r.start_evidence, r.cause, r.detected_ms - T0,
            r.detection_delay_ms, r.end_ms - T0, r.duration_ms, r.open, r.start_reason,
            r.end_reason) for r in w.itertuples()]  # fmt: skip
    assert got == [
        # broker 3's last keep-alive: 99,995 (etcd's report) - 3,000 (its lease TTL)
        ("orders", 1, 96_995, "last keep-alive", "broker 3", 100_010, 3_015, 100_012, 3_017,
         False, "offline", "offline"),
        ("solo", 0, 96_995, "last keep-alive", "broker 3", 100_010, 3_015, 130_030, 33_035,
         False, "offline", "offline"),
        # broker 1 was never lost: nothing better than the controller's record
        ("orders", 0, 300_450, "detection", "", 300_450, 0, 300_500, 50, False, "offline",
         "unclean"),
    ]  # fmt: skip


def test_under_replicated_failovers_and_broker_downtime(report):
    urp = table(report, "under_replicated")
    got = [(r.topic, r.partition, r.start_ms - T0, r.start_evidence, r.cause,
            r.detection_delay_ms, r.end_ms - T0, r.open) for r in urp.itertuples()]  # fmt: skip
    assert got == [
        # the ISR lost broker 3: dated by that loss
        ("orders", 1, 96_995, "last keep-alive", "broker 3", 3_017, 131_000, False),
        ("orders", 0, 300_450, "detection", "", 0, 400_040, True),  # open when the log ends
    ]
    fo = table(report, "failovers")
    got = [(r.controller_id, r.controller_epoch, r.start_ms - T0, r.start_evidence,
            r.detected_ms - T0, r.detection_delay_ms, r.elected_ms - T0, r.failover_ms,
            r.done_ms - T0, r.duration_ms) for r in fo.itertuples()]  # fmt: skip
    assert got == [
        (1, 1, 0, "first election", 0, 0, 0, 250.0, 250, 250),
        # controller 1's heartbeat at 297,000 is later than its lease says (294,990)
        (2, 2, 297_000, "controller heartbeat", 299_990, 2_990, 300_000, 400.0, 300_400, 3_400),
        # controller 2 resigned at 400,000 and said so
        (1, 3, 400_000, "resignation", 400_020, 20, 400_030, 10.0, 400_040, 40),
    ]  # fmt: skip
    down = table(report, "broker_downtime")
    got = [(r.broker_id, r.start_ms - T0, r.start_evidence, r.detection_delay_ms,
            r.end_ms - T0, r.duration_ms, r.lease_ttl_ms) for r in down.itertuples()]  # fmt: skip
    # back at the broker's own registration time (129,900), not the controller's record
    assert got == [(3, 96_995, "last keep-alive", 3_000, 129_900, 32_905, 3_000)]


def test_incidents_are_separated_by_quiet_gaps(report):
    inc = table(report, "incidents")
    got = [(r.incident, r.start_ms - T0, r.end_ms - T0, r.detection_delay_ms,
            r.max_detection_delay_ms, r.offline_windows, r.offline_partition_ms,
            r.max_offline_ms, r.under_replicated_partition_ms, r.failovers, r.max_failover_ms,
            r.broker_downs, r.unclean_elections, r.elections)
           for r in inc.itertuples()]  # fmt: skip
    assert got == [
        (1, 0, 250, 0, 0, 0, 0, 0, 0, 1, 250.0, 0, 0, 0),
        (2, 96_995, 131_000, 3_000, 3_017, 2, 36_052, 33_035, 34_005, 0, 0.0, 1, 0, 2),
        (3, 297_000, 400_040, 2_990, 2_990, 1, 50, 50, 99_590, 2, 400.0, 0, 1, 1),
    ]  # fmt: skip
    by_incident = table(report, "elections_by_incident")
    assert sorted(map(tuple, by_incident[["incident", "reason", "elections"]].values.tolist())) == [
        (0, "new", 3), (0, "preferred", 1), (2, "offline", 2), (3, "unclean", 1),
    ]  # fmt: skip


def test_figures_agree_across_tables(report):
    summary = json.loads((report / "summary.json").read_text())
    inc, fo = table(report, "incidents"), table(report, "failovers")
    off, urp = table(report, "offline_windows"), table(report, "under_replicated")
    imp, down = table(report, "impairments"), table(report, "broker_downtime")
    assert summary["max_failover_ms"] == fo["failover_ms"].max() == inc["max_failover_ms"].max()
    assert summary["offline_partition_ms"] == off["duration_ms"].sum()
    assert summary["offline_partition_ms"] == inc["offline_partition_ms"].sum()
    assert summary["under_replicated_partition_ms"] == inc["under_replicated_partition_ms"].sum()
    assert summary["under_replicated_partition_ms"] == urp["duration_ms"].sum()
    assert summary["max_detection_delay_ms"] == inc["max_detection_delay_ms"].max()
    assert summary["broker_down_ms"] == down["duration_ms"].sum()
    for kind, source in (("offline", off), ("under_replicated", urp), ("failover", fo)):
        rows = imp[imp["kind"] == kind]
        assert sorted(rows["duration_ms"]) == sorted(source["duration_ms"])
        assert sorted(rows["start_ms"]) == sorted(source["start_ms"])


def test_summary_and_report(report):
    summary = json.loads((report / "summary.json").read_text())
    assert summary["elections_by_reason"] == {"new": 3, "offline": 2, "preferred": 1, "unclean": 1}
    expected = {
        "records": len(CONTROLLER_1) + len(CONTROLLER_2),
        "incidents": 3, "offline_windows": 3, "open_offline_windows": 0,
        "offline_partitions": 3, "offline_partition_ms": 36_102, "max_offline_ms": 33_035,
        "elections": 7, "unclean_elections": 1, "under_replicated_intervals": 2,
        "under_replicated_partition_ms": 133_595, "controller_failovers": 3,
        "max_failover_ms": 400.0, "mean_failover_ms": 220.0, "max_controller_outage_ms": 3_400,
        "broker_downs": 1, "broker_down_ms": 32_905, "max_detection_delay_ms": 3_017,
        "log_start_ms": T0, "log_end_ms": T0 + 400_040,
    }  # fmt: skip
    assert {k: summary[k] for k in expected} == expected
    html = (report / "report.html").read_text()
    # whole-log timeline, elections by selector, one timeline zoomed to each incident
    assert html.count('src="data:image/png;base64,') == 5
    png = html.split('src="data:image/png;base64,')[1].split('"')[0]
    assert base64.b64decode(png).startswith(b"\x89PNG")
    for text in (
        "Incident 2: 2023-11-14 22:14:56.995 to 22:15:31.000 UTC (34.005 s)",
        "33.035 s",  # solo-0 offline
        "3.015 s",  # its detection delay
        "last keep-alive",
        "controller heartbeat",
        "<dt>Detection delay</dt>",
        "unclean",
    ):
        assert text in html, text
    text = re.sub(r"data:image/png;base64,[^\"]+", "", html)  # base64 may spell anything
    for raw in ("NaN", "nan<", "1700000", ">-1<", "33035", "250.0<", "None"):
        assert raw not in text, raw


def test_report_reads_well_in_a_browser(report, tmp_path):
    """The page as a person sees it in a 1,400-px window: no sideways scroll, no table or plot
    wider than the window, every plot rendered (the PNG is kept for a look)."""
    from leasehold.testing import browser

    if browser.find_chromium() is None:
        pytest.skip("chromium is not installed (make browser)")
    page = report / "report.html"
    seen = browser.layout(page, width=1400)
    assert seen.scroll_width <= 1400 and not seen.overflowing, seen
    assert seen.images == 5 and seen.broken_images == 0, seen
    shot = browser.screenshot(page, report / "report.png", width=1400, height=3000)
    assert shot.read_bytes().startswith(b"\x89PNG")
