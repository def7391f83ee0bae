"""The pipeline on a real Spark cluster: a standalone master and two workers (separate JVM
processes from the pyspark distribution, on loopback) run plan, analyze and the
``format("leasehold")`` data source submitted with ``--master spark://...``; the executors on
the workers read records from the brokers. Each job is its own driver process, as a user's
``leasehold pipeline --master spark://...`` would be."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.client.producer import Producer
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.spark_standalone import StandaloneCluster, StandaloneSpec

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.timeout(1800)]
PARTITIONS, PER_PARTITION = 3, 25


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(ClusterSpec(controllers=1, brokers=3, session_ttl=3))
    try:
        c.start()
        yield c
    finally:
        c.stop()
        c.remove_workdir()


@pytest.fixture(scope="module")
def spark_cluster():
    with StandaloneCluster(StandaloneSpec(workers=2, cores_per_worker=1)) as sc:
        yield sc


async def produce(admin: str) -> int:
    async with Producer(admin=admin, acks="all") as producer:
        futures = [
            await producer.send("events", f"value {p}/{i}".encode(), partition=p)
            for p in range(PARTITIONS)
            for i in range(PER_PARTITION)
        ]
        await producer.flush()
        for fut in futures:
            await fut
    return len(futures)


DRIVER = """
import json, sys
from click.testing import CliRunner
from services.pipeline.cli import pipeline
from services.pipeline.session import SparkSettings, build_session

master, admin, snapshot, plan, logs, out = json.loads(sys.argv[1])
conf = ["--master", master, "--conf", "spark.executor.memory=512m", "--conf",
        "spark.cores.max=2", "--shuffle-partitions", "2"]
for args in (["plan", "--snapshot", snapshot, "--output", plan, "--drain", "1"],
             ["analyze", *logs, "--output", out]):
    result = CliRunner().invoke(pipeline, [*conf, *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
spark = build_session(SparkSettings(master=master))
df = spark.read.format("leasehold").option("admin", admin).option("topic", "events").load()
splits = df.rdd.getNumPartitions()
rows = df.groupBy("partition").count().collect()
print(json.dumps({"counts": {r["partition"]: r["count"] for r in rows},
                  "master": spark.sparkContext.master, "splits": splits}))
spark.stop()
"""


def run(spark_cluster, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """A driver process of its own, as a user's ``leasehold pipeline --master spark://...``."""
    result = subprocess.run([sys.executable, *args], env=spark_cluster.env(), capture_output=True,
                            text=True, timeout=timeout, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


def completed_apps(spark_cluster) -> list[dict]:
    status = spark_cluster.status() or {}
    return list(status.get("completedapps", []))


def test_snapshot_plan_analyze_and_the_data_source_on_a_standalone_cluster(
    cluster, spark_cluster, tmp_path
):
    leasehold = CliRunner().invoke(build_cli(), [
        "--admin", cluster.admin_address, "topics", "create", "events", "--partitions",
        str(PARTITIONS), "--replication-factor", "2", "--timeout", "40"])  # fmt: skip
    assert leasehold.exit_code == 0, leasehold.output
    written = asyncio.run(produce(cluster.admin_address))
    status = spark_cluster.status()
    assert status["aliveworkers"] == 2 and status["url"] == spark_cluster.master_url

    snap, plan_dir, out = tmp_path / "snapshot", tmp_path / "plan", tmp_path / "analysis"
    run(spark_cluster, "-m", "services.pipeline", "snapshot", "--etcd", cluster.etcd.endpoint,
        "--cluster-id", cluster.spec.cluster_id, "--output", str(snap),
        "--rate-window", "0.5")  # fmt: skip
    sizes = pq.read_table(snap / "partitions.parquet").to_pydict()
    assert sum(n for t, n in zip(sizes["topic"], sizes["size_records"], strict=True)
               if t == "events") == written  # fmt: skip

    # One driver (one JVM) submits plan and analyze through the CLI, then reads the topic
    # through the data source: the executors on the workers fetch from the brokers.
    logs = [str(p) for p in cluster.workdir.glob("state-change-*.log")]
    args = [spark_cluster.master_url, cluster.admin_address, str(snap), str(plan_dir), logs,
            str(out)]  # fmt: skip
    result = run(spark_cluster, "-c", DRIVER, json.dumps(args))
    summary = json.loads((plan_dir / "summary.json").read_text())
    assert summary["details"]["engine"] == "spark"
    assert summary["goals_after"]["replica_capacity"] == 0  # broker 1 drained
    assert json.loads((out / "summary.json").read_text())["records"] > 0
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["master"] == spark_cluster.master_url
    assert seen["counts"] == {str(p): PER_PARTITION for p in range(PARTITIONS)}
    assert seen["splits"] == PARTITIONS

    deadline = time.monotonic() + 30
    while not completed_apps(spark_cluster) and time.monotonic() < deadline:
        time.sleep(0.5)
    apps = completed_apps(spark_cluster)
    # the driver ran as an application on the cluster, with executors on the workers
    assert len(apps) >= 1, apps
    assert all(a.get("cores", 0) >= 1 for a in apps), apps
