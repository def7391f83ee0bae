"""Snapshot conversion from key-values of one revision, without etcd."""

from __future__ import annotations

import struct

from leasehold.common.v1 import common_pb2
from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2 as m
from services.pipeline.broker_rpc import batch_bytes_per_offset
from services.pipeline.snapshot_rows import LogSize, leaders_of, tables_from_kvs, with_log_sizes

KS = Keyspace("c1")


def kv(key: bytes, msg, create: int = 5, mod: int = 7) -> KV:
    return KV(key, msg.SerializeToString(), create, mod, 1, 0)


def cluster_kvs() -> list[KV]:
    assignment = m.TopicAssignment(topic_id="id-orders", created_at_ms=1000)
    assignment.partitions[0].replicas[:] = [1, 2]
    assignment.partitions[1].replicas[:] = [2, 3]
    gone = m.TopicAssignment(topic_id="id-gone")
    gone.partitions[0].replicas[:] = [3]
    recovering = common_pb2.LEADER_RECOVERY_STATE_RECOVERING
    return [
        kv(KS.broker(1), m.BrokerRegistration(broker_id=1, host="h1", port=9001, rack="r1"), 11),
        kv(KS.broker(2), m.BrokerRegistration(broker_id=2, host="h2", port=9002), 12),
        kv(KS.controller_election_prefix + b"a", m.ControllerRegistration(controller_id=9), 3),
        kv(KS.controller_election_prefix + b"b", m.ControllerRegistration(controller_id=8), 4),
        kv(KS.controller_epoch, m.ControllerEpoch(epoch=6, controller_id=9)),
        kv(KS.topic("orders"), assignment),
        kv(KS.partition_state("orders", 0), m.PartitionState(leader=2, leader_epoch=4, isr=[2, 1]),
           mod=40),
        kv(KS.partition_state("orders", 1),
           m.PartitionState(leader=3, leader_epoch=1, isr=[3], removing_replicas=[3],
                            adding_replicas=[1], leader_recovery_state=recovering), mod=41),
        kv(KS.topic("gone"), gone),
        kv(KS.delete_topics_prefix + b"gone", m.TopicDeletion(topic_id="id-gone")),
        kv(KS.topic_config("orders"), m.ConfigEntries(entries={"retention.ms": "1000"})),
        kv(KS.reassignment("orders", 1), m.ReassignmentIntent(target_replicas=[2, 1])),
    ]  # fmt: skip


def test_tables_from_one_revision():
    t = tables_from_kvs(KS, cluster_kvs(), revision=99)
    assert (t.revision, t.controller_id, t.controller_epoch) == (99, 9, 6)
    assert t.brokers.to_pylist() == [
        {"broker_id": 1, "host": "h1", "port": 9001, "rack": "r1", "epoch": 11,
         "registered_at_ms": 0},
        {"broker_id": 2, "host": "h2", "port": 9002, "rack": None, "epoch": 12,
         "registered_at_ms": 0},
    ]  # fmt: skip
    topics = {r["topic"]: r for r in t.topics.to_pylist()}
    assert topics["orders"]["configs"] == [("retention.ms", "1000")]
    assert (topics["orders"]["partition_count"], topics["orders"]["replication_factor"]) == (2, 2)
    assert topics["gone"]["marked_for_deletion"] and not topics["orders"]["marked_for_deletion"]
    parts = {(r["topic"], r["partition"]): r for r in t.partitions.to_pylist()}
    p0, p1 = parts[("orders", 0)], parts[("orders", 1)]
    assert (p0["replicas"], p0["leader"], p0["isr"], p0["partition_epoch"]) == (
        [1, 2],
        2,
        [2, 1],
        40,
    )
    assert (p1["removing_replicas"], p1["adding_replicas"], p1["recovering"]) == ([3], [1], True)
    assert p1["reassignment_target"] == [2, 1] and p0["reassignment_target"] is None
    assert parts[("gone", 0)]["leader"] == -1 and parts[("gone", 0)]["leader_epoch"] == -1
    assert p0["size_bytes"] is None
    replicas = [r for r in t.replicas.to_pylist() if r["topic"] == "orders" and r["partition"] == 0]
    assert replicas == [
        {"topic": "orders", "partition": 0, "broker_id": 1, "position": 0, "is_leader": False,
         "in_isr": True, "rack": "r1"},
        {"topic": "orders", "partition": 0, "broker_id": 2, "position": 1, "is_leader": True,
         "in_isr": True, "rack": None},
    ]  # fmt: skip


def test_other_clusters_and_unknown_keys_are_ignored():
    other = Keyspace("c10")
    kvs = [
        kv(other.broker(5), m.BrokerRegistration(broker_id=5)),
        KV(KS.root + b"/x", b"?", 1, 1, 1, 0),
    ]
    t = tables_from_kvs(KS, kvs, revision=1)
    assert t.brokers.num_rows == 0 and t.partitions.num_rows == 0 and t.controller_id == -1


def test_log_sizes_fill_measured_partitions_only():
    t = tables_from_kvs(KS, cluster_kvs(), revision=99)
    assert leaders_of(t) == {2: [("orders", 0)], 3: [("orders", 1)]}
    sized = with_log_sizes(
        t, {("orders", 0): LogSize(10, 110, 50.5), ("orders", 1): LogSize(5, 5, None)}
    )
    rows = {(r["topic"], r["partition"]): r for r in sized.partitions.to_pylist()}
    sized_keys = ("log_start_offset", "log_end_offset", "size_records", "size_bytes")
    assert [rows[("orders", 0)][k] for k in sized_keys] == [10, 110, 100, 5050]
    assert (rows[("orders", 1)]["size_records"], rows[("orders", 1)]["size_bytes"]) == (0, 0)
    assert rows[("gone", 0)]["size_bytes"] is None


def batch(base: int, last_delta: int, body: int) -> bytes:
    """A batch with Kafka's v2 prefix: base offset, length, epoch, magic, crc, attrs, delta."""
    rest = struct.pack(">ibIhi", 0, 2, 0, 0, last_delta) + b"\0" * body
    return struct.pack(">qi", base, len(rest)) + rest


def test_bytes_per_offset_from_a_batch_sample():
    two = batch(100, 9, 77) + batch(110, 4, 33)
    assert batch_bytes_per_offset(two) == len(two) / 15
    assert batch_bytes_per_offset(two + batch(115, 3, 50)[:30]) == len(two) / 15  # torn tail
    assert batch_bytes_per_offset(b"") is None
