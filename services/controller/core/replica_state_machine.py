"""The replica state machine's decisions (seed 000 section 5), KRaft style.

``decide_replica_changes`` reads the context, changes nothing, and returns a ``StateChangePlan``:

* NonExistent -> New: if the partition has a leader, LeaderAndIsr (is_new) to the replica; a
  replica cannot become New while it leads.
* New -> Online: the replica joins the assignment if missing (in memory).
  Online/Offline/Ineligible -> Online: if the partition has a leader, LeaderAndIsr to it.
* -> Offline: StopReplica(delete=False) to the replica; if it is in the ISR it is removed
  (leader -1 when it led; the ISR is never emptied, its last member stays so a clean election can
  wait for it) and the new state goes to the other assigned replicas unless the topic is being
  deleted. Electing a new leader is the partition machine's job. A partition without any
  leader/ISR state gets UpdateMetadata instead.
* Offline -> DeletionStarted: StopReplica(delete=True) to the replica.
* -> DeletionSuccessful / DeletionIneligible: only the state changes.
* DeletionSuccessful -> NonExistent: the replica leaves the assignment (in memory) and its state
  is dropped.

Illegal transitions become per-replica failures; the rest of the batch is unaffected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from services.controller.core.context import ControllerContext
from services.controller.core.model import NO_LEADER, PartitionReplica
from services.controller.core.plan import (
    FailureCode,
    LeaderAndIsrIntent,
    StateChangePlan,
    StopReplicaIntent,
    UpdateMetadataIntent,
)
from services.controller.core.plan_builder import PlanBuilder
from services.controller.core.states import ReplicaState, is_valid_transition

_DEFAULT_REASON = {
    ReplicaState.NEW: "new",
    ReplicaState.ONLINE: "online",
    ReplicaState.OFFLINE: "offline",
    ReplicaState.REPLICA_DELETION_STARTED: "deletion",
    ReplicaState.REPLICA_DELETION_SUCCESSFUL: "deletion",
    ReplicaState.REPLICA_DELETION_INELIGIBLE: "deletion",
    ReplicaState.NON_EXISTENT: "deletion",
}


def decide_replica_changes(
    ctx: ControllerContext,
    replicas: Iterable[PartitionReplica],
    target: ReplicaState,
    *,
    now_ms: int,
    reason: str | None = None,
    record_unchanged: bool = True,
) -> StateChangePlan:
    """Decide moving ``replicas`` to ``target``; see the module docstring.

    Replicas are handled grouped by broker, then partition (as Kafka groups by replica id).
    ``reason`` overrides the state-change log reason (e.g. "reassigned"). With
    ``record_unchanged`` False a replica already in ``target`` gets no state-change record (the
    failover's Online -> Online startup: tens of thousands of records that change nothing);
    everything else about its transition is the same.
    """
    b = PlanBuilder(ctx, now_ms)
    b.record_unchanged = record_unchanged
    log_reason = reason or _DEFAULT_REASON[target]
    # Looked up once per batch: a broker failure moves every replica the broker hosted.
    allowed_from = target.valid_previous_states
    state_of = ctx.replica_state
    for pr in _by_broker(replicas):
        current = state_of(pr)
        if current not in allowed_from:
            is_valid_transition(current, target)  # raises for a state of the other machine
            allowed = sorted(s.value for s in allowed_from)
            b.fail(
                pr.tp,
                pr.replica,
                current,
                target,
                FailureCode.INVALID_TRANSITION,
                f"replica {pr} is {current.value}, must be one of {allowed} "
                f"to move to {target.value}",
            )
        elif target is ReplicaState.NEW:
            _to_new(b, pr, current, log_reason)
        elif target is ReplicaState.ONLINE:
            _to_online(b, pr, current, log_reason)
        elif target is ReplicaState.OFFLINE:
            _to_offline(b, pr, current, log_reason)
        elif target is ReplicaState.REPLICA_DELETION_STARTED:
            b.request(StopReplicaIntent((pr.replica,), pr.tp, delete=True))
            b.replica_transition(pr, current, target, log_reason)
        elif target is ReplicaState.NON_EXISTENT:
            assignment = b.assignment(pr.tp)
            if assignment is not None:
                b.change_assignment(pr.tp, assignment.remove_replica(pr.replica))
            b.replica_transition(pr, current, target, log_reason)
        else:
            b.replica_transition(pr, current, target, log_reason)
    return b.build()


def _by_broker(replicas: Iterable[PartitionReplica]) -> list[PartitionReplica]:
    """Distinct replicas ordered by broker, then partition.

    Bucketed by broker first: callers usually pass replicas in partition order, so each bucket
    is already sorted and sorting it is linear, where one sort of 300,000 replicas by a
    (broker, partition) key took over a second.
    """
    buckets: dict[int, list[PartitionReplica]] = {}
    for pr in dict.fromkeys(replicas):
        bucket = buckets.get(pr.replica)
        if bucket is None:
            buckets[pr.replica] = bucket = []
        bucket.append(pr)
    return [pr for broker in sorted(buckets) for pr in sorted(buckets[broker])]


def _to_new(b: PlanBuilder, pr: PartitionReplica, current: ReplicaState, reason: str) -> None:
    lai = b.leader_and_isr(pr.tp)
    if lai is not None and lai.leader == pr.replica:
        b.fail(
            pr.tp,
            pr.replica,
            current,
            ReplicaState.NEW,
            FailureCode.REPLICA_IS_LEADER,
            f"replica {pr} cannot become New: it is the partition's leader",
        )
        return
    if lai is not None:
        b.request(LeaderAndIsrIntent((pr.replica,), pr.tp, is_new=True))
    b.replica_transition(pr, current, ReplicaState.NEW, reason)


def _to_online(b: PlanBuilder, pr: PartitionReplica, current: ReplicaState, reason: str) -> None:
    if current is ReplicaState.NEW:
        assignment = b.assignment(pr.tp)
        if assignment is not None and pr.replica not in assignment.replicas:
            b.change_assignment(pr.tp, assignment.add_replica(pr.replica))
    elif b.leader_and_isr(pr.tp) is not None:
        b.request(LeaderAndIsrIntent((pr.replica,), pr.tp, is_new=False))
    b.replica_transition(pr, current, ReplicaState.ONLINE, reason)


def _to_offline(b: PlanBuilder, pr: PartitionReplica, current: ReplicaState, reason: str) -> None:
    target = ReplicaState.OFFLINE
    tp, r = pr
    ctx = b.ctx
    b.request(StopReplicaIntent((r,), tp, delete=False))
    working = b.leader_and_isr(tp)
    if working is None:
        b.request(UpdateMetadataIntent(tuple(sorted(ctx.live_or_shutting_down_broker_ids)), (tp,)))
        b.replica_transition(pr, current, target, reason)
        return
    committed = b.committed_leader_and_isr(tp)
    if committed is not None and committed.controller_epoch > ctx.controller_epoch:
        b.fail(
            tp,
            r,
            current,
            target,
            FailureCode.STALE_CONTROLLER_EPOCH,
            f"{tp} state was written by controller epoch {committed.controller_epoch}, "
            f"newer than ours ({ctx.controller_epoch})",
        )
        return
    isr = working.isr
    if r in isr:
        new_isr = isr if len(isr) == 1 else tuple([i for i in isr if i != r])
        new_leader = NO_LEADER if working.leader == r else working.leader
        if (new_leader, new_isr) != (working.leader, isr):
            # One write per partition per batch: the epoch moves once past the committed one.
            base_epoch = committed.leader_epoch if committed is not None else working.leader_epoch
            b.write(
                tp,
                replace(working, leader=new_leader, isr=new_isr, leader_epoch=base_epoch + 1),
                create=False,
            )
            state = ctx.partition_state(tp).value
            b.partition_record(tp, state, state, "isr_shrink")
    if not ctx.is_topic_queued_for_deletion(tp.topic):
        assignment = b.assignment(tp)
        others = tuple([x for x in assignment.replicas if x != r]) if assignment else ()
        b.request(LeaderAndIsrIntent(others, tp, is_new=False))
    b.replica_transition(pr, current, target, reason)
