"""ConsumerGroupHeartbeat decisions (Kafka's GroupMetadataManager.consumerGroupHeartbeat).

``heartbeat`` reads a group and a request and returns the records to write and the answer; it
changes nothing (the shard writes the records and replays them). In order:

1. validate the request (join needs a subscription and owns nothing; a member id and a valid
   epoch otherwise); leaving (epoch -1) removes the member and bumps the group epoch; a static
   member leaving for now (-2) keeps its assignment;
2. find the member: a join creates it (a static member rejoining under a new member id takes over
   its old assignment, unless the old one is still active: UNRELEASED_INSTANCE_ID); a known
   member's epoch must be its current one, or its previous one with nothing owned beyond its
   assignment (a lost answer): anything else is a zombie, fenced with FENCED_MEMBER_EPOCH;
3. a new member, a new subscription or assignor, or changed partition counts of the subscribed
   topics bump the group epoch; a group epoch ahead of the assignment epoch computes a new target
   assignment with the group's assignor;
4. the member reconciles towards its target (``reconcile``).

``fence_member`` removes a member (session or revocation timeout); ``delete_group`` removes an
empty group with its offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from leasehold.common.v1 import common_pb2 as c
from leasehold.validation import topic_name_problem
from services.broker_agent.group.assignors import ASSIGNORS, MemberSubscription
from services.broker_agent.group.errors import check_id, group_error, invalid
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    GroupConfig,
    Member,
    Partitions,
)
from services.broker_agent.group.reconcile import reconcile
from services.broker_agent.group.records import (
    CurrentRecord,
    GroupEpochRecord,
    GroupRecord,
    MemberRecord,
    OffsetRecord,
    SubscriptionMetadataRecord,
    TargetEpochRecord,
    TargetRecord,
)

DEFAULT_REBALANCE_TIMEOUT_MS = 300_000


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 0
    subscribed_topics: tuple[str, ...] | None = None  # None: unchanged
    server_assignor: str | None = None
    owned: Partitions | None = None  # None: unchanged
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class HeartbeatResult:
    records: list[GroupRecord]
    member_id: str
    member_epoch: int
    assignment: Partitions | None  # None: unchanged since the last answer
    member: Member | None  # the member after the records (None: it left)


@dataclass(frozen=True)
class Context:
    config: GroupConfig
    partition_count: Callable[[str], int | None]  # None: no such topic
    new_member_id: Callable[[], str]


def _validate(req: HeartbeatRequest, config: GroupConfig) -> None:
    if not req.group_id:
        raise invalid("GroupId can't be empty.", "group_id")
    for value, field in (
        (req.group_id, "group_id"),
        (req.member_id, "member_id"),
        (req.instance_id, "instance_id"),
        (req.rack_id, "rack_id"),
    ):
        check_id(value, field)
    epoch = req.member_epoch
    if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid(f"MemberEpoch {epoch} is invalid.", "member_epoch")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.subscribed_topics is None:
            raise invalid("SubscribedTopicNames must be set in first request.", "subscription")
        if req.owned:
            raise invalid("TopicPartitions must be empty when (re-)joining.", "owned")
        if req.rebalance_timeout_ms < 0:
            raise invalid("RebalanceTimeoutMs must not be negative.", "rebalance_timeout_ms")
    elif not req.member_id:
        raise invalid("MemberId can't be empty.", "member_id")
    if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
        raise invalid("InstanceId can't be null when leaving for now.", "instance_id")
    if req.server_assignor is not None and req.server_assignor not in config.assignors:
        raise group_error(
            c.ERROR_CODE_UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor[:64]} is not supported. Supported assignors: "
            f"{', '.join(config.assignors)}.",
        )
    for topic in req.subscribed_topics or ():
        problem = topic_name_problem(topic)
        if problem is not None:
            raise invalid(f"SubscribedTopicNames: {problem}.", "subscription")


def _check_epoch(member: Member, req: HeartbeatRequest) -> None:
    """Kafka's throwIfMemberEpochIsInvalid: a zombie is fenced."""
    received = req.member_epoch
    if received == member.member_epoch:
        return
    if (
        received < member.member_epoch
        and received == member.previous_member_epoch
        and req.owned is not None
        and req.owned <= member.assigned
    ):
        return  # the member did not get our last answer: it may carry on
    raise group_error(
        c.ERROR_CODE_FENCED_MEMBER_EPOCH,
        f"The consumer group member has a smaller member epoch ({received}) than the one known "
        f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
        f"partitions and rejoin."
        if received < member.member_epoch
        else f"The consumer group member has a greater member epoch ({received}) than the one "
        f"known by the group coordinator ({member.member_epoch}). The member must abandon all "
        f"its partitions and rejoin.",
    )


