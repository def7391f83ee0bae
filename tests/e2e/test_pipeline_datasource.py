"""spark.read.format("leasehold") reads back exactly the records a producer wrote, across
several partitions, with offsets, keys, values, headers and timestamps."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.client.producer import Producer
from leasehold.testing.cluster import ClusterSpec, LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.spark]
PARTITIONS = 3
PER_PARTITION = 40


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
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from services.pipeline.session import SparkSettings, build_session

    session = build_session(SparkSettings(master="local[2]", shuffle_partitions=2))
    yield session
    session.stop()


async def produce(admin: str) -> list[tuple]:
    written = []
    async with Producer(admin=admin, acks="all") as producer:
        futures = []
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                key = None if i % 5 == 0 else f"k{p}-{i}".encode()
                headers = [("n", str(i).encode())] if i % 2 else []
                value = None if i == 7 else f"value {p}/{i}".encode()
                fut = await producer.send("events", value, key=key, partition=p, headers=headers,
                                          timestamp_ms=1_700_000_000_000 + i)  # fmt: skip
                futures.append((fut, key, value, headers))
        await producer.flush()
        for fut, key, value, headers in futures:
            md = await fut
            written.append(("events", md.partition, md.offset, md.timestamp_ms, key, value,
                            headers))  # fmt: skip
    return written


@pytest.fixture(scope="module")
def written(cluster):
    create = ["topics", "create", "events", "--partitions", str(PARTITIONS)]
    create += ["--replication-factor", "2", "--timeout", "40"]
    made = CliRunner().invoke(build_cli(), ["--admin", cluster.admin_address, *create])
    assert made.exit_code == 0, made.output
    return asyncio.run(produce(cluster.admin_address))


def rows_of(df) -> list[tuple]:
    return sorted(
        (r["topic"], r["partition"], r["offset"], int(r["timestamp"].timestamp() * 1000),
         None if r["key"] is None else bytes(r["key"]),
         None if r["value"] is None else bytes(r["value"]),
         [(h["key"], bytes(h["value"])) for h in r["headers"]])
        for r in df.collect()
    )  # fmt: skip


def test_reads_back_exactly_what_was_written(cluster, spark, written):
    df = (
        spark.read.format("leasehold")
        .option("admin", cluster.admin_address)
        .option("topic", "events")
        .load()
    )
    assert df.rdd.getNumPartitions() == PARTITIONS
    assert rows_of(df) == sorted(written)


def test_offset_ranges_and_splits(cluster, spark, written):
    brokers = ",".join(b.address for b in cluster.brokers.values())
    df = (
        spark.read.format("leasehold")
        .option("bootstrap", brokers)
        .option("topic", "events")
        .option("startingOffsets", '{"events": {"0": 10, "2": -1}}')
        .option("endingOffsets", '{"events": {"0": 30}}')
        .option("maxRecordsPerPartition", "7")
        .load()
    )
    # partition 0: [10, 30) in 3 splits; partition 1: [0, 40) in 6; partition 2: nothing
    assert df.rdd.getNumPartitions() == 3 + 6
    expected = sorted(w for w in written if (w[1] == 0 and 10 <= w[2] < 30) or w[1] == 1)
    assert rows_of(df) == expected
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 20, 1: PER_PARTITION}
