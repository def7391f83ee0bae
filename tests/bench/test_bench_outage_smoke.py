"""Smoke test of the etcd outage benchmark (quick mode: 300 partitions, 5 s outages).

Beyond "present and consistent", what the suite counts is checked: an etcd restart or a pause
past the TTL changes no partition's leader or ISR and loses no acknowledged record.
"""

from __future__ import annotations

import json
import math

import pytest
from bench_smoke_harness import run_quick

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-results")
    proc = run_quick(["etcd_outage"], out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "etcd_outage.json").read_text())


def test_etcd_outages_report_one_table_per_outage_with_its_baseline(data):
    assert (data["mode"], data["status"], data["error"]) == ("quick", "ok", "")
    titles = [r["title"] for r in data["results"]]
    assert titles == [
        "etcd SIGKILL, restarted 5 s later under 300 partitions (RF 3, 3 brokers, acks=all "
        "producers)",
        "etcd SIGSTOP 5 s under 300 partitions (RF 3, 3 brokers, acks=all producers)",
    ]
    for result in data["results"]:
        baseline, cluster = result["rows"]
        assert baseline["label"] == result["baseline"]
        assert baseline["ratio_to_baseline"] == 1.0
        values = cluster["values"]
        assert all(math.isfinite(v) for v in values.values())
        assert values["admin_ms"] > 0 and values["acked"] > 0
        assert (values["leader_changes"], values["isr_shrinks"]) == (0, 0), cluster


def test_no_acknowledged_record_lost(data):
    notes = " ".join(data["results"][0]["notes"])
    assert "0 acknowledged records lost" in notes
