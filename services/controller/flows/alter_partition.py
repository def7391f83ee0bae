"""AlterPartition (KIP-497): partition leaders ask the controller, the only writer, to change ISRs.

Validation (``validate``, pure) follows KRaft's ReplicationControlManager: the sender's broker
epoch, then per partition the leader, the leader epoch (FENCED_LEADER_EPOCH when older), the
partition epoch (INVALID_UPDATE_VERSION on any mismatch: the leader acted on stale state), the
recovery state (KIP-704), and the new ISR: assigned replicas only, including the leader, and no
replica on a dead, shutting-down or re-registered broker (INELIGIBLE_REPLICA, KIP-841). Accepted
changes are written with compare-and-set on the partition epoch in one batched commit, answered
with the new state and propagated with UpdateMetadata; a reassignment whose new replicas are now
all in sync completes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from leasehold import telemetry
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2
from services.controller.codec import RECOVERED, RECOVERING
from services.controller.core import (
    ControllerContext,
    LeaderAndIsr,
    TopicPartition,
    UpdateMetadataIntent,
)
from services.controller.core.plan_builder import PlanBuilder
from services.controller.events import AlterPartition

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

log = logging.getLogger(__name__)

E = common_pb2
Response = controller_pb2.AlterPartitionResponse


@dataclass(frozen=True)
class Decision:
    """One partition's verdict: an error, or the new leader/ISR to write (None: no change)."""

    tp: TopicPartition
    error: int = E.ERROR_CODE_NONE
    message: str = ""
    new: LeaderAndIsr | None = None


