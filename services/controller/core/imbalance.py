"""Auto leader rebalance (seed 000 section 9.2) and the PreferredReplicaImbalanceCount metric.

Per broker, the imbalance ratio is: partitions whose preferred leader (first assigned replica) is
that broker but which it does not lead, over partitions whose preferred leader it is. Partitions
of topics queued for deletion are not counted at all; a partition with no leader/ISR state yet
counts in the denominator only, as in Kafka.

A broker whose ratio exceeds ``leader.imbalance.per.broker.percentage`` gets a preferred-replica
election for each of its not-led partitions whose preferred replica could lead right now (online,
not shutting down, in the ISR). As in Kafka (and the seed), nothing is rebalanced while any
partition is being reassigned: moving leaders under a reassignment would fight it.

The decision is pure; the event loop feeds ``partitions_to_elect`` to the partition state machine
with the PREFERRED selector.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from services.controller.core.context import ControllerContext
from services.controller.core.model import TopicPartition


@dataclass(frozen=True)
class BrokerImbalance:
    broker_id: int
    preferred_partitions: int
    not_led: tuple[TopicPartition, ...]

    @property
    def ratio(self) -> float:
        return len(self.not_led) / self.preferred_partitions if self.preferred_partitions else 0.0


@dataclass(frozen=True)
class RebalanceDecision:
    imbalances: tuple[BrokerImbalance, ...]
    """Every broker that is some partition's preferred leader, by broker id."""
    partitions_to_elect: tuple[TopicPartition, ...]


def leader_imbalance(ctx: ControllerContext) -> tuple[BrokerImbalance, ...]:
    by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
    for tp in ctx.all_partitions():
        if ctx.is_topic_queued_for_deletion(tp.topic):
            continue
        assignment = ctx.assignment(tp)
        preferred = assignment.preferred_replica if assignment is not None else None
        if preferred is not None:
            by_broker[preferred].append(tp)
    out = []
    for broker in sorted(by_broker):
        tps = by_broker[broker]
        not_led = tuple(
            tp for tp in tps if (lai := ctx.leader_and_isr(tp)) is not None and lai.leader != broker
        )
        out.append(BrokerImbalance(broker, len(tps), not_led))
    return tuple(out)


def can_preferred_replica_lead(ctx: ControllerContext, tp: TopicPartition) -> bool:
    """The preferred replica is online (so not shutting down) and in the current ISR."""
    assignment = ctx.assignment(tp)
    lai = ctx.leader_and_isr(tp)
    if assignment is None or lai is None or assignment.preferred_replica is None:
        return False
    preferred = assignment.preferred_replica
    return ctx.is_replica_online(preferred, tp) and preferred in lai.isr


def decide_auto_rebalance(ctx: ControllerContext, imbalance_percentage: int) -> RebalanceDecision:
    """Which partitions get a preferred-replica election in this rebalance round."""
    imbalances = leader_imbalance(ctx)
    if ctx.partitions_being_reassigned():
        return RebalanceDecision(imbalances, ())
    threshold = imbalance_percentage / 100
    chosen: list[TopicPartition] = []
    for imb in imbalances:
        if imb.ratio > threshold:
            chosen.extend(
                tp
                for tp in imb.not_led
                if ctx.has_topic(tp.topic)
                and not ctx.is_topic_queued_for_deletion(tp.topic)
                and can_preferred_replica_lead(ctx, tp)
            )
    return RebalanceDecision(imbalances, tuple(sorted(chosen)))
