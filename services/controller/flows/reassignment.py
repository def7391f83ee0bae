"""Partition reassignment: the OAR/RAR steps of seed 002 with KIP-455's adding/removing sets.

For OAR = {1,2,3} -> RAR = {4,5,6} the assignment (AR) and leader/ISR go through seed 002's table:

    AR {1,2,3}        1/{1,2,3}   initial
    AR {1,2,3,4,5,6}  1/{1,2,3}   start: state (epoch+1, adding/removing) then AR written
    AR {1,2,3,4,5,6}  1/{1,..,6}  the new replicas caught up (AlterPartition from the leader)
    AR {1,2,3,4,5,6}  4/{1,..,6}  leader moved into RAR (reassigned selector)
    AR {1,2,3,4,5,6}  4/{4,5,6}   OAR - RAR offline: out of the ISR, stopped and deleted
    AR {4,5,6}        4/{4,5,6}   AR written last; result written and intent deleted together

AR is written last so a controller crash anywhere recovers: the intent stays until the end, AR
still holds OAR + RAR, and the state key's adding set restores the origin (see ``codec``).
Cancellation (KIP-455) reassigns back to the origin replicas, stopping the ones being added.
Moving replicas are throttled (KIP-73) while they copy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import (
    LeaderAndIsrIntent,
    LeaderSelector,
    PartitionReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from services.controller.core.plan_builder import PlanBuilder
from services.controller.core.reassignment import (
    LeaderStep,
    ReassignmentRequestView,
    Step,
    completion_leader_step,
    is_complete,
    next_step,
)
from services.controller.events import ReassignmentRequest
from services.controller.flows import throttles
from services.controller.flows.common import (
    IntentOutcome,
    finish_intents,
    intent_span,
    move_partitions,
    move_replicas,
)

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

log = logging.getLogger(__name__)

REASSIGN = metadata_pb2.ADMIN_OPERATION_REASSIGNMENT
RS = ReplicaState


class ReassignmentManager:
    def __init__(self, c: FlowContext) -> None:
        self.c = c

    # ---- requests ----------------------------------------------------------------------------
    async def on_intents(self, event: ReassignmentRequest) -> None:
        intents = [u for u in event.updates if u.intent is not None]
        contexts = [u.intent.trace_context for u in intents]
        with intent_span("controller.reassignment", contexts, partition_count=len(intents)):
            await self._start([u.tp for u in intents])

    async def resume_all(self) -> None:
        """Failover: every intent, plus reassignments recorded in etcd without one."""
        ctx = self.c.ctx
        await self._start(
            sorted(set(self.c.view.reassignments) | set(ctx.partitions_being_reassigned()))
        )

    async def resume_where(self, pred: Callable[[ReplicaAssignment], bool]) -> None:
        ctx = self.c.ctx
        tps = [tp for tp in ctx.partitions_being_reassigned() if pred(ctx.assignment(tp))]
        if tps:
            await self._start(tps)

    def _request(self, tp: TopicPartition) -> ReassignmentRequestView | None:
        entry = self.c.view.reassignments.get(tp)
        if entry is None:
            return None
        intent = entry[0]
        return ReassignmentRequestView(tuple(intent.target_replicas), intent.cancel)

    async def _start(self, tps: Iterable[TopicPartition]) -> None:
        """Kafka's onPartitionReassignment for many partitions at once, batched per step."""
        c = self.c
        ctx = c.ctx
        answered: list[IntentOutcome] = []
        moves: dict[TopicPartition, ReplicaAssignment] = {}
        complete: dict[TopicPartition, ReplicaAssignment] = {}
        unneeded: list[PartitionReplica] = []
        for tp in tps:
            d = next_step(
                tp,
                ctx.assignment(tp),
                ctx.leader_and_isr(tp),
                self._request(tp),
                deleting=ctx.is_topic_queued_for_deletion(tp.topic),
            )
            if d.step is Step.REJECT or d.step is Step.ALREADY_THERE:
                answered.append(self._outcome(tp, d.error_code, d.message))
                continue
            assert d.assignment is not None
            moves[tp] = d.assignment
            if d.step is Step.COMPLETE:
                complete[tp] = d.assignment
            unneeded += [PartitionReplica(tp, r) for r in d.unneeded]
        await finish_intents(c, answered)
        if not moves:
            return
        pending = {tp: a for tp, a in moves.items() if tp not in complete}
        # U + A1: record the new assignment (state first, AR second) with a leader-epoch bump and
        # tell every replica of OAR + RAR.
        b = PlanBuilder(ctx, c.now_ms())
        for tp, a in moves.items():
            b.change_assignment(tp, a)
        for tp, a in pending.items():
            lai = ctx.leader_and_isr(tp)
            b.write(tp, lai.new_leader_and_isr(lai.leader, lai.isr), create=False)
            b.request(LeaderAndIsrIntent(a.replicas, tp))
            state = ctx.partition_state(tp).value
            b.partition_record(tp, state, state, "reassigning")
        await c.execute(b.build())
        await self._write_ar({tp: a.replicas for tp, a in pending.items()})
        # Replicas no longer wanted by a redirected or cancelled reassignment are stopped.
        await self._stop_replicas(unneeded)
        # A2: the replicas being added start as NewReplica (LeaderAndIsr is_new).
        adding = [
            PartitionReplica(tp, r)
            for tp, a in pending.items()
            for r in a.adding
            if ctx.replica_state(PartitionReplica(tp, r)) is RS.NON_EXISTENT
        ]
        await move_replicas(c, adding, RS.NEW, reason="reassigned")
        await self._throttle({tp: (a.origin_replicas, a.adding) for tp, a in pending.items()})
        if complete:
            await self._complete(complete)

    async def check_completion(self, tps: Iterable[TopicPartition]) -> None:
        """After an ISR change: finish the reassignments whose new replicas are all in sync."""
        ctx = self.c.ctx
        done = {}
        for tp in tps:
            a = ctx.assignment(tp)
            if a is not None and a.is_being_reassigned and is_complete(a, ctx.leader_and_isr(tp)):
                done[tp] = a
        if done:
            await self._complete(done)

    # ---- completion (steps B1-B8) ------------------------------------------------------------
    async def _complete(self, moves: Mapping[TopicPartition, ReplicaAssignment]) -> None:
        c = self.c
        ctx = c.ctx
        log.info("completing reassignment of %s", ", ".join(map(str, moves)))
        # B1: the added replicas are online.
        added = [PartitionReplica(tp, r) for tp, a in moves.items() for r in a.adding]
        await move_replicas(c, added, RS.ONLINE, reason="reassigned")
        # B2: AR = RAR in memory.
        b = PlanBuilder(ctx, c.now_ms())
        for tp, a in moves.items():
            b.change_assignment(tp, ReplicaAssignment(a.target_replicas))
        await c.execute(b.build())
        # B3: a new leader from RAR if the current one is leaving or down; else an epoch bump.
        elect, bump = [], []
        for tp, a in moves.items():
            online = ctx.replica_online_check(tp)
            step = completion_leader_step(a, ctx.leader_and_isr(tp), online)
            (elect if step is LeaderStep.ELECT else bump).append(tp)
        await move_partitions(c, elect, PartitionState.ONLINE, selector=LeaderSelector.REASSIGNED)
        b = PlanBuilder(ctx, c.now_ms())
        for tp in bump:
            lai = ctx.leader_and_isr(tp)
            b.write(tp, lai.new_leader_and_isr(lai.leader, lai.isr), create=False)
            b.request(LeaderAndIsrIntent(ctx.replicas(tp), tp))
            state = ctx.partition_state(tp).value
            b.partition_record(tp, state, state, "reassigned")
        await c.execute(b.build())
        # B4/B5: OAR - RAR out of the ISR, stopped and deleted.
        removing = [PartitionReplica(tp, r) for tp, a in moves.items() for r in a.removing]
        await self._stop_replicas(removing)
        # B6: AR = RAR in etcd, last. B7: throttles off, result written, intent deleted.
        await self._write_ar({tp: a.target_replicas for tp, a in moves.items()})
        await self._throttle({tp: ((), ()) for tp in moves})
        await finish_intents(c, [self._outcome(tp, 0, "") for tp in moves])
        # B8: every broker learns the new replicas; deletion may resume for these topics.
        c.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, list(moves))
        await c.flows.deletion.resume_for(sorted({tp.topic for tp in moves}))

    async def _stop_replicas(self, replicas: list[PartitionReplica]) -> None:
        c = self.c
        await move_replicas(c, replicas, RS.OFFLINE, reason="reassigned")
        await move_replicas(c, replicas, RS.REPLICA_DELETION_STARTED, reason="reassigned")
        await move_replicas(c, replicas, RS.REPLICA_DELETION_SUCCESSFUL, reason="reassigned")
        await move_replicas(c, replicas, RS.NON_EXISTENT, reason="reassigned")

    # ---- etcd side effects -------------------------------------------------------------------
    async def _write_ar(self, replicas: Mapping[TopicPartition, tuple[int, ...]]) -> None:
        """Compare-and-set the topic keys' replica lists (admin may add partitions meanwhile)."""
        by_topic: dict[str, dict[int, tuple[int, ...]]] = {}
        for tp, r in replicas.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = r

        def updater(changes: dict[int, tuple[int, ...]]):
            def update(old: bytes | None) -> bytes | None:
                if old is None:
                    return None  # the topic is gone
                return codec.encode_topic_with(codec.decode_topic(old), changes)

            return update

        ks = self.c.store.ks
        await self.c.store.read_modify_write(
            {ks.topic(t): updater(ch) for t, ch in by_topic.items()}
        )

    async def _throttle(
        self, changes: Mapping[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]]
    ) -> None:
        by_topic: dict[str, dict[int, tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        for tp, ch in changes.items():
            by_topic.setdefault(tp.topic, {})[tp.partition] = ch
        ks = self.c.store.ks
        await self.c.store.read_modify_write(
            {ks.topic_config(t): throttles.config_updater(ch) for t, ch in by_topic.items()}
        )

    def _outcome(self, tp: TopicPartition, code: int, message: str) -> IntentOutcome:
        entry = self.c.view.reassignments.get(tp)
        key = self.c.store.ks.reassignment(tp.topic, tp.partition)
        if entry is None:
            return IntentOutcome(key, 0, f"reassign-{tp}", REASSIGN, ())
        intent, revision = entry
        return IntentOutcome(
            key,
            revision,
            intent.request_id or f"reassign-{tp}",
            REASSIGN,
            (codec.partition_error(tp.topic, tp.partition, code, message),),
        )
