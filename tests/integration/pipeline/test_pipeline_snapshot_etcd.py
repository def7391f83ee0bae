"""The snapshot job against a real etcd: the keys and protos the services write, read back at
one revision into Parquet; brokers that cannot be reached leave sizes null and are reported."""

from __future__ import annotations

import asyncio
import json

import pyarrow.parquet as pq

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2 as m
from leasehold.testing.ports import free_port
from services.pipeline.snapshot_job import SnapshotConfig, read_cluster, run_snapshot
from services.pipeline.snapshot_rows import tables_from_kvs


async def write_cluster(etcd: EtcdClient, ks: Keyspace, broker_port: int) -> None:
    for b, rack in ((1, "r1"), (2, "r2"), (3, "r1")):
        reg = m.BrokerRegistration(broker_id=b, host="127.0.0.1", port=broker_port, rack=rack)
        await etcd.put(ks.broker(b), reg.SerializeToString())
    controller = m.ControllerRegistration(controller_id=7)
    await etcd.put(ks.controller_election_prefix + b"lease-1", controller.SerializeToString())
    await etcd.put(
        ks.controller_epoch, m.ControllerEpoch(epoch=3, controller_id=7).SerializeToString()
    )
    topic = m.TopicAssignment(topic_id="t-id", created_at_ms=5)
    for p, replicas in enumerate(([1, 2], [2, 3], [3, 1])):
        topic.partitions[p].replicas[:] = replicas
    await etcd.put(ks.topic("events"), topic.SerializeToString())
    for p, leader in enumerate((1, 2, -1)):
        isr = [leader] if leader >= 0 else []
        state = m.PartitionState(leader=leader, leader_epoch=p, isr=isr, controller_epoch=3)
        await etcd.put(ks.partition_state("events", p), state.SerializeToString())
    configs = m.ConfigEntries(entries={"min.insync.replicas": "2"})
    await etcd.put(ks.topic_config("events"), configs.SerializeToString())


async def test_one_revision_of_etcd_becomes_tables(etcd, keyspace):
    await write_cluster(etcd, keyspace, 1)
    other = Keyspace(keyspace.cluster_id + "0")  # a longer id sharing the prefix
    await etcd.put(other.broker(9), m.BrokerRegistration(broker_id=9).SerializeToString())
    kvs, revision = await read_cluster(etcd, keyspace)
    later = await etcd.put(
        keyspace.broker(4), m.BrokerRegistration(broker_id=4).SerializeToString()
    )
    assert later > revision
    t = tables_from_kvs(keyspace, kvs, revision)
    assert t.brokers.column("broker_id").to_pylist() == [1, 2, 3]
    assert (t.controller_id, t.controller_epoch) == (7, 3)
    parts = t.partitions.select(["partition", "replicas", "leader", "isr", "partition_epoch"])
    rows = parts.to_pylist()
    assert [(r["partition"], r["replicas"], r["leader"], r["isr"]) for r in rows] == [
        (0, [1, 2], 1, [1]), (1, [2, 3], 2, [2]), (2, [3, 1], -1, []),
    ]  # fmt: skip
    assert all(0 < r["partition_epoch"] <= revision for r in rows)
    assert t.topics.to_pylist()[0]["configs"] == [("min.insync.replicas", "2")]
    racks = {(r["partition"], r["broker_id"]): r["rack"] for r in t.replicas.to_pylist()}
    assert racks[(1, 3)] == "r1" and racks[(1, 2)] == "r2"


def test_snapshot_job_writes_parquet_and_reports_unreachable_brokers(etcd_endpoint, tmp_path):
    ks = Keyspace("snapshot-job-" + tmp_path.name[-8:])
    dead_port = free_port()  # nothing listens there

    async def prepare() -> None:
        async with EtcdClient([etcd_endpoint]) as client:
            await write_cluster(client, ks, dead_port)

    asyncio.run(prepare())
    config = SnapshotConfig((etcd_endpoint,), ks.cluster_id, tmp_path / "snap", timeout=2.0)
    manifest = run_snapshot(config)
    assert manifest["counts"] == {"brokers": 3, "topics": 1, "partitions": 3, "replicas": 6}
    assert manifest["log_sizes"]["measured"] == 0
    assert manifest["log_sizes"]["unmeasured"] == 3
    problems = manifest["log_sizes"]["problems"]
    assert sorted(p.split(" at ")[0] for p in problems) == ["broker 1", "broker 2"]
    assert json.loads((tmp_path / "snap" / "manifest.json").read_text()) == manifest
    parts = pq.read_table(tmp_path / "snap" / "partitions.parquet")
    assert parts.column("size_bytes").null_count == 3
    assert pq.read_table(tmp_path / "snap" / "replicas.parquet").num_rows == 6
