"""Protobuf responses as rich tables (people) and plain dicts (``--output json``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from leasehold.admin.v1 import admin_pb2
from leasehold.common.v1 import common_pb2


def ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def code_name(code: int) -> str:
    try:
        return common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_")
    except ValueError:
        return str(code)


def partition_dict(p: admin_pb2.PartitionDescription) -> dict:
    return {
        "partition": p.partition,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "adding_replicas": list(p.adding_replicas),
        "removing_replicas": list(p.removing_replicas),
        "offline_replicas": list(p.offline_replicas),
        "partition_epoch": p.partition_epoch,
        "controller_epoch": p.controller_epoch,
        "recovering": p.leader_recovery_state == common_pb2.LEADER_RECOVERY_STATE_RECOVERING,
    }


def topic_dict(t: admin_pb2.TopicDescription) -> dict:
    return {
        "name": t.name,
        "topic_id": t.topic_id,
        "partition_count": len(t.partitions),
        "replication_factor": len(t.partitions[0].replicas) if t.partitions else 0,
        "configs": dict(sorted(t.configs.items())),
        "marked_for_deletion": t.marked_for_deletion,
        "partitions": [partition_dict(p) for p in t.partitions],
    }


def topic_table(t: admin_pb2.TopicDescription) -> Group:
    d = topic_dict(t)
    configs = ",".join(f"{k}={v}" for k, v in d["configs"].items())
    header = Text(
        f"Topic: {t.name}\tTopicId: {t.topic_id}\tPartitionCount: {d['partition_count']}\t"
        f"ReplicationFactor: {d['replication_factor']}\tConfigs: {configs}"
        + ("\tMarkedForDeletion: true" if t.marked_for_deletion else "")
    )
    table = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("Partition", "Leader", "LeaderEpoch", "Replicas", "Isr", "Adding", "Removing",
                "Offline", "PartitionEpoch"):  # fmt: skip
        table.add_column(col)
    for p in t.partitions:
        leader = "none" if p.leader < 0 else str(p.leader)
        if p.leader_recovery_state == common_pb2.LEADER_RECOVERY_STATE_RECOVERING:
            leader += " (recovering)"
        table.add_row(
            str(p.partition),
            leader,
            str(p.leader_epoch),
            ids(p.replicas),
            ids(p.isr),
            ids(p.adding_replicas),
            ids(p.removing_replicas),
            ids(p.offline_replicas),
            str(p.partition_epoch),
        )
    return Group(header, table, Text(""))


def cluster_dict(c: admin_pb2.DescribeClusterResponse) -> dict:
    controller = None
    if c.HasField("active_controller"):
        a = c.active_controller
        controller = {"id": a.controller_id, "host": a.host, "port": a.port, "epoch": a.epoch}
    return {
        "cluster_id": c.cluster_id,
        "active_controller": controller,
        "standby_controller_ids": list(c.standby_controller_ids),
        "brokers": [
            {
                "id": b.broker_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "broker_epoch": b.broker_epoch,
            }
            for b in c.brokers
        ],  # fmt: skip
    }


def cluster_table(c: admin_pb2.DescribeClusterResponse) -> Group:
    d = cluster_dict(c)
    ctl = d["active_controller"]
    lines = [Text(f"Cluster: {d['cluster_id']}")]
    if ctl is None:
        lines.append(Text("Active controller: none"))
    else:
        lines.append(
            Text(
                f"Active controller: {ctl['id']} at {ctl['host']}:{ctl['port']} "
                f"(epoch {ctl['epoch']})"
            )
        )
    standby = ids(d["standby_controller_ids"]) or "none"
    lines.append(Text(f"Standby controllers: {standby}"))
    table = Table(title="Brokers", title_justify="left", show_edge=False, box=None)
    for col in ("Id", "Endpoint", "Rack", "BrokerEpoch"):
        table.add_column(col)
    for b in d["brokers"]:
        table.add_row(str(b["id"]), f"{b['host']}:{b['port']}", b["rack"], str(b["broker_epoch"]))
    return Group(*lines, table)


def configs_table(title: str, entries: Sequence[admin_pb2.ConfigEntry], all_: bool) -> Table:
    sources = {
        admin_pb2.CONFIG_SOURCE_DEFAULT: "default",
        admin_pb2.CONFIG_SOURCE_TOPIC: "topic",
        admin_pb2.CONFIG_SOURCE_BROKER: "broker",
        admin_pb2.CONFIG_SOURCE_CLUSTER_DEFAULT: "cluster-default",
    }
    table = Table(title=title, title_justify="left", show_edge=False, box=None)
    for col in ("Name", "Value", "Source"):
        table.add_column(col)
    for e in entries:
        if all_ or not e.is_default:
            table.add_row(e.name, e.value, sources.get(e.source, "?"))
    return table


def config_dicts(entries: Sequence[admin_pb2.ConfigEntry]) -> list[dict]:
    return [
        {
            "name": e.name,
            "value": e.value,
            "source": admin_pb2.ConfigSource.Name(e.source).removeprefix("CONFIG_SOURCE_").lower(),
            "is_default": e.is_default,
        }
        for e in entries
    ]


def outcome_dicts(results: Iterable[common_pb2.PartitionError]) -> list[dict]:
    return [
        {
            "topic": r.topic,
            "partition": r.partition,
            "error": code_name(r.error_code),
            "message": r.error_message,
        }
        for r in results
    ]
