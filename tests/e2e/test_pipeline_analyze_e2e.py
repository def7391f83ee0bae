"""analyze on the state-change log a real controller wrote while a broker was killed and
restarted: the report's windows start at the kill (within one lease TTL), not at the
controller's detection of it, and say so."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from services.pipeline.cli import pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


TTL_S = 3


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(ClusterSpec(controllers=2, brokers=3, session_ttl=TTL_S))
    try:
        c.start()
        yield c
    finally:
        c.stop()
        c.remove_workdir()


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from services.pipeline.session import SparkSettings, build_session

    session = build_session(SparkSettings(master="local[2]", shuffle_partitions=2))
    yield session
    session.stop()


def leasehold(cluster, *args):
    result = CliRunner().invoke(build_cli(), ["--admin", cluster.admin_address, *args])
    assert result.exit_code == 0, result.output
    return result


def leader_of(cluster, topic: str) -> int:
    described = json.loads(leasehold(cluster, "-o", "json", "topics", "describe", topic).stdout)
    return described[0]["partitions"][0]["leader"]


def poll(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        if probe():
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_offline_window_of_a_killed_and_restarted_broker(cluster, spark, tmp_path):
    leasehold(cluster, "topics", "create", "only-on-3", "--replica-assignment", "3",
              "--timeout", "40")  # fmt: skip
    leasehold(cluster, "topics", "create", "on-3-and-1", "--replica-assignment", "3:1",
              "--timeout", "40")  # fmt: skip
    poll(lambda: leader_of(cluster, "only-on-3") == 3, 30, "only-on-3 online")
    broker = cluster.brokers[3]
    killed_ms = int(time.time() * 1000)
    broker.kill()
    poll(lambda: leader_of(cluster, "only-on-3") == -1, 30, "only-on-3 offline")
    seen_offline_ms = int(time.time() * 1000)
    poll(lambda: leader_of(cluster, "on-3-and-1") == 1, 30, "on-3-and-1 failed over")
    restarted_ms = int(time.time() * 1000)
    broker.start()
    broker.wait_ready()
    poll(lambda: leader_of(cluster, "only-on-3") == 3, 60, "only-on-3 back online")
    back_ms = int(time.time() * 1000)

    logs = [str(cluster.workdir / f"state-change-{c}.log") for c in cluster.controllers]
    logs = [p for p in logs if os.path.exists(p) and os.path.getsize(p)]
    assert logs, "no controller wrote a state-change log"
    out = tmp_path / "analysis"
    result = CliRunner().invoke(
        pipeline, ["--shuffle-partitions", "2", "analyze", *logs, "--output", str(out)]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)

    import pandas as pd

    windows = pd.read_parquet(out / "offline_windows.parquet")
    solo = windows[(windows["topic"] == "only-on-3") & (windows["partition"] == 0)]
    assert len(solo) == 1, windows
    w = solo.iloc[0]
    ttl_ms = TTL_S * 1000
    # The window starts at the kill, dated by the broker's last keep-alive (etcd's report of
    # the lost registration minus its lease TTL), within one TTL of the real instant; the
    # controller's own record of it comes a detection delay later.
    assert abs(w["start_ms"] - killed_ms) <= ttl_ms, (w["start_ms"] - killed_ms, w)
    assert w["start_evidence"] == "last keep-alive" and w["cause"] == "broker 3"
    assert w["detected_ms"] <= seen_offline_ms and not w["open"]
    assert w["detection_delay_ms"] == w["detected_ms"] - w["start_ms"] > 0
    assert restarted_ms <= w["end_ms"] <= back_ms
    assert w["duration_ms"] == w["end_ms"] - w["start_ms"] > 0
    # The partition that failed over to broker 1: offline from the kill until the election
    # that followed the detection (not the 1 ms between two controller records).
    moved = windows[windows["topic"] == "on-3-and-1"].iloc[0]
    assert abs(moved["start_ms"] - killed_ms) <= ttl_ms
    assert moved["duration_ms"] >= moved["detection_delay_ms"] > 0
    down = pd.read_parquet(out / "broker_downtime.parquet")
    down = down[down["broker_id"] == 3].iloc[0]
    assert abs(down["start_ms"] - killed_ms) <= ttl_ms and down["lease_ttl_ms"] == ttl_ms
    assert down["start_evidence"] == "last keep-alive" and down["start_ms"] == w["start_ms"]
    incidents = pd.read_parquet(out / "incidents.parquet")
    mine = incidents[
        (incidents["start_ms"] <= w["start_ms"]) & (incidents["end_ms"] >= w["end_ms"])
    ]
    assert len(mine) == 1 and mine.iloc[0]["offline_partitions"] >= 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["offline_windows"] >= 1 and summary["elections_by_reason"].get("offline", 0) >= 1
    failovers = pd.read_parquet(out / "failovers.parquet")
    assert failovers.iloc[0]["start_evidence"] == "first election"  # the cluster's start
    # the active controller's heartbeats (every 5 s by default) are in its log
    text = "".join(open(p, encoding="utf-8").read() for p in logs)
    assert '"event":"heartbeat"' in text
    html = (out / "report.html").read_text()
    assert "only-on-3" in html and "data:image/png;base64," in html
