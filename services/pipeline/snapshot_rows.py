"""Pure conversion of one etcd revision of a cluster into the snapshot's Arrow tables.

The snapshot job reads every key under ``/leasehold/<cluster-id>`` at ONE revision (so brokers,
assignments and partition states agree with each other) and hands the key-values here. Nothing
in this module does I/O; log sizes measured from the brokers are merged in afterwards with
:func:`with_log_sizes`.

Tables (Parquet, schemas below): ``brokers`` (registered brokers, rack, epoch), ``topics``,
``partitions`` (replicas, leader, ISR, reassignment state, log offsets and sizes) and
``replicas`` (one row per replica: position, whether it leads, whether it is in the ISR).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import pyarrow as pa

from leasehold.common.v1 import common_pb2
from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2

_INTS = pa.list_(pa.int32())
BROKERS_SCHEMA = pa.schema(
    [
        ("broker_id", pa.int32()),
        ("host", pa.string()),
        ("port", pa.int32()),
        ("rack", pa.string()),
        ("epoch", pa.int64()),
        ("registered_at_ms", pa.int64()),
    ]
)
TOPICS_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition_count", pa.int32()),
        ("replication_factor", pa.int32()),
        ("created_at_ms", pa.int64()),
        ("marked_for_deletion", pa.bool_()),
        ("configs", pa.map_(pa.string(), pa.string())),
    ]
)
PARTITIONS_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("replicas", _INTS),
        ("leader", pa.int32()),
        ("leader_epoch", pa.int32()),
        ("isr", _INTS),
        ("adding_replicas", _INTS),
        ("removing_replicas", _INTS),
        ("offline_replicas", _INTS),
        ("reassignment_target", _INTS),
        ("recovering", pa.bool_()),
        ("controller_epoch", pa.int32()),
        ("partition_epoch", pa.int64()),
        ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()),
        ("size_records", pa.int64()),
        ("size_bytes", pa.int64()),
        # Produce rate: log end offsets read twice, ``rate_window_s`` apart, times the bytes per
        # offset of the size sample (null when not measured).
        ("bytes_in_per_s", pa.float64()),
    ]
)
REPLICAS_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("broker_id", pa.int32()),
        ("position", pa.int32()),
        ("is_leader", pa.bool_()),
        ("in_isr", pa.bool_()),
        ("rack", pa.string()),
    ]
)
RECOVERING = common_pb2.LEADER_RECOVERY_STATE_RECOVERING


@dataclass(frozen=True)
class LogSize:
    """One partition's log as its leader reports it; ``bytes_per_offset`` from a sample."""

    log_start_offset: int
    log_end_offset: int
    bytes_per_offset: float | None = None


@dataclass(frozen=True)
class SnapshotTables:
    cluster_id: str
    revision: int
    controller_id: int
    controller_epoch: int
    brokers: pa.Table
    topics: pa.Table
    partitions: pa.Table
    replicas: pa.Table

    def tables(self) -> dict[str, pa.Table]:
        return {
            "brokers": self.brokers,
            "topics": self.topics,
            "partitions": self.partitions,
            "replicas": self.replicas,
        }


def _strip(key: bytes, prefix: bytes) -> str:
    return key[len(prefix) :].decode()


