"""GroupService: translates protobuf to the coordinator's calls and back, nothing more.

A group-level failure (not the coordinator, a fenced or unknown member, a stale epoch) fails the
call with the error model's status and ErrorInfo; per-item outcomes (a partition of a commit, a
group of FindCoordinator, DescribeGroups or DeleteGroups) are in the response.
"""

from __future__ import annotations

from collections.abc import Iterable

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import LeaseholdError
from leasehold.group.v1 import group_pb2 as g
from leasehold.group.v1 import group_pb2_grpc
from services.broker_agent.group.coordinator import GroupCoordinator
from services.broker_agent.group.errors import invalid
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.heartbeat import HeartbeatRequest
from services.broker_agent.group.model import TP, GroupState, Partitions, by_topic
from services.broker_agent.group.offsets import CommitItem

SERVICE_NAME = g.DESCRIPTOR.services_by_name["GroupService"].full_name


def assignment_pb(partitions: Iterable[TP]) -> g.Assignment:
    return g.Assignment(
        topic_partitions=[
            g.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic(partitions).items()
        ]
    )


def partitions_of(assignment: g.Assignment, field: str) -> Partitions:
    out = set()
    for i, t in enumerate(assignment.topic_partitions):
        if not t.topic or any(p < 0 for p in t.partitions):
            raise invalid(
                f"{field}.topic_partitions[{i}] names a partition that cannot exist", field
            )
        out.update((t.topic, p) for p in t.partitions)
    return frozenset(out)