def removal_records(group_id: str, member_id: str) -> list[GroupRecord]:
    return [
        CurrentRecord(group_id, member_id, None),
        TargetRecord(group_id, member_id, None),
        MemberRecord(group_id, member_id, None),
    ]


def _subscription_metadata(
    members: Mapping[str, Member], partition_count: Callable[[str], int | None]
) -> dict[str, int]:
    topics = {t for m in members.values() for t in m.subscribed_topics}
    found = {t: partition_count(t) for t in sorted(topics)}
    return {t: n for t, n in found.items() if n}


def fence_member(group: ConsumerGroup, member_id: str, ctx: Context) -> list[GroupRecord]:
    """Remove a member (left, timed out, or fenced) and bump the group epoch."""
    records = removal_records(group.group_id, member_id)
    remaining = {m: v for m, v in group.members.items() if m != member_id}
    metadata = _subscription_metadata(remaining, ctx.partition_count)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadataRecord(group.group_id, metadata))
    records.append(GroupEpochRecord(group.group_id, group.group_epoch + 1))
    return records


def heartbeat(group: ConsumerGroup | None, req: HeartbeatRequest, ctx: Context) -> HeartbeatResult:
    _validate(req, ctx.config)
    epoch = req.member_epoch
    if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        return _leave(group, req, ctx)
    if group is None:
        if epoch != JOIN_GROUP_MEMBER_EPOCH:
            raise group_error(c.ERROR_CODE_GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        group = ConsumerGroup(req.group_id)
    records: list[GroupRecord] = []
    member, replaced = _find_member(group, req, ctx, records)
    updated = replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        client_id=req.client_id or member.client_id,
        client_host=req.client_host or member.client_host,
        subscribed_topics=tuple(sorted(set(req.subscribed_topics)))
        if req.subscribed_topics is not None
        else member.subscribed_topics,
        rebalance_timeout_ms=req.rebalance_timeout_ms or member.rebalance_timeout_ms,
        server_assignor=req.server_assignor
        if req.server_assignor is not None
        else member.server_assignor,
    )
    new_member = updated.member_id not in group.members
    bump = new_member and not replaced
    if new_member or _metadata_of(updated) != _metadata_of(member):
        records.append(MemberRecord(group.group_id, updated.member_id, updated))
        bump = bump or (
            updated.subscribed_topics != member.subscribed_topics
            or updated.server_assignor != member.server_assignor
        )
    members = {m: v for m, v in group.members.items() if m != replaced}
    members[updated.member_id] = updated
    metadata = _subscription_metadata(members, ctx.partition_count)
    if metadata != group.subscription_metadata:
        records.append(SubscriptionMetadataRecord(group.group_id, metadata))
        bump = True
    group_epoch = group.group_epoch + 1 if bump or not group.has_metadata else group.group_epoch
    if group_epoch != group.group_epoch or not group.has_metadata:
        records.append(GroupEpochRecord(group.group_id, group_epoch))
    target = dict(group.target)
    if replaced is not None and replaced in target:
        target[updated.member_id] = target.pop(replaced)
    assignment_epoch = group.assignment_epoch
    if group_epoch > assignment_epoch:
        assignor = ASSIGNORS[_assignor_for(group, updated, ctx.config)]
        subscriptions = {
            m: MemberSubscription(frozenset(v.subscribed_topics), v.rack_id)
            for m, v in members.items()
        }
        new_target = assignor(subscriptions, metadata, target)
        for m in sorted(new_target):
            if new_target[m] != group.target.get(m) or m == updated.member_id:
                records.append(TargetRecord(group.group_id, m, new_target[m]))
        records.append(TargetEpochRecord(group.group_id, group_epoch))
        target, assignment_epoch = new_target, group_epoch
    elif replaced is not None and updated.member_id in target:
        records.append(TargetRecord(group.group_id, updated.member_id, target[updated.member_id]))
    ignore = {updated.member_id, replaced}
    reconciled = reconcile(
        updated,
        assignment_epoch,
        target.get(updated.member_id, frozenset()),
        req.owned,
        lambda tp: group.owners.get(tp) not in (None, *ignore),
    )
    if new_member or _current_of(reconciled) != _current_of(member):
        records.append(CurrentRecord(group.group_id, reconciled.member_id, reconciled))
    # The assignment goes out whenever the member may not have it: a join, a change, a member
    # behind our epoch (it lost our last answer), or one that owns something else.
    send = (
        epoch == JOIN_GROUP_MEMBER_EPOCH
        or reconciled.assigned != member.assigned
        or reconciled.member_epoch != member.member_epoch
        or epoch != reconciled.member_epoch
        or (req.owned is not None and req.owned != reconciled.assigned)
    )
    return HeartbeatResult(
        records,
        reconciled.member_id,
        reconciled.member_epoch,
        reconciled.assigned if send else None,
        reconciled,
    )


