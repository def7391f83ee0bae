"""The SDK's GroupConsumer against the coordinator's own decisions, in process: two members
rebalance with revoke-before-assign, and a member whose answer is lost (the coordinator wrote it,
then moved) still reaches its assignment, because every heartbeat says what it owns."""

from __future__ import annotations

import asyncio
import itertools

from leasehold.client.group_consumer import GroupConsumer
from leasehold.client.groups import assignment_pb, partitions_of
from leasehold.group.v1 import group_pb2 as g
from services.broker_agent.group import heartbeat as hb
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import GroupConfig


class FakeCoordinator:
    """GroupClient's heartbeat and commit, answered by the real decision functions."""

    def __init__(self) -> None:
        ids = (f"m{i}" for i in itertools.count(1))
        self.ctx = hb.Context(GroupConfig(), {"t": 4}.get, lambda: next(ids))
        self.group: ConsumerGroup | None = None
        self.lose_next_answer = False

    async def heartbeat(self, request: g.ConsumerGroupHeartbeatRequest):
        req = hb.HeartbeatRequest(
            request.group_id, request.member_id, request.member_epoch,
            subscribed_topics=tuple(request.subscription.topic_names)
            if request.HasField("subscription") else None,
            owned=partitions_of(request.owned) if request.HasField("owned") else None,
        )  # fmt: skip
        result = hb.heartbeat(self.group, req, self.ctx)
        if self.group is None:
            self.group = ConsumerGroup(request.group_id)
        for record in result.records:
            self.group.replay(record)
        if self.lose_next_answer:
            self.lose_next_answer = False
            raise ConnectionError("the answer was lost")
        response = g.ConsumerGroupHeartbeatResponse(
            member_id=result.member_id, member_epoch=result.member_epoch, heartbeat_interval_ms=1
        )
        if result.assignment is not None:
            response.assignment.CopyFrom(assignment_pb(result.assignment))
        return response

    async def commit(self, *args, **kwargs) -> None:
        return None


def member(coordinator: FakeCoordinator) -> GroupConsumer:
    m = GroupConsumer("g", ["t"], bootstrap=["127.0.0.1:1"])
    m.groups = coordinator  # type: ignore[assignment]

    async def start_at_zero(added) -> None:
        m.consumer.positions.update({tp: 0 for tp in added})

    m._start_positions = start_at_zero  # type: ignore[method-assign]
    return m


async def beat(m: GroupConsumer) -> None:
    await m._heartbeat()


def test_two_members_rebalance_and_a_lost_answer_is_recovered():
    async def scenario():
        coordinator = FakeCoordinator()
        a, b = member(coordinator), member(coordinator)
        await beat(a)
        assert a.assignment() == {("t", p) for p in range(4)}
        await beat(b)  # joins: its half is still a's
        assert b.assignment() == frozenset()
        await beat(a)  # told to revoke b's half: it does, and says so next time
        assert len(a.assignment()) == 2
        await beat(a)
        coordinator.lose_next_answer = True  # b's partitions are written, the answer lost
        try:
            await beat(b)
        except ConnectionError:
            pass
        assert b.assignment() == frozenset()
        await beat(b)  # b still owns nothing: the coordinator sends its assignment again
        assert len(b.assignment()) == 2 and not a.assignment() & b.assignment()
        assert a.member_epoch == b.member_epoch == coordinator.group.assignment_epoch
        for m in (a, b):
            await m.metadata.close()

    asyncio.run(scenario())
