"""Controlled shutdown (seed 000 §10): move leadership off a broker that is about to stop.

The broker is marked shutting down (it may no longer lead or join an ISR, KIP-841). Partitions it
leads (replicated, not being deleted) get a new leader from the controlled-shutdown selector;
partitions it follows get StopReplica and lose it from their ISR (OfflineReplica). The answer
lists the replicated partitions it still leads that another live broker could take over; an
empty list means it may stop now. The broker retries until the list is empty or it gives up and
stops anyway.

The answer depends on the leadership moves alone, so it leaves once they are committed and
applied, before their requests are gathered and built (they are for the other brokers, and the
one stopping need not wait for them) and before the follower step is decided. Until the answer
is set the cyclic garbage collector is paused (``FlowContext.bulk_change``). Kafka's controller
answers after both steps; a broker stopping before its ISR shrinks are committed is what a
broker failure is, and the event still holds the controller's queue until they are.

The requests go in two batches, as Kafka's controller sends each state machine's batch as its
step ends: the leadership moves' first (LeaderAndIsr to the new leaders and followers,
UpdateMetadata of the moved partitions to every broker), then, once the other brokers have
answered it, the follower step is decided, committed and sent (StopReplica, the ISR shrinks'
LeaderAndIsr and UpdateMetadata), as a broker failure's replica step waits for its elections'.
So every broker learns the new leaders from an UpdateMetadata of those partitions alone, sent
without waiting for the follower step's decision and commit (twice as many partitions, RF 3),
and no broker is busy with the larger batch while others still wait for theirs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2
from services.controller import statelog
from services.controller.core import (
    LeaderSelector,
    PartitionReplica,
    PartitionState,
    ReplicaState,
    StateChangePlan,
    TopicPartition,
)
from services.controller.events import ControlledShutdown
from services.controller.flows.brokers import ANSWERS_QUIET_S, ANSWERS_WAIT_S
from services.controller.flows.common import move_partitions, move_replicas

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

log = logging.getLogger(__name__)

Response = controller_pb2.ControlledShutdownResponse


def not_controller() -> controller_pb2.ControlledShutdownResponse:
    return Response(
        error_code=common_pb2.ERROR_CODE_NOT_CONTROLLER,
        error_message="This controller is not the active controller.",
    )


class ControlledShutdownFlow:
    def __init__(self, c: FlowContext) -> None:
        self.c = c

    async def handle(self, event: ControlledShutdown) -> None:
        c = self.c
        response = not_controller()
        held: list[StateChangePlan] = []
        followed: list[TopicPartition] = []
        try:
            if c.active:
                with c.bulk_change(), c.holding_requests(held):
                    response = await self._move_leadership(event.request, followed)
        finally:  # a caller always gets an answer, even when we were deposed meanwhile
            if not event.future.done():
                event.future.set_result(response)
            # Let the servicer send the answer before this event's requests are gathered, built
            # and queued (a LeaderAndIsr per moved partition): the broker may stop as soon as it
            # has it. Plans already applied are queued even if a later one failed: what is
            # committed and applied must reach the brokers.
            try:
                await c.answer_first()
            finally:
                for plan in held:
                    c.batch.add_plan(plan)
        if followed:
            await self._leave_isrs(event.request.broker_id, followed)

    async def _leave_isrs(self, broker_id: int, followed: list[TopicPartition]) -> None:
        """The follower step, once the other brokers have answered the leadership moves'
        batch (``ANSWERS_WAIT_S`` at most, ``ANSWERS_QUIET_S`` after the last answer), as the
        replica step of a broker failure waits for its elections': deciding it holds the event
        loop, and the brokers' answers with it. Not ``broker_id``'s answers: told it may go, it
        may never answer. Its requests go with the end of the event."""
        c = self.c
        if c.flush():
            others = {b: n for b, n in c.queued_marks().items() if b != broker_id}
            await c.requests_answered(ANSWERS_WAIT_S, others, quiet_s=ANSWERS_QUIET_S)
        with c.bulk_change():
            await move_replicas(
                c,
                [PartitionReplica(tp, broker_id) for tp in followed],
                ReplicaState.OFFLINE,
                reason="controlled_shutdown",
            )

    async def _move_leadership(
        self, req: controller_pb2.ControlledShutdownRequest, followed: list[TopicPartition]
    ) -> Response:
        """Mark the broker shutting down and elect new leaders for what it leads; the answer.
        The partitions it follows (and may leave the ISR of) are put in ``followed``."""
        c = self.c
        ctx = c.ctx
        broker_id = req.broker_id
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            return Response(
                error_code=common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE,
                error_message=f"Broker id {broker_id} does not exist.",
            )
        current_epoch = ctx.broker_epoch(broker_id)
        if req.broker_epoch != -1 and req.broker_epoch < current_epoch:
            return Response(
                error_code=common_pb2.ERROR_CODE_STALE_BROKER_EPOCH,
                error_message=f"Broker epoch {req.broker_epoch} is older than {current_epoch}.",
            )
        log.info("controlled shutdown of broker %d", broker_id)
        if broker_id not in ctx.shutting_down_broker_ids:
            ctx.apply_broker_shutting_down(broker_id)
            c.statelog.broker(statelog.BROKER_SHUTDOWN, broker_id, c.epoch)
        led: list[TopicPartition] = []
        for tp in ctx.partitions_on_broker(broker_id):  # sorted, so both lists are too
            lai = ctx.leader_and_isr(tp)
            if lai is None or len(ctx.replicas(tp)) <= 1:
                continue
            if ctx.is_topic_queued_for_deletion(tp.topic):
                continue
            (led if lai.leader == broker_id else followed).append(tp)
        await move_partitions(
            c, led, PartitionState.ONLINE, selector=LeaderSelector.CONTROLLED_SHUTDOWN
        )
        # Still led, and some other replica's broker is live (it may yet join the ISR and take
        # over). A partition no other live broker holds cannot move however long the broker
        # waits (the others stopped, or are stopping too): it is not reported, so the last
        # broker of a cluster being stopped goes at once instead of retrying until its timeout.
        live = ctx.live_broker_ids
        remaining = [
            tp
            for tp in ctx.partitions_led_by(broker_id)
            if len(ctx.replicas(tp)) > 1
            and not ctx.is_topic_queued_for_deletion(tp.topic)
            and any(r != broker_id and r in live for r in ctx.replicas(tp))
        ]
        if remaining:
            log.info("broker %d still leads %d partitions", broker_id, len(remaining))
        return Response(
            remaining_partitions=[
                common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition)
                for tp in remaining
            ]
        )
