"""OffsetCommit and OffsetFetch decisions (Kafka's OffsetMetadataManager).

A commit from a member must carry its current member epoch (STALE_MEMBER_EPOCH otherwise: a
member that has moved on, or a zombie, cannot move the group's position). A commit from outside
the group (epoch -1, no member id: a tool resetting offsets, a consumer assigning partitions by
hand) is accepted only while the group has no members, and creates the group if needed. Each
partition can fail alone (a negative partition, metadata over ``offset.metadata.max.bytes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leasehold.common.v1 import common_pb2 as c
from leasehold.validation import topic_name_problem
from services.broker_agent.group.errors import check_id, group_error, invalid
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import TP, CommittedOffset, GroupConfig
from services.broker_agent.group.records import OffsetRecord

NO_OFFSET = CommittedOffset(-1, -1, "", -1)


@dataclass(frozen=True)
class CommitItem:
    tp: TP
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True)
class CommitOutcome:
    tp: TP
    error: int = c.ERROR_CODE_NONE
    message: str = ""


def commit(
    group: ConsumerGroup | None,
    group_id: str,
    member_id: str,
    member_epoch: int,
    items: Sequence[CommitItem],
    config: GroupConfig,
    now_ms: int,
) -> tuple[list[OffsetRecord], list[CommitOutcome]]:
    """The records to write and one outcome per item, in request order."""
    if not group_id:
        raise invalid("GroupId can't be empty.", "group_id")
    check_id(group_id, "group_id")
    check_id(member_id, "member_id")
    from_outside = member_epoch < 0 and not member_id
    if group is None or group.is_empty:
        if not from_outside:
            if group is None:
                raise group_error(
                    c.ERROR_CODE_GROUP_ID_NOT_FOUND, f"Group {group_id[:64]} not found."
                )
            raise _unknown_member(member_id, group_id)
    elif from_outside:
        raise _unknown_member(member_id, group_id)
    else:
        member = group.members.get(member_id)
        if member is None:
            raise _unknown_member(member_id, group_id)
        if member_epoch != member.member_epoch:
            raise group_error(
                c.ERROR_CODE_STALE_MEMBER_EPOCH,
                f"The member epoch {member_epoch} is stale; the member's epoch is "
                f"{member.member_epoch}.",
            )
    records: list[OffsetRecord] = []
    outcomes: list[CommitOutcome] = []
    for item in items:
        topic, partition = item.tp
        if partition < 0 or topic_name_problem(topic) is not None:
            outcomes.append(
                CommitOutcome(item.tp, c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, "no such partition")
            )
        elif len(item.metadata.encode()) > config.offset_metadata_max_bytes:
            outcomes.append(
                CommitOutcome(
                    item.tp,
                    c.ERROR_CODE_OFFSET_METADATA_TOO_LARGE,
                    f"metadata exceeds offset.metadata.max.bytes "
                    f"({config.offset_metadata_max_bytes})",
                )
            )
        elif item.offset < 0:
            outcomes.append(
                CommitOutcome(item.tp, c.ERROR_CODE_INVALID_REQUEST, "offsets must not be negative")
            )
        else:
            value = CommittedOffset(item.offset, item.leader_epoch, item.metadata, now_ms)
            records.append(OffsetRecord(group_id, topic, partition, value))
            outcomes.append(CommitOutcome(item.tp))
    return records, outcomes


def _unknown_member(member_id: str, group_id: str):
    who = f"Member {member_id[:64]}" if member_id else "A commit from outside the group"
    return group_error(
        c.ERROR_CODE_UNKNOWN_MEMBER_ID,
        f"{who} is not a member of group {group_id[:64]}"
        + ("" if member_id else ", which has members: offsets can be reset only when it is empty")
        + ".",
    )


def fetch(group: ConsumerGroup | None, wanted: Sequence[TP] | None) -> dict[TP, CommittedOffset]:
    """Committed offsets of ``wanted`` (None: all the group has); -1 where none."""
    offsets = group.offsets if group is not None else {}
    if wanted is None:
        return dict(sorted(offsets.items()))
    return {tp: offsets.get(tp, NO_OFFSET) for tp in wanted}
