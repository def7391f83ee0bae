"""Leader elections on request (KIP-460 ElectLeaders) and auto leader rebalance (seed 000 §9.2).

An ``/admin/elections/<id>`` intent names partitions (none: all) and a type. PREFERRED moves
leadership to the first assigned replica when it is live and in the ISR; UNCLEAN elects, for
partitions without a live leader only, from the live replicas even outside the ISR (the partition
becomes RECOVERING, KIP-704). The per-partition outcome is written as the admin result.

The rebalance scheduler puts an ``AutoRebalance`` event on the loop every
``leader.imbalance.check.interval.seconds`` (cluster config; the controller's
``--rebalance-interval`` overrides it); the handler acts only while
``auto.leader.rebalance.enable`` is true, using ``leader.imbalance.per.broker.percentage``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from leasehold.common.v1 import common_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import (
    FailureCode,
    LeaderSelector,
    PartitionState,
    TopicPartition,
    decide_auto_rebalance,
)
from services.controller.events import AutoRebalance, ElectionRequest
from services.controller.flows.common import (
    ELECTION_ERROR_CODES,
    IntentOutcome,
    finish_intents,
    intent_span,
    move_partitions,
)

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext, Timer

log = logging.getLogger(__name__)

ELECTION = metadata_pb2.ADMIN_OPERATION_ELECTION


class ElectionFlows:
    def __init__(self, c: FlowContext) -> None:
        self.c = c
        self._scheduler: Timer | None = None

    # ---- requested elections -----------------------------------------------------------------
    async def on_intents(self, event: ElectionRequest) -> None:
        for u in event.updates:
            if u.intent is not None:
                with intent_span(
                    "controller.elect_leaders", [u.intent.trace_context], request_id=u.request_id
                ):
                    await self._elect(u.request_id, u.intent, u.mod_revision)

    async def process_pending(self) -> None:
        for request_id, (intent, revision) in sorted(self.c.view.elections.items()):
            await self._elect(request_id, intent, revision)

    async def _elect(
        self, request_id: str, intent: metadata_pb2.ElectionIntent, revision: int
    ) -> None:
        c = self.c
        ctx = c.ctx
        everything = not intent.partitions
        if everything:
            tps = list(ctx.all_partitions())
        else:
            tps = list(
                dict.fromkeys(TopicPartition(p.topic, p.partition) for p in intent.partitions)
            )
        unclean = intent.election_type == common_pb2.ELECTION_TYPE_UNCLEAN
        results: dict[TopicPartition, tuple[int, str]] = {}
        chosen: list[TopicPartition] = []
        for tp in tps:
            lai = ctx.leader_and_isr(tp)
            if ctx.assignment(tp) is None or lai is None:
                results[tp] = (
                    common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                    f"Unknown partition {tp}.",
                )
            elif ctx.is_topic_queued_for_deletion(tp.topic):
                results[tp] = (
                    common_pb2.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS,
                    f"Topic {tp.topic} is being deleted.",
                )
            elif (
                unclean
                and lai.has_leader
                and ctx.is_replica_online(lai.leader, tp, include_shutting_down=True)
            ):
                results[tp] = (
                    common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED,
                    f"{tp} has a live leader.",
                )
            elif everything and not unclean and lai.leader == ctx.replicas(tp)[0]:
                results[tp] = (common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED, "")
            elif ctx.partition_state(tp) not in (PartitionState.ONLINE, PartitionState.OFFLINE):
                results[tp] = (
                    common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
                    f"{tp} is not online yet.",
                )
            else:
                chosen.append(tp)
        selector = LeaderSelector.OFFLINE_UNCLEAN if unclean else LeaderSelector.PREFERRED
        plan = await move_partitions(c, chosen, PartitionState.ONLINE, selector=selector)
        failed = {f.tp: f for f in plan.failures if f.replica == -1}
        for tp in chosen:
            f = failed.get(tp)
            if f is None or (f.code is FailureCode.COMMIT_FAILED and self._elected(tp, unclean)):
                results[tp] = (common_pb2.ERROR_CODE_NONE, "")
            elif f.election_error is not None:
                results[tp] = (ELECTION_ERROR_CODES[f.election_error], f.reason)
            else:
                results[tp] = (common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR, f.reason)
        if everything:  # "all partitions" reports only those where an election was due
            results = {
                tp: r
                for tp, r in results.items()
                if r[0] != common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED
            }
        log.info(
            "election %s (%s) for %d partitions",
            request_id,
            "unclean" if unclean else "preferred",
            len(tps),
        )
        await finish_intents(
            c,
            [
                IntentOutcome(
                    c.store.ks.election(request_id),
                    revision,
                    intent.request_id or request_id,
                    ELECTION,
                    tuple(
                        codec.partition_error(tp.topic, tp.partition, code, msg)
                        for tp, (code, msg) in sorted(results.items())
                    ),
                )
            ],
        )

    def _elected(self, tp: TopicPartition, unclean: bool) -> bool:
        ctx = self.c.ctx
        lai, a = ctx.leader_and_isr(tp), ctx.assignment(tp)
        if lai is None or a is None:
            return False
        return lai.has_leader if unclean else lai.leader == a.preferred_replica

    # ---- auto leader rebalance ---------------------------------------------------------------
    async def auto_rebalance(self) -> None:
        c = self.c
        if not c.view.auto_leader_rebalance_enable:
            return
        decision = decide_auto_rebalance(c.ctx, c.view.leader_imbalance_percentage)
        if not decision.partitions_to_elect:
            return
        log.info(
            "auto leader rebalance: preferred election for %s",
            ", ".join(map(str, decision.partitions_to_elect)),
        )
        await move_partitions(
            c,
            decision.partitions_to_elect,
            PartitionState.ONLINE,
            selector=LeaderSelector.PREFERRED,
        )

    def start_scheduler(self) -> None:
        """An AutoRebalance event ``rebalance_initial_delay_s`` after the failover, then every
        check interval."""
        self.stop()
        generation = self.c.generation
        self._scheduler = self.c.repeat(
            self.c.config.rebalance_initial_delay_s,
            self._interval,
            lambda: AutoRebalance(generation),
        )

    def _interval(self) -> float:
        override = self.c.config.rebalance_interval_s
        return override if override > 0 else float(self.c.view.leader_imbalance_interval_s)

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            self._scheduler = None