def client_host(peer: str) -> str:
    """``ipv4:127.0.0.1:5000`` -> ``/127.0.0.1`` (Kafka's HOST column)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        return "/" + rest.rsplit(":", 1)[0].strip("[]%")
    return "/" + rest.rsplit(":", 1)[0] if rest else peer


class GroupServicer(group_pb2_grpc.GroupServiceServicer):
    def __init__(self, coordinator: GroupCoordinator, broker_id: int) -> None:
        self._coordinator = coordinator
        self._broker_id = broker_id

    async def FindCoordinator(
        self, request: g.FindCoordinatorRequest, context
    ) -> g.FindCoordinatorResponse:
        if not request.group_ids:
            raise invalid("FindCoordinator names no group.", "group_ids")
        answers = self._coordinator.find(list(request.group_ids))
        return g.FindCoordinatorResponse(
            coordinators=[
                g.Coordinator(
                    group_id=a.group_id,
                    node_id=a.node_id,
                    host=a.host,
                    port=a.port,
                    error_code=a.error,
                    error_message=a.message,
                )  # fmt: skip
                for a in answers
            ]
        )

    async def ConsumerGroupHeartbeat(
        self, request: g.ConsumerGroupHeartbeatRequest, context
    ) -> g.ConsumerGroupHeartbeatResponse:
        req = HeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id if request.HasField("instance_id") else None,
            rack_id=request.rack_id if request.HasField("rack_id") else None,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topics=tuple(request.subscription.topic_names)
            if request.HasField("subscription")
            else None,
            server_assignor=request.server_assignor
            if request.HasField("server_assignor")
            else None,
            owned=partitions_of(request.owned, "owned") if request.HasField("owned") else None,
            client_id=request.client_id[:256],
            client_host=client_host(context.peer()) if context is not None else "",
        )
        result = await self._coordinator.heartbeat(req)
        response = g.ConsumerGroupHeartbeatResponse(
            member_id=result.member_id,
            member_epoch=result.member_epoch,
            heartbeat_interval_ms=self._coordinator.config.heartbeat_interval_ms,
        )
        if result.assignment is not None:
            response.assignment.CopyFrom(assignment_pb(result.assignment))
        return response

    async def OffsetCommit(self, request: g.OffsetCommitRequest, context) -> g.OffsetCommitResponse:
        items = []
        for t in request.topics:
            for p in t.partitions:
                epoch = p.committed_leader_epoch if p.HasField("committed_leader_epoch") else -1
                items.append(
                    CommitItem(
                        (t.topic, p.partition), p.committed_offset, epoch, p.committed_metadata
                    )
                )
        if len({i.tp for i in items}) != len(items):
            raise invalid("OffsetCommit names a partition twice.", "topics")
        outcomes = await self._coordinator.commit(
            request.group_id, request.member_id, request.member_epoch, items
        )
        by_name: dict[str, g.OffsetCommitTopicResponse] = {}
        for o in outcomes:
            topic = by_name.setdefault(o.tp[0], g.OffsetCommitTopicResponse(topic=o.tp[0]))
            topic.partitions.add(partition=o.tp[1], error_code=o.error, error_message=o.message)
        return g.OffsetCommitResponse(topics=list(by_name.values()))

    async def OffsetFetch(self, request: g.OffsetFetchRequest, context) -> g.OffsetFetchResponse:
        wanted = (
            [(t.topic, p) for t in request.topics for p in t.partitions] if request.topics else None
        )
        found = await self._coordinator.fetch(request.group_id, wanted)
        by_name: dict[str, g.OffsetFetchTopicResponse] = {}
        for (topic, partition), o in found.items():
            out = by_name.setdefault(topic, g.OffsetFetchTopicResponse(topic=topic))
            out.partitions.add(
                partition=partition,
                committed_offset=o.offset,
                committed_leader_epoch=o.leader_epoch,
                committed_metadata=o.metadata,
                commit_timestamp_ms=o.commit_timestamp_ms,
            )
        return g.OffsetFetchResponse(topics=list(by_name.values()))

    async def ListGroups(self, request: g.ListGroupsRequest, context) -> g.ListGroupsResponse:
        wanted = {s.upper() for s in request.states_filter}
        known = {s.name for s in GroupState}
        for s in wanted:
            if s not in known:
                raise invalid(f"unknown group state {s[:32]}", "states_filter")
        groups = [
            g.ListedGroup(group_id=x.group_id, group_state=x.state.name, protocol_type="consumer")
            for x in sorted(self._coordinator.groups(), key=lambda x: x.group_id)
            if not wanted or x.state.name in wanted
        ]
        return g.ListGroupsResponse(groups=groups)

    async def DescribeGroups(
        self, request: g.DescribeGroupsRequest, context
    ) -> g.DescribeGroupsResponse:
        out = []
        for group_id in request.group_ids:
            try:
                group = self._coordinator.describe(group_id)
            except LeaseholdError as exc:
                out.append(
                    g.DescribedGroup(
                        group_id=group_id, error_code=exc.code, error_message=exc.message
                    )
                )
                continue
            out.append(self._described(group_id, group))
        return g.DescribeGroupsResponse(groups=out)

    def _described(self, group_id: str, group: ConsumerGroup | None) -> g.DescribedGroup:
        if group is None:
            return g.DescribedGroup(
                group_id=group_id, group_state=GroupState.DEAD.name,
                error_code=c.ERROR_CODE_GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id[:64]} not found.",
                coordinator_id=self._broker_id,
            )  # fmt: skip
        members = []
        for m in sorted(group.members.values(), key=lambda m: m.member_id):
            member = g.Member(
                member_id=m.member_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=m.subscribed_topics,
                assignment=assignment_pb(m.assigned),
                target_assignment=assignment_pb(group.target.get(m.member_id, frozenset())),
                state=m.state.name,
            )  # fmt: skip
            if m.instance_id is not None:
                member.instance_id = m.instance_id
            if m.rack_id is not None:
                member.rack_id = m.rack_id
            members.append(member)
        return g.DescribedGroup(
            group_id=group_id,
            group_state=group.state.name,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.preferred_assignor(self._coordinator.config.default_assignor),
            members=members,
            coordinator_id=self._broker_id,
        )

    async def DeleteGroups(self, request: g.DeleteGroupsRequest, context) -> g.DeleteGroupsResponse:
        if len(set(request.group_ids)) != len(request.group_ids):
            raise invalid("DeleteGroups names a group twice.", "group_ids")
        results = []
        for group_id in request.group_ids:
            try:
                await self._coordinator.delete(group_id)
            except LeaseholdError as exc:
                results.append(
                    g.DeletedGroup(
                        group_id=group_id, error_code=exc.code, error_message=exc.message
                    )
                )
                continue
            results.append(g.DeletedGroup(group_id=group_id))
        return g.DeleteGroupsResponse(results=results)
