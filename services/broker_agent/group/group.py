"""One consumer group's state, changed only by replaying its records (``records``).

The coordinator decides (``heartbeat``, ``offsets``), writes the records, and replays them here,
so the state after a restart or a leadership move — rebuilt from ``__consumer_offsets`` — is the
state the records describe, whoever wrote them.
"""

from __future__ import annotations

from dataclasses import replace

from services.broker_agent.group.model import (
    TP,
    CommittedOffset,
    GroupState,
    Member,
    MemberState,
    Partitions,
)
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


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, Member] = {}
        self.target: dict[str, Partitions] = {}
        self.subscription_metadata: dict[str, int] = {}
        self.offsets: dict[TP, CommittedOffset] = {}
        self.owners: dict[TP, str] = {}  # partition -> the member holding it
        self.has_metadata = False  # a group epoch record exists (not only offsets)

    # ------------------------------------------------------------------ reading

    @property
    def state(self) -> GroupState:
        """Kafka's ConsumerGroup state."""
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE:
                if not m.left_static:
                    return GroupState.RECONCILING
        return GroupState.STABLE

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def is_dead(self) -> bool:
        """Nothing left: no metadata, no members, no offsets."""
        return not self.has_metadata and not self.members and not self.offsets

    def static_member(self, instance_id: str) -> Member | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (Kafka's rule), else ``default``."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(sorted(votes), key=lambda name: votes[name])

    # ------------------------------------------------------------------ replaying

    def replay(self, record: GroupRecord) -> None:
        match record:
            case OffsetRecord(topic=topic, partition=partition, value=value):
                if value is None:
                    self.offsets.pop((topic, partition), None)
                else:
                    self.offsets[(topic, partition)] = value
            case GroupEpochRecord(epoch=epoch):
                if epoch is None:
                    self.has_metadata = False
                    self.group_epoch = 0
                else:
                    self.has_metadata = True
                    self.group_epoch = epoch
            case SubscriptionMetadataRecord(topics=topics):
                self.subscription_metadata = dict(topics or {})
            case MemberRecord(member_id=member_id, member=member):
                self._replay_member(member_id, member)
            case TargetEpochRecord(assignment_epoch=epoch):
                self.assignment_epoch = 0 if epoch is None else epoch
            case TargetRecord(member_id=member_id, partitions=partitions):
                if partitions is None:
                    self.target.pop(member_id, None)
                else:
                    self.target[member_id] = partitions
            case CurrentRecord(member_id=member_id, member=member):
                self._replay_current(member_id, member)

    def _replay_member(self, member_id: str, member: Member | None) -> None:
        old = self.members.get(member_id)
        if member is None:
            if old is not None:
                self._release(old)
                del self.members[member_id]
            return
        if old is None:
            self.members[member_id] = member
            return
        self.members[member_id] = replace(
            old,
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topics=member.subscribed_topics,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor,
        )

    def _replay_current(self, member_id: str, current: Member | None) -> None:
        old = self.members.get(member_id) or Member(member_id)
        self._release(old)
        if current is None:
            updated = replace(
                old,
                member_epoch=0,
                previous_member_epoch=-1,
                state=MemberState.STABLE,
                assigned=frozenset(),
                pending_revocation=frozenset(),
            )
        else:
            updated = replace(
                old,
                member_epoch=current.member_epoch,
                previous_member_epoch=current.previous_member_epoch,
                state=current.state,
                assigned=current.assigned,
                pending_revocation=current.pending_revocation,
            )
        if member_id in self.members or current is not None:
            self.members[member_id] = updated
        for tp in updated.assigned | updated.pending_revocation:
            self.owners[tp] = member_id

    def _release(self, member: Member) -> None:
        for tp in member.assigned | member.pending_revocation:
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]