def _find_member(
    group: ConsumerGroup, req: HeartbeatRequest, ctx: Context, records: list[GroupRecord]
) -> tuple[Member, str | None]:
    """The member the request speaks for, and the member id a static member replaces."""
    if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
        member = group.members.get(req.member_id)
        if member is None:
            raise group_error(
                c.ERROR_CODE_UNKNOWN_MEMBER_ID,
                f"Member {req.member_id[:64]} is not a member of group {req.group_id[:64]}.",
            )
        _check_epoch(member, req)
        return member, None
    if req.instance_id is not None:
        old = group.static_member(req.instance_id)
        if old is not None and old.member_id != req.member_id:
            if not old.left_static:
                raise group_error(
                    c.ERROR_CODE_UNRELEASED_INSTANCE_ID,
                    f"Static member {old.member_id[:64]} with instance id "
                    f"{req.instance_id[:64]} is still active: it must leave before "
                    f"{req.member_id[:64] or 'a new member'} can take its place.",
                )
            member_id = req.member_id or ctx.new_member_id()
            records.extend(removal_records(group.group_id, old.member_id))
            takeover = replace(old, member_id=member_id, member_epoch=old.previous_member_epoch)
            return takeover, old.member_id
    if req.member_id and req.member_id in group.members:
        return group.members[req.member_id], None
    if len(group.members) >= ctx.config.max_size:
        raise group_error(
            c.ERROR_CODE_GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {ctx.config.max_size} "
            f"members.",
        )
    return Member(req.member_id or ctx.new_member_id(), member_epoch=0), None


def _leave(group: ConsumerGroup | None, req: HeartbeatRequest, ctx: Context) -> HeartbeatResult:
    member = group.members.get(req.member_id) if group is not None else None
    if group is None or member is None:
        raise group_error(
            c.ERROR_CODE_UNKNOWN_MEMBER_ID,
            f"Member {req.member_id[:64]} is not a member of group {req.group_id[:64]}.",
        )
    if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        left = replace(
            member,
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            previous_member_epoch=member.member_epoch,
            pending_revocation=frozenset(),
        )
        records: list[GroupRecord] = [CurrentRecord(group.group_id, member.member_id, left)]
        return HeartbeatResult(records, member.member_id, req.member_epoch, None, left)
    records = fence_member(group, member.member_id, ctx)
    return HeartbeatResult(records, member.member_id, LEAVE_GROUP_MEMBER_EPOCH, None, None)


def _assignor_for(group: ConsumerGroup, updated: Member, config: GroupConfig) -> str:
    members = dict(group.members)
    members[updated.member_id] = updated
    probe = ConsumerGroup(group.group_id)
    probe.members = members
    return probe.preferred_assignor(config.default_assignor)


def _metadata_of(m: Member) -> tuple:
    return (
        m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topics,
        m.rebalance_timeout_ms, m.server_assignor,
    )  # fmt: skip


def _current_of(m: Member) -> tuple:
    return (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation)


def delete_group(group: ConsumerGroup) -> list[GroupRecord]:
    """The tombstones that delete an empty group and its offsets (Kafka's DeleteGroups)."""
    if not group.is_empty:
        raise group_error(c.ERROR_CODE_NON_EMPTY_GROUP, "The group is not empty.")
    g = group.group_id
    records: list[GroupRecord] = [OffsetRecord(g, t, p, None) for t, p in sorted(group.offsets)]
    records += [TargetRecord(g, m, None) for m in sorted(group.target)]
    records += [
        TargetEpochRecord(g, None),
        SubscriptionMetadataRecord(g, None),
        GroupEpochRecord(g, None),
    ]
    return records
