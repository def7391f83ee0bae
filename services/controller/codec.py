"""Between etcd values (protobuf, ARCHITECTURE §2) and the controller core's model.

Pure functions, no I/O. Two Leasehold-specific rules live here:

* The partition epoch of a state is the mod revision of its etcd key (ARCHITECTURE §3), so a
  decoded ``LeaderAndIsr`` takes it from the key, never from the value.
* A partition's replica assignment is split between two keys: the topic key holds the full
  replica list (AR) and the partition-state key holds the reassignment's adding/removing replicas.
  During a reassignment the controller writes the state first and AR second, so a crash between
  the two leaves adding replicas that are missing from AR: ``compose_assignment`` appends them,
  which recovers the full OAR + RAR list (seed 002: AR is written last at completion, so a crash
  there still finds OAR + RAR).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from leasehold import fastwire
from leasehold.common.v1 import common_pb2
from leasehold.etcd.client import KV
from leasehold.metadata.v1 import metadata_pb2
from services.controller.core import (
    BrokerInfo,
    LeaderAndIsr,
    PartitionStateWrite,
    ReplicaAssignment,
)
from services.controller.core.model import shared_ints

RECOVERING = common_pb2.LEADER_RECOVERY_STATE_RECOVERING
RECOVERED = common_pb2.LEADER_RECOVERY_STATE_RECOVERED


class StoredPartitionState(NamedTuple):
    """A decoded partition-state key: leader/ISR (with its partition epoch), reassignment sets.

    A named tuple: a controller decodes one per watched state (10,000 per broker failure)."""

    leader_and_isr: LeaderAndIsr
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def broker_info(kv: KV) -> BrokerInfo:
    """A registered broker; its epoch (KIP-380) is the registration key's create revision."""
    reg = metadata_pb2.BrokerRegistration.FromString(kv.value)
    return BrokerInfo(
        reg.broker_id,
        reg.host,
        reg.port,
        reg.rack,
        kv.create_revision,
        reg.incarnation_id,
        reg.registered_at_ms,
        reg.session_ttl_ms,
    )


def decode_topic(value: bytes) -> metadata_pb2.TopicAssignment:
    return metadata_pb2.TopicAssignment.FromString(value)


def topic_replicas(topic: metadata_pb2.TopicAssignment) -> dict[int, tuple[int, ...]]:
    return {int(p): tuple(rl.replicas) for p, rl in topic.partitions.items()}


def decode_partition_state(value: bytes, mod_revision: int) -> StoredPartitionState:
    pb = metadata_pb2.PartitionState.FromString(value)
    lai = LeaderAndIsr.of_valid(  # protobuf int fields are ints already
        pb.leader,
        pb.leader_epoch,
        shared_ints(tuple(pb.isr)),
        pb.controller_epoch,
        mod_revision,
        pb.leader_recovery_state == RECOVERING,
    )
    adding, removing = pb.adding_replicas, pb.removing_replicas
    return StoredPartitionState(
        lai, tuple(adding) if adding else (), tuple(removing) if removing else ()
    )


def recovery_state(recovering: bool) -> int:
    return RECOVERING if recovering else RECOVERED


class StoredValue(NamedTuple):
    """What a partition-state key's value is encoded from."""

    leader_and_isr: LeaderAndIsr
    assignment: ReplicaAssignment
    offline_replicas: tuple[int, ...]


# The value in two pieces: (leader, leader epoch) and everything else; a broker failure's
# 10,000 states share a handful of each, so a value is two lookups and a concatenation.
PARTITION_STATE = fastwire.Layout(
    metadata_pb2.PartitionState,
    [
        fastwire.group("leader", "leader_epoch"),
        fastwire.group(
            "isr",
            "controller_epoch",
            "adding_replicas",
            "removing_replicas",
            "leader_recovery_state",
            "offline_replicas",
        ),
    ],
    domain=StoredValue,
    read={
        "adding_replicas": "assignment.adding",
        "removing_replicas": "assignment.removing",
        "leader_recovery_state": "leader_and_isr.recovering",
    },
    convert={"leader_recovery_state": recovery_state, "offline_replicas": sorted},
    open_end=True,
)
_STATE = PARTITION_STATE.encoder()


