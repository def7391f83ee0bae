"""snapshot -> plan -> ``leasehold reassign --execute`` -> verify, on a running cluster: the plan
drains broker 1, the cluster moves the replicas, and ends exactly as the plan said."""

from __future__ import annotations

import json
import os
import sys
import time

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from services.pipeline.cli import pipeline

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(ClusterSpec(controllers=2, brokers=4, session_ttl=3))
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


def leasehold(cluster, *args, input=None):
    result = CliRunner().invoke(build_cli(), ["--admin", cluster.admin_address, *args], input=input)
    assert result.exit_code == 0, result.output
    return result


def run_pipeline(*args):
    result = CliRunner().invoke(pipeline, ["--shuffle-partitions", "2", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def describe(cluster, name) -> dict:
    return json.loads(leasehold(cluster, "-o", "json", "topics", "describe", name).stdout)[0]


def poll(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_snapshot_plan_execute_verify(cluster, spark, tmp_path):
    # Every replica on brokers 1 and 2: broker 1 to drain, brokers 3 and 4 empty.
    leasehold(cluster, "topics", "create", "crowded", "--replica-assignment",
              "1:2,2:1,1:2,2:1,1:2,2:1", "--timeout", "40")  # fmt: skip
    lines = "".join(f"record-{i}\n" for i in range(60))
    leasehold(cluster, "produce", "crowded", "--acks", "all", input=lines)

    snap = tmp_path / "snap"
    run_pipeline("snapshot", "--etcd", cluster.etcd.endpoint, "--cluster-id",
                 cluster.spec.cluster_id, "--output", str(snap))  # fmt: skip
    manifest = json.loads((snap / "manifest.json").read_text())
    assert manifest["counts"]["brokers"] == 4 and manifest["log_sizes"]["problems"] == []
    parts = pq.read_table(snap / "partitions.parquet").to_pylist()
    crowded = [p for p in parts if p["topic"] == "crowded"]
    assert len(crowded) == 6
    assert sum(p["size_records"] for p in crowded) == 60
    assert all(p["size_bytes"] > 0 for p in crowded if p["size_records"])

    out = tmp_path / "plan"
    run_pipeline("plan", "--snapshot", str(snap), "--output", str(out), "--drain", "1",
                 "--threshold", "0")  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["goals_after"]["replica_capacity"] == 0
    assert summary["replica_moves"] >= 6  # every replica on broker 1 leaves
    plan = json.loads((out / "reassignment.json").read_text())
    targets = {(p["topic"], p["partition"]): p["replicas"] for p in plan["partitions"]}
    assert all(1 not in r for r in targets.values())

    leasehold(cluster, "reassign", "--execute", "--reassignment-json-file",
              str(out / "reassignment.json"))  # fmt: skip
    verified = leasehold(cluster, "reassign", "--verify", "--reassignment-json-file",
                         str(out / "reassignment.json"), "--timeout", "90")  # fmt: skip
    assert "completed" in verified.stdout

    def settled():
        topic = describe(cluster, "crowded")
        done = all(
            not p["adding_replicas"] and not p["removing_replicas"] for p in topic["partitions"]
        )
        return topic if done else None

    topic = poll(settled, 60, "reassignment to finish")
    for p in topic["partitions"]:
        expected = targets.get(("crowded", p["partition"]))
        if expected is not None:
            assert p["replicas"] == expected
        assert 1 not in p["replicas"]

    # A second snapshot of the moved cluster: the balance plan has nothing left to drain.
    again = tmp_path / "snap2"
    run_pipeline("snapshot", "--etcd", cluster.etcd.endpoint, "--cluster-id",
                 cluster.spec.cluster_id, "--output", str(again))  # fmt: skip
    run_pipeline("plan", "--snapshot", str(again), "--output", str(tmp_path / "plan2"),
                 "--drain", "1", "--engine", "local", "--threshold", "0")  # fmt: skip
    second = json.loads((tmp_path / "plan2" / "summary.json").read_text())
    assert second["goals_before"]["replica_capacity"] == 0
    assert (
        second["goals_before"]["replica_distribution"]
        == summary["goals_after"]["replica_distribution"]
    )
