"""Values of the group coordinator: members, committed offsets, and group states.

Partitions are ``(topic, partition)`` pairs in frozensets; a member is an immutable value
replaced whole when its records are replayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from leasehold.javacompat import java_string_hash

OFFSETS_TOPIC = "__consumer_offsets"
TP = tuple[str, int]
Partitions = frozenset[TP]
NO_PARTITIONS: Partitions = frozenset()

# Member epochs a heartbeat may carry besides a real one (Kafka's constants).
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Where a member is in reconciling with its target assignment (Kafka's MemberState)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1  # it must give partitions up before it gets more
    UNRELEASED_PARTITIONS = 2  # some of its target is still held by others


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class Member:
    """One member: what it subscribes to (member metadata record) and what it holds (current
    assignment record)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topics: tuple[str, ...] = ()
    rebalance_timeout_ms: int = 300_000
    server_assignor: str = ""
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = NO_PARTITIONS
    pending_revocation: Partitions = NO_PARTITIONS

    @property
    def left_static(self) -> bool:
        """A static member that left for now: it keeps its assignment until its session ends."""
        return self.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1


@dataclass
class GroupConfig:
    """The coordinator's group settings (Kafka's group.consumer.* broker configs)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    offset_metadata_max_bytes: int = 4096
    commit_timeout_ms: int = 5_000
    # Partitions of __consumer_offsets; a group lives in partition_for(group) of them.
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]


def partition_for(group_id: str, partition_count: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount``."""
    code = java_string_hash(group_id)
    return (0 if code == -(2**31) else abs(code)) % partition_count


def by_topic(partitions: Iterable[TP]) -> dict[str, list[int]]:
    """``{topic: sorted partitions}``, topics sorted: the shape records and answers use."""
    out: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        out.setdefault(topic, []).append(partition)
    return out