def encode_partition_state(
    lai: LeaderAndIsr, assignment: ReplicaAssignment, offline: Iterable[int] = ()
) -> bytes:
    """The partition-state key's value (``metadata_pb2.PartitionState``, offline replicas in
    order), from cached pieces: the same bytes as the generated classes (checked by
    ``tests/unit/controller_service/test_ctlsvc_codec.py``)."""
    return _STATE.fields(lai, assignment, offline if type(offline) is tuple else tuple(offline))


def encode_write(write: PartitionStateWrite, offline: Iterable[int] = ()) -> bytes:
    return encode_partition_state(write.leader_and_isr, write.assignment, offline)


def compose_assignment(
    replicas: Iterable[int], adding: Iterable[int] = (), removing: Iterable[int] = ()
) -> ReplicaAssignment:
    """AR from the topic key plus adding/removing from the state key (see the module docstring).

    Adding/removing replicas that make no sense against AR (a stale state) are dropped rather
    than rejected: the controller must load whatever etcd holds.
    """
    if not adding and not removing:  # no reassignment: what nearly every partition has
        plain = tuple(dict.fromkeys(map(int, replicas)))
        return ReplicaAssignment.of_distinct(plain) if plain else ReplicaAssignment(())
    full = list(dict.fromkeys(int(r) for r in replicas))
    add = tuple(dict.fromkeys(int(r) for r in adding))
    full.extend(r for r in add if r not in full)
    remove = tuple(r for r in dict.fromkeys(int(r) for r in removing) if r in full and r not in add)
    if len(full) - len(add) <= 0 or len(full) - len(remove) <= 0:
        return ReplicaAssignment(tuple(r for r in full if r not in add) or tuple(full))
    return ReplicaAssignment(tuple(full), add, remove)


def encode_topic_with(
    topic: metadata_pb2.TopicAssignment, updates: Mapping[int, Iterable[int]]
) -> bytes:
    """The topic key's value with some partitions' replica lists replaced (trace context kept)."""
    out = metadata_pb2.TopicAssignment()
    out.CopyFrom(topic)
    for p, replicas in updates.items():
        out.partitions[int(p)].CopyFrom(metadata_pb2.ReplicaList(replicas=list(replicas)))
    return out.SerializeToString()


def encode_epoch(epoch: int, controller_id: int) -> bytes:
    return metadata_pb2.ControllerEpoch(
        epoch=epoch, controller_id=controller_id
    ).SerializeToString()


def decode_epoch(value: bytes) -> metadata_pb2.ControllerEpoch:
    return metadata_pb2.ControllerEpoch.FromString(value)


def decode_config(value: bytes) -> dict[str, str]:
    return dict(metadata_pb2.ConfigEntries.FromString(value).entries)


def encode_config(entries: Mapping[str, str]) -> bytes:
    return metadata_pb2.ConfigEntries(entries=dict(entries)).SerializeToString()


def admin_result(
    request_id: str,
    operation: int,
    results: Iterable[common_pb2.PartitionError],
    *,
    now_ms: int,
    controller_epoch: int,
) -> bytes:
    return metadata_pb2.AdminResult(
        request_id=request_id,
        operation=operation,
        results=list(results),
        completed_at_ms=now_ms,
        controller_epoch=controller_epoch,
    ).SerializeToString()


def partition_error(
    topic: str, partition: int, code: int = common_pb2.ERROR_CODE_NONE, message: str = ""
) -> common_pb2.PartitionError:
    return common_pb2.PartitionError(
        topic=topic, partition=partition, error_code=code, error_message=message
    )