def tables_from_kvs(ks: Keyspace, kvs: Iterable[KV], revision: int) -> SnapshotTables:
    """Decode every key of one revision into the snapshot tables."""
    brokers: dict[int, tuple[metadata_pb2.BrokerRegistration, int]] = {}
    assignments: dict[str, metadata_pb2.TopicAssignment] = {}
    states: dict[tuple[str, int], tuple[metadata_pb2.PartitionState, int]] = {}
    configs: dict[str, dict[str, str]] = {}
    deleting: set[str] = set()
    targets: dict[tuple[str, int], list[int]] = {}
    controllers: list[KV] = []
    epoch = metadata_pb2.ControllerEpoch()
    for kv in kvs:
        key = kv.key
        if key.startswith(ks.brokers_prefix):
            reg = metadata_pb2.BrokerRegistration.FromString(kv.value)
            brokers[ks.broker_id_of(key)] = (reg, kv.create_revision)
        elif key.startswith(ks.topics_prefix):
            parsed = ks.parse_topic_key(key)
            if parsed is None:
                continue
            topic, partition = parsed
            if partition is None:
                assignments[topic] = metadata_pb2.TopicAssignment.FromString(kv.value)
            else:
                state = metadata_pb2.PartitionState.FromString(kv.value)
                states[(topic, partition)] = (state, kv.mod_revision)
        elif key.startswith(ks.topic_configs_prefix):
            entries = metadata_pb2.ConfigEntries.FromString(kv.value).entries
            configs[_strip(key, ks.topic_configs_prefix)] = dict(entries)
        elif key.startswith(ks.delete_topics_prefix):
            deleting.add(_strip(key, ks.delete_topics_prefix))
        elif key.startswith(ks.reassignments_prefix):
            intent = metadata_pb2.ReassignmentIntent.FromString(kv.value)
            if not intent.cancel:
                targets[ks.parse_reassignment_key(key)] = list(intent.target_replicas)
        elif key.startswith(ks.controller_election_prefix):
            controllers.append(kv)
        elif key == ks.controller_epoch:
            epoch = metadata_pb2.ControllerEpoch.FromString(kv.value)
    rack_of = {b: reg.rack or None for b, (reg, _) in brokers.items()}
    broker_rows = [
        {
            "broker_id": b,
            "host": reg.host,
            "port": reg.port,
            "rack": reg.rack or None,
            "epoch": create_rev,
            "registered_at_ms": reg.registered_at_ms,
        }
        for b, (reg, create_rev) in sorted(brokers.items())
    ]
    topic_rows, partition_rows, replica_rows = [], [], []
    for name in sorted(assignments):
        a = assignments[name]
        parts = sorted(a.partitions.items())
        topic_rows.append(
            {
                "topic": name,
                "topic_id": a.topic_id,
                "partition_count": len(parts),
                "replication_factor": len(parts[0][1].replicas) if parts else 0,
                "created_at_ms": a.created_at_ms,
                "marked_for_deletion": name in deleting,
                "configs": sorted(configs.get(name, {}).items()),
            }
        )
        for p, replica_list in parts:
            replicas = list(replica_list.replicas)
            state, mod_rev = states.get((name, p), (None, 0))
            leader = state.leader if state is not None else -1
            isr = list(state.isr) if state is not None else []
            partition_rows.append(
                {
                    "topic": name,
                    "partition": p,
                    "replicas": replicas,
                    "leader": leader,
                    "leader_epoch": state.leader_epoch if state is not None else -1,
                    "isr": isr,
                    "adding_replicas": list(state.adding_replicas) if state is not None else [],
                    "removing_replicas": list(state.removing_replicas) if state is not None else [],
                    "offline_replicas": list(state.offline_replicas) if state is not None else [],
                    "reassignment_target": targets.get((name, p)),
                    "recovering": state is not None and state.leader_recovery_state == RECOVERING,
                    "controller_epoch": state.controller_epoch if state is not None else -1,
                    "partition_epoch": mod_rev,
                    "log_start_offset": None,
                    "log_end_offset": None,
                    "size_records": None,
                    "size_bytes": None,
                    "bytes_in_per_s": None,
                }
            )
            for pos, b in enumerate(replicas):
                replica_rows.append(
                    {
                        "topic": name,
                        "partition": p,
                        "broker_id": b,
                        "position": pos,
                        "is_leader": b == leader,
                        "in_isr": b in isr,
                        "rack": rack_of.get(b),
                    }
                )
    active = min(controllers, key=lambda kv: kv.create_revision, default=None)
    controller_id = (
        metadata_pb2.ControllerRegistration.FromString(active.value).controller_id
        if active is not None
        else -1
    )
    return SnapshotTables(
        cluster_id=ks.cluster_id,
        revision=revision,
        controller_id=controller_id,
        controller_epoch=epoch.epoch if epoch.controller_id == controller_id else 0,
        brokers=pa.Table.from_pylist(broker_rows, BROKERS_SCHEMA),
        topics=pa.Table.from_pylist(topic_rows, TOPICS_SCHEMA),
        partitions=pa.Table.from_pylist(partition_rows, PARTITIONS_SCHEMA),
        replicas=pa.Table.from_pylist(replica_rows, REPLICAS_SCHEMA),
    )


def with_log_sizes(
    tables: SnapshotTables, sizes: Mapping[tuple[str, int], LogSize]
) -> SnapshotTables:
    """Fill the offset and size columns of the partitions measured; others stay null.

    ``size_bytes`` is an estimate: records on the log times the bytes per offset of a sample of
    the log's first batches (null when no sample could be read, e.g. an empty log).
    """
    rows = tables.partitions.to_pylist()
    for row in rows:
        size = sizes.get((row["topic"], row["partition"]))
        if size is None:
            continue
        records = max(0, size.log_end_offset - size.log_start_offset)
        row["log_start_offset"] = size.log_start_offset
        row["log_end_offset"] = size.log_end_offset
        row["size_records"] = records
        if size.bytes_per_offset is not None:
            row["size_bytes"] = round(records * size.bytes_per_offset)
        elif records == 0:
            row["size_bytes"] = 0
    return replace(tables, partitions=pa.Table.from_pylist(rows, PARTITIONS_SCHEMA))


def with_rates(tables: SnapshotTables, rates: Mapping[tuple[str, int], float]) -> SnapshotTables:
    """Fill ``bytes_in_per_s`` for the partitions whose rate was measured."""
    rows = tables.partitions.to_pylist()
    for row in rows:
        rate = rates.get((row["topic"], row["partition"]))
        if rate is not None:
            row["bytes_in_per_s"] = rate
    return replace(tables, partitions=pa.Table.from_pylist(rows, PARTITIONS_SCHEMA))


def leaders_of(tables: SnapshotTables) -> dict[int, list[tuple[str, int]]]:
    """Partitions grouped by their current leader (partitions without one are left out)."""
    out: dict[int, list[tuple[str, int]]] = {}
    cols = tables.partitions.select(["topic", "partition", "leader"]).to_pydict()
    for topic, partition, leader in zip(
        cols["topic"], cols["partition"], cols["leader"], strict=True
    ):
        if leader >= 0:
            out.setdefault(leader, []).append((topic, partition))
    return out


def registered_racks(brokers: pa.Table) -> dict[int, str | None]:
    """broker id -> rack (None when unset), from a brokers table."""
    cols = brokers.select(["broker_id", "rack"]).to_pydict()
    return dict(zip(cols["broker_id"], cols["rack"], strict=True))
