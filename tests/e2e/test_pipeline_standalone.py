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
import textwrap
import time

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.client.producer import Producer
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.spark_standalone import StandaloneCluster, StandaloneSpec

pytestmark = [pytest.mark.e2e, pytest.mark.spark]
PARTITIONS, PER_PARTITION = 3, 25
# Small executors: the workers, the drivers and the Leasehold cluster share two cores.
CONF = ["--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
        "--driver-memory", "512m", "--shuffle-partitions", "2"]  # fmt: skip


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


def submit(spark_cluster, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m services.pipeline --master spark://... ARGS`` as its own driver process."""
    cmd = [sys.executable, "-m", "services.pipeline", "--master", spark_cluster.master_url,
           *CONF, *args]  # fmt: skip
    result = subprocess.run(cmd, env=spark_cluster.env(), capture_output=True, text=True,
                            timeout=timeout, check=False)  # fmt: skip
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

    snap = tmp_path / "snapshot"
    submit(spark_cluster, "snapshot", "--etcd", cluster.etcd.endpoint, "--cluster-id",
           cluster.spec.cluster_id, "--output", str(snap), "--rate-window", "0.5")  # fmt: skip
    sizes = pq.read_table(snap / "partitions.parquet").to_pydict()
    assert sum(sizes["size_records"][i] for i, t in enumerate(sizes["topic"]) if t == "events") \
        == written  # fmt: skip

    plan_dir = tmp_path / "plan"
    submit(spark_cluster, "plan", "--snapshot", str(snap), "--output", str(plan_dir),
           "--mode", "balance", "--drain", "1")  # fmt: skip
    summary = json.loads((plan_dir / "summary.json").read_text())
    assert summary["details"]["engine"] == "spark"
    assert summary["goals_after"]["replica_capacity"] == 0  # broker 1 drained

    out = tmp_path / "analysis"
    logs = [str(p) for p in cluster.workdir.glob("state-change-*.log")]
    submit(spark_cluster, "analyze", *logs, "--output", str(out))
    assert json.loads((out / "summary.json").read_text())["records"] > 0

    # The data source: partitions are read on the executors, from the brokers.
    script = textwrap.dedent(f"""
        import json, sys
        from services.pipeline.session import SparkSettings, build_session
        spark = build_session(SparkSettings(master={spark_cluster.master_url!r},
                              conf={{"spark.executor.memory": "512m", "spark.cores.max": "2"}}))
        df = spark.read.format("leasehold").option("admin", {cluster.admin_address!r}) \\
            .option("topic", "events").load()
        hosts = df.rdd.mapPartitions(lambda rows: [__import__("socket").gethostname()]) \\
            .collect()
        rows = df.groupBy("partition").count().collect()
        master = spark.sparkContext.master
        print(json.dumps({{"counts": {{r["partition"]: r["count"] for r in rows}},
                          "master": master, "splits": len(hosts)}}))
        spark.stop()
    """)  # fmt: skip
    result = subprocess.run([sys.executable, "-c", script], env=spark_cluster.env(),
                            capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["master"] == spark_cluster.master_url
    assert seen["counts"] == {str(p): PER_PARTITION for p in range(PARTITIONS)}
    assert seen["splits"] == PARTITIONS

    deadline = time.monotonic() + 30
    while len(completed_apps(spark_cluster)) < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    apps = completed_apps(spark_cluster)
    # plan, analyze and the data source each ran as an application on the cluster
    assert len(apps) >= 3, apps
    assert all(a.get("cores", 0) >= 1 for a in apps), apps
