"""Smoke test of the scale benchmark (quick mode: 12 simulated brokers, 1,200 partitions)."""

from __future__ import annotations

import json
import math
import os

import pytest
from bench_smoke_harness import run_quick

pytestmark = pytest.mark.e2e

ROWS = {
    "topic creation",
    "controller SIGKILL, digest-first",
    "broker SIGKILL, 100 led",
    "controlled shutdown, 100 led",
    "controller SIGKILL, full metadata",
}


def test_scale_reports_every_scenario_labelled_simulation(tmp_path):
    proc = run_quick(["scale"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "scale.json").read_text())
    assert (data["status"], data["error"]) == ("ok", "")
    times, cpu, memory = data["results"]
    assert times["title"] == "simulation: 12 brokers x 1,200 partitions (RF 3)"
    assert cpu["title"] == "simulation: CPU, 12 brokers x 1,200 partitions (RF 3)"
    assert [r["label"] for r in cpu["rows"]] == [r["label"] for r in times["rows"]]
    assert memory["title"] == "simulation: memory, 12 brokers x 1,200 partitions (RF 3)"
    rows = {r["label"]: r["values"] for r in times["rows"]}
    assert set(rows) == ROWS
    for row in times["rows"]:
        assert row["note"].startswith("simulation"), row
        assert all(math.isfinite(v) for v in row["values"].values()), row
        # Expiry to detected compares two watches of one deletion: the controller's may be
        # delivered a moment before the benchmark's own.
        assert all(v >= 0 for k, v in row["values"].items() if k != "detected_ms"), row
        assert row["values"]["from_fault_ms"] > 0, row
    # A SIGKILL is noticed when the lease expires: never sooner than from the expiry.
    for label in ("controller SIGKILL, digest-first", "broker SIGKILL, 100 led"):
        assert rows[label]["from_fault_ms"] > rows[label]["from_expiry_ms"], label
    # The broker SIGKILL split at the controller's detection: the first broker is told after
    # it, and the detection comes well within the time to the last broker told.
    killed = rows["broker SIGKILL, 100 led"]
    assert killed["first_told_after_detected_ms"] >= 0
    assert killed["detected_ms"] < killed["from_expiry_ms"]
    # The first broker told: its request's arrival to applied is part of detected to told.
    assert killed["first_told_applied_ms"] <= killed["first_told_after_detected_ms"]
    for label in ("broker SIGKILL, 100 led", "controlled shutdown, 100 led"):
        row = rows[label]
        assert 0 <= row["last_told_applied_ms"] <= row["from_fault_ms"], label
        assert row["first_told_applied_ms"] <= row["from_fault_ms"], label
    # The spread from the first broker told to the last is within the time to the last.
    for label, row in rows.items():
        if label != "topic creation":
            assert row["spread_ms"] <= row["from_fault_ms"], label
    # Digest-first sends a broker kept up to date its digest alone; no broker disagreed.
    digest, full = (
        rows["controller SIGKILL, digest-first"],
        rows["controller SIGKILL, full metadata"],
    )
    assert digest["mismatches"] == 0
    assert 0 < digest["um_bytes"] < full["um_bytes"]
    # Counted until each failover was done: never less than until every broker had its epoch.
    for row in (digest, full):
        assert row["um_bytes_all"] >= row["um_bytes"] and row["lai_states"] >= 0
    # Brokers that took the digest are resent nothing they hold; the full path resends all.
    assert digest["um_bytes_all"] < full["um_bytes_all"]
    # Where each failure's time went: every row names the CPU each side used in it.
    for label, row in rows.items():
        for side in ("controllers", "fleet", "etcd"):
            assert f"{side}_cpu_ms" in row, (label, side)
        # The active controller's share is part of the controllers' (both read from /proc).
        assert 0 <= row["active_cpu_ms"] <= row["controllers_cpu_ms"] + 1e-6, label
        assert row["cores_at_rest"] <= 2.0 * (os.cpu_count() or 1), label
    # Creating 1,200 partitions and sending every broker all of them take CPU on both sides.
    for label in ("topic creation", "controller SIGKILL, full metadata"):
        assert rows[label]["controllers_cpu_ms"] > 0 and rows[label]["fleet_cpu_ms"] > 0, label
    # The creation is the active controller's work.
    assert rows["topic creation"]["active_cpu_ms"] > 0
    (mem,) = memory["rows"]
    assert all(v > 0 for v in mem["values"].values()), mem