def validate_broker(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> tuple[int, str]:
    if broker_id not in ctx.brokers:
        return E.ERROR_CODE_STALE_BROKER_EPOCH, f"Broker {broker_id} is not registered."
    current = ctx.broker_epoch(broker_id)
    if broker_epoch != -1 and broker_epoch != current:
        return E.ERROR_CODE_STALE_BROKER_EPOCH, (
            f"Broker epoch {broker_epoch} of broker {broker_id} does not match {current}."
        )
    return E.ERROR_CODE_NONE, ""


def validate(
    ctx: ControllerContext,
    broker_id: int,
    topic: str,
    topic_id: str,
    data: controller_pb2.AlterPartitionPartition,
) -> Decision:
    tp = TopicPartition(topic, data.partition)
    assignment = ctx.assignment(tp)
    lai = ctx.leader_and_isr(tp)
    if assignment is None or lai is None:
        return Decision(tp, E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp}.")
    if topic_id and topic_id != ctx.topic_id(topic):
        return Decision(tp, E.ERROR_CODE_UNKNOWN_TOPIC_ID, f"Topic {topic} has another id.")
    if lai.leader != broker_id:
        return Decision(
            tp, E.ERROR_CODE_NOT_LEADER_OR_FOLLOWER, f"Broker {broker_id} does not lead {tp}."
        )
    if data.leader_epoch < lai.leader_epoch:
        return Decision(
            tp,
            E.ERROR_CODE_FENCED_LEADER_EPOCH,
            f"Leader epoch {data.leader_epoch} is older than {lai.leader_epoch}.",
        )
    if data.leader_epoch > lai.leader_epoch:
        return Decision(
            tp,
            E.ERROR_CODE_UNKNOWN_LEADER_EPOCH,
            f"Leader epoch {data.leader_epoch} is newer than {lai.leader_epoch}.",
        )
    if data.partition_epoch != lai.partition_epoch:
        requested = tuple(s.broker_id for s in data.new_isr_with_epochs)
        if requested == lai.isr and (data.leader_recovery_state == RECOVERING) == lai.recovering:
            # A retry of a change that was already applied (Kafka's ZK controller does the same:
            # equal but for the partition epoch): answer with the current state, write nothing.
            return Decision(tp)
        return Decision(
            tp,
            E.ERROR_CODE_INVALID_UPDATE_VERSION,
            f"Partition epoch {data.partition_epoch} does not match {lai.partition_epoch}.",
        )
    new_isr = tuple(s.broker_id for s in data.new_isr_with_epochs)
    recovering = data.leader_recovery_state == RECOVERING
    if len(set(new_isr)) != len(new_isr) or broker_id not in new_isr:
        return Decision(tp, E.ERROR_CODE_INVALID_REQUEST, f"Bad ISR {list(new_isr)} for {tp}.")
    if recovering and (len(new_isr) > 1 or not lai.recovering):
        return Decision(
            tp, E.ERROR_CODE_INVALID_REQUEST, f"{tp} cannot be RECOVERING with ISR {list(new_isr)}."
        )
    unassigned = [r for r in new_isr if r not in assignment.replicas]
    if unassigned:
        return Decision(
            tp, E.ERROR_CODE_INVALID_REQUEST, f"Replicas {unassigned} are not assigned to {tp}."
        )
    for s in data.new_isr_with_epochs:
        reason = _ineligible(ctx, tp, broker_id, s.broker_id, s.broker_epoch)
        if reason:
            return Decision(tp, E.ERROR_CODE_INELIGIBLE_REPLICA, reason)
    new = replace(lai, isr=new_isr, recovering=recovering)
    return Decision(tp, new=None if new == lai else new)


def _ineligible(
    ctx: ControllerContext, tp: TopicPartition, leader: int, replica: int, epoch: int
) -> str:
    """Why ``replica`` may not be in the ISR (KIP-841), or "" when it may."""
    if replica not in ctx.brokers:
        return f"Replica {replica} of {tp} is on a broker that is not registered."
    if epoch != -1 and epoch != ctx.broker_epoch(replica):
        return (
            f"Replica {replica} of {tp} has broker epoch {epoch}, not {ctx.broker_epoch(replica)}."
        )
    if replica != leader and not ctx.is_eligible_isr_member(replica, tp):
        return f"Replica {replica} of {tp} is shutting down or offline."
    return ""


class AlterPartitionFlow:
    def __init__(self, c: FlowContext) -> None:
        self.c = c

    async def handle(self, event: AlterPartition) -> None:
        response = Response(
            error_code=E.ERROR_CODE_NOT_CONTROLLER,
            error_message="This controller is not the active controller.",
        )
        req = event.request
        try:
            if self.c.active:
                with telemetry.span(
                    "controller.alter_partition",
                    broker_id=req.broker_id,
                    broker_epoch=req.broker_epoch,
                    topic=",".join(t.topic for t in req.topics),
                    partition_count=sum(len(t.partitions) for t in req.topics),
                    controller_epoch=self.c.epoch,
                ) as span:
                    response = await self._alter(req)
                    if response.error_code:
                        span.set_attributes(
                            telemetry.attrs(error=E.ErrorCode.Name(response.error_code))
                        )
        finally:
            if not event.future.done():
                event.future.set_result(response)

    async def _alter(self, req: controller_pb2.AlterPartitionRequest) -> Response:
        c = self.c
        ctx = c.ctx
        code, message = validate_broker(ctx, req.broker_id, req.broker_epoch)
        if code:
            return Response(error_code=code, error_message=message)
        decisions = [
            (t, validate(ctx, req.broker_id, t.topic, t.topic_id, p))
            for t in req.topics
            for p in t.partitions
        ]
        b = PlanBuilder(ctx, c.now_ms())
        for _, d in decisions:
            if d.new is not None:
                old = ctx.leader_and_isr(d.tp)
                b.write(d.tp, d.new, create=False)
                state = ctx.partition_state(d.tp).value
                grew = set(d.new.isr) - set(old.isr)
                b.partition_record(d.tp, state, state, "isr_expand" if grew else "isr_shrink")
        changed = [d.tp for _, d in decisions if d.new is not None]
        if changed:
            b.request(
                UpdateMetadataIntent(
                    tuple(sorted(ctx.live_or_shutting_down_broker_ids)), tuple(changed)
                )
            )
            plan = await c.execute(b.build())
            applied = {w.tp for w in plan.writes}
        else:
            applied = set()
        response = self._response(decisions, applied)
        reassigning = set(ctx.partitions_being_reassigned())
        await c.flows.reassignment.check_completion(sorted(applied & reassigning))
        return response

    def _response(self, decisions, applied: set[TopicPartition]) -> Response:
        """Answer with the state as this request left it (before any reassignment step)."""
        ctx = self.c.ctx
        by_topic: dict[str, controller_pb2.AlterPartitionTopicResponse] = {}
        for t, d in decisions:
            out = by_topic.setdefault(
                t.topic,
                controller_pb2.AlterPartitionTopicResponse(topic=t.topic, topic_id=t.topic_id),
            )
            error, msg = d.error, d.message
            if d.new is not None and d.tp not in applied:
                error, msg = E.ERROR_CODE_INVALID_UPDATE_VERSION, "The partition changed meanwhile."
            part = controller_pb2.AlterPartitionPartitionResponse(
                partition=d.tp.partition, error_code=error, error_message=msg
            )
            lai = ctx.leader_and_isr(d.tp)
            if error == E.ERROR_CODE_NONE and lai is not None:
                part.leader_id = lai.leader
                part.leader_epoch = lai.leader_epoch
                part.isr.extend(lai.isr)
                part.partition_epoch = lai.partition_epoch
                part.leader_recovery_state = RECOVERING if lai.recovering else RECOVERED
            out.partitions.append(part)
        return Response(topics=list(by_topic.values()))
