"""The records of ``__consumer_offsets``: their encoding and the values they stand for.

A key is a 2-byte big-endian record type and the key message (``leasehold.group.v1`` in
``protos/leasehold/group/v1/records.proto``); a value is a 2-byte version and the value message,
or null for a tombstone. The types follow Kafka's group coordinator: offsets (1) and a consumer
group's metadata (3), subscribed-topic metadata (4), members (5), target assignment epoch (6)
and members' targets (7), and members' current assignments (8). Equal keys encode to equal bytes,
so compaction keeps exactly the latest record of each.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from leasehold.group.v1 import records_pb2 as pb
from services.broker_agent.group.model import (
    CommittedOffset,
    Member,
    MemberState,
    Partitions,
    by_topic,
)

_TYPE = struct.Struct(">h")
VALUE_VERSION = 0
OFFSET_COMMIT = 1
GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8


@dataclass(frozen=True)
class OffsetRecord:
    group_id: str
    topic: str
    partition: int
    value: CommittedOffset | None


@dataclass(frozen=True)
class GroupEpochRecord:
    group_id: str
    epoch: int | None  # None: the group is deleted


@dataclass(frozen=True)
class SubscriptionMetadataRecord:
    group_id: str
    topics: Mapping[str, int] | None  # topic -> partition count


@dataclass(frozen=True)
class MemberRecord:
    """A member's subscription half (the current-assignment half is ``CurrentRecord``)."""

    group_id: str
    member_id: str
    member: Member | None


@dataclass(frozen=True)
class TargetEpochRecord:
    group_id: str
    assignment_epoch: int | None


@dataclass(frozen=True)
class TargetRecord:
    group_id: str
    member_id: str
    partitions: Partitions | None


@dataclass(frozen=True)
class CurrentRecord:
    group_id: str
    member_id: str
    member: Member | None  # only the epochs, state and partitions are meant


GroupRecord = (
    OffsetRecord
    | GroupEpochRecord
    | SubscriptionMetadataRecord
    | MemberRecord
    | TargetEpochRecord
    | TargetRecord
    | CurrentRecord
)


def _partitions_pb(partitions: Partitions) -> list[pb.RecordPartitions]:
    return [pb.RecordPartitions(topic=t, partitions=ps) for t, ps in by_topic(partitions).items()]


def _partitions(items) -> Partitions:
    return frozenset((i.topic, p) for i in items for p in i.partitions)


def _key(kind: int, message) -> bytes:
    return _TYPE.pack(kind) + message.SerializeToString(deterministic=True)


def _value(message) -> bytes:
    return _TYPE.pack(VALUE_VERSION) + message.SerializeToString(deterministic=True)


def encode(record: GroupRecord) -> tuple[bytes, bytes | None]:
    """``(key, value)`` of a record; the value is None for a tombstone."""
    g = record.group_id
    match record:
        case OffsetRecord(topic=topic, partition=partition, value=v):
            key = _key(
                OFFSET_COMMIT, pb.OffsetCommitKey(group_id=g, topic=topic, partition=partition)
            )
            if v is None:
                return key, None
            return key, _value(
                pb.OffsetCommitValue(
                    offset=v.offset,
                    leader_epoch=v.leader_epoch,
                    metadata=v.metadata,
                    commit_timestamp_ms=v.commit_timestamp_ms,
                )
            )
        case GroupEpochRecord(epoch=epoch):
            key = _key(GROUP_METADATA, pb.ConsumerGroupMetadataKey(group_id=g))
            return key, None if epoch is None else _value(
                pb.ConsumerGroupMetadataValue(epoch=epoch)
            )
        case SubscriptionMetadataRecord(topics=topics):
            key = _key(PARTITION_METADATA, pb.ConsumerGroupPartitionMetadataKey(group_id=g))
            if topics is None:
                return key, None
            value = pb.ConsumerGroupPartitionMetadataValue(
                topics=[
                    pb.TopicMetadata(topic_name=t, num_partitions=n)
                    for t, n in sorted(topics.items())
                ]
            )
            return key, _value(value)
        case MemberRecord(member_id=member_id, member=m):
            key = _key(
                MEMBER_METADATA, pb.ConsumerGroupMemberMetadataKey(group_id=g, member_id=member_id)
            )
            if m is None:
                return key, None
            value = pb.ConsumerGroupMemberMetadataValue(
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topics,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                server_assignor=m.server_assignor,
            )
            if m.instance_id is not None:
                value.instance_id = m.instance_id
            if m.rack_id is not None:
                value.rack_id = m.rack_id
            return key, _value(value)
        case TargetEpochRecord(assignment_epoch=epoch):
            key = _key(TARGET_METADATA, pb.ConsumerGroupTargetAssignmentMetadataKey(group_id=g))
            if epoch is None:
                return key, None
            return key, _value(
                pb.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch)
            )
        case TargetRecord(member_id=member_id, partitions=parts):
            key = _key(
                TARGET_MEMBER,
                pb.ConsumerGroupTargetAssignmentMemberKey(group_id=g, member_id=member_id),
            )
            if parts is None:
                return key, None
            return key, _value(
                pb.ConsumerGroupTargetAssignmentMemberValue(topic_partitions=_partitions_pb(parts))
            )
        case CurrentRecord(member_id=member_id, member=m):
            key = _key(
                CURRENT_ASSIGNMENT,
                pb.ConsumerGroupCurrentMemberAssignmentKey(group_id=g, member_id=member_id),
            )
            if m is None:
                return key, None
            return key, _value(
                pb.ConsumerGroupCurrentMemberAssignmentValue(
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.previous_member_epoch,
                    state=int(m.state),
                    assigned_partitions=_partitions_pb(m.assigned),
                    partitions_pending_revocation=_partitions_pb(m.pending_revocation),
                )
            )
    raise TypeError(f"not a group record: {record!r}")


def decode(key: bytes | None, value: bytes | None) -> GroupRecord | None:
    """The record a log entry holds; None for a key of a type this version does not know."""
    if key is None or len(key) < 2:
        return None
    (kind,) = _TYPE.unpack_from(key)
    body = key[2:]
    data = None if value is None else value[2:]
    if kind == OFFSET_COMMIT:
        k = pb.OffsetCommitKey.FromString(body)
        if data is None:
            return OffsetRecord(k.group_id, k.topic, k.partition, None)
        v = pb.OffsetCommitValue.FromString(data)
        return OffsetRecord(
            k.group_id, k.topic, k.partition,
            CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp_ms),
        )  # fmt: skip
    if kind == GROUP_METADATA:
        g = pb.ConsumerGroupMetadataKey.FromString(body).group_id
        epoch = None if data is None else pb.ConsumerGroupMetadataValue.FromString(data).epoch
        return GroupEpochRecord(g, epoch)
    if kind == PARTITION_METADATA:
        g = pb.ConsumerGroupPartitionMetadataKey.FromString(body).group_id
        if data is None:
            return SubscriptionMetadataRecord(g, None)
        v = pb.ConsumerGroupPartitionMetadataValue.FromString(data)
        return SubscriptionMetadataRecord(g, {t.topic_name: t.num_partitions for t in v.topics})
    if kind == MEMBER_METADATA:
        k = pb.ConsumerGroupMemberMetadataKey.FromString(body)
        if data is None:
            return MemberRecord(k.group_id, k.member_id, None)
        v = pb.ConsumerGroupMemberMetadataValue.FromString(data)
        member = Member(
            k.member_id,
            instance_id=v.instance_id if v.HasField("instance_id") else None,
            rack_id=v.rack_id if v.HasField("rack_id") else None,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topics=tuple(v.subscribed_topic_names),
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            server_assignor=v.server_assignor,
        )
        return MemberRecord(k.group_id, k.member_id, member)
    if kind == TARGET_METADATA:
        g = pb.ConsumerGroupTargetAssignmentMetadataKey.FromString(body).group_id
        if data is None:
            return TargetEpochRecord(g, None)
        v = pb.ConsumerGroupTargetAssignmentMetadataValue.FromString(data)
        return TargetEpochRecord(g, v.assignment_epoch)
    if kind == TARGET_MEMBER:
        k = pb.ConsumerGroupTargetAssignmentMemberKey.FromString(body)
        if data is None:
            return TargetRecord(k.group_id, k.member_id, None)
        v = pb.ConsumerGroupTargetAssignmentMemberValue.FromString(data)
        return TargetRecord(k.group_id, k.member_id, _partitions(v.topic_partitions))
    if kind == CURRENT_ASSIGNMENT:
        k = pb.ConsumerGroupCurrentMemberAssignmentKey.FromString(body)
        if data is None:
            return CurrentRecord(k.group_id, k.member_id, None)
        v = pb.ConsumerGroupCurrentMemberAssignmentValue.FromString(data)
        member = Member(
            k.member_id,
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=MemberState(v.state),
            assigned=_partitions(v.assigned_partitions),
            pending_revocation=_partitions(v.partitions_pending_revocation),
        )
        return CurrentRecord(k.group_id, k.member_id, member)
    return None
