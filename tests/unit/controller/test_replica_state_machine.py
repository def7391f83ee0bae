"""Replica state machine plans: every transition, ISR removal on Offline, deletion requests."""

from __future__ import annotations

import itertools

import pytest

from leasehold.statechange import StateChangeRecord
from services.controller.core import (
    AssignmentChange,
    FailureCode,
    LeaderAndIsr,
    LeaderAndIsrIntent,
    PartitionReplica,
    PartitionState,
    PartitionStateWrite,
    ReplicaAssignment,
    ReplicaState,
    ReplicaTransition,
    StateChangePlan,
    StopReplicaIntent,
    TopicPartition,
    UpdateMetadataIntent,
    decide_replica_changes,
)

R = ReplicaState
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
NOW = 1_000
EPOCH = 5


def pr(replica: int, tp: TopicPartition = T0) -> PartitionReplica:
    return PartitionReplica(tp, replica)


def rec(kind, tp, replica, src, dst, lai: LeaderAndIsr | None, reason) -> StateChangeRecord:
    return StateChangeRecord(
        ts_ms=NOW,
        kind=kind,
        controller_id=100,
        controller_epoch=EPOCH,
        topic=tp.topic,
        partition=tp.partition,
        replica=replica,
        from_state=src,
        to_state=dst,
        leader=lai.leader if lai else -1,
        leader_epoch=lai.leader_epoch if lai else -1,
        isr=lai.isr if lai else (),
        reason=reason,
    )


LEGAL = {
    (R.NON_EXISTENT, R.NEW),
    (R.NEW, R.ONLINE),
    (R.ONLINE, R.ONLINE),
    (R.OFFLINE, R.ONLINE),
    (R.REPLICA_DELETION_INELIGIBLE, R.ONLINE),
    (R.NEW, R.OFFLINE),
    (R.ONLINE, R.OFFLINE),
    (R.OFFLINE, R.OFFLINE),
    (R.REPLICA_DELETION_INELIGIBLE, R.OFFLINE),
    (R.OFFLINE, R.REPLICA_DELETION_STARTED),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_SUCCESSFUL),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_INELIGIBLE),
    (R.OFFLINE, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(R, R)))
def test_every_transition_through_the_machine(make_ctx, src, dst) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: LeaderAndIsr(1, 7, (1, 3), 4, 42)},
        replica_states={pr(2): src},
    )
    plan = decide_replica_changes(ctx, [pr(2)], dst, now_ms=NOW)
    if (src, dst) in LEGAL:
        assert plan.failures == ()
        assert plan.replica_transitions == (ReplicaTransition(pr(2), src, dst),)
    else:
        assert [(f.tp, f.replica, f.from_state, f.to_state, f.code) for f in plan.failures] == [
            (T0, 2, src, dst, FailureCode.INVALID_TRANSITION)
        ]
        assert plan.is_empty and plan.records == ()


OFFLINE_CASES = [
    pytest.param(
        LeaderAndIsr(1, 7, (1, 2, 3), 4, 42),
        3,
        LeaderAndIsr(1, 8, (1, 2), EPOCH, 42),
        (1, 2),
        id="follower-leaves-isr",
    ),
    pytest.param(
        LeaderAndIsr(1, 7, (1, 2, 3), 4, 42),
        1,
        LeaderAndIsr(-1, 8, (2, 3), EPOCH, 42),
        (2, 3),
        id="leader-leaves-isr-and-leadership",
    ),
    pytest.param(
        LeaderAndIsr(1, 7, (1,), 4, 42),
        1,
        LeaderAndIsr(-1, 8, (1,), EPOCH, 42),
        (2, 3),
        id="last-isr-member-stays-in-isr",
    ),
    pytest.param(
        LeaderAndIsr(1, 7, (1, 2), 4, 42),
        3,
        None,
        (1, 2),
        id="not-in-isr-no-write",
    ),
]


@pytest.mark.parametrize(("current", "replica", "written", "told"), OFFLINE_CASES)
def test_online_to_offline(make_ctx, current, replica, written, told) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: current},
        partition_states={T0: PartitionState.ONLINE},
        replica_states={pr(replica): R.ONLINE},
    )
    plan = decide_replica_changes(ctx, [pr(replica)], R.OFFLINE, now_ms=NOW)
    shown = written or current
    records = (rec("replica", T0, replica, "OnlineReplica", "OfflineReplica", shown, "offline"),)
    if written is not None:
        online = "OnlinePartition"
        records = (rec("partition", T0, -1, online, online, written, "isr_shrink"), *records)
    assert plan == StateChangePlan(
        controller_epoch=EPOCH,
        writes=(
            (PartitionStateWrite(T0, written, 42, False, ReplicaAssignment((1, 2, 3))),)
            if written
            else ()
        ),
        replica_transitions=(ReplicaTransition(pr(replica), R.ONLINE, R.OFFLINE),),
        requests=(
            StopReplicaIntent((replica,), T0, delete=False),
            LeaderAndIsrIntent(told, T0, is_new=False),
        ),
        records=records,
    )


def test_two_replicas_of_one_partition_offline_share_one_write(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: LeaderAndIsr(1, 7, (1, 2, 3), 4, 42)},
        replica_states={pr(1): R.ONLINE, pr(2): R.ONLINE},
    )
    plan = decide_replica_changes(ctx, [pr(2), pr(1)], R.OFFLINE, now_ms=NOW)
    assert plan.writes == (
        PartitionStateWrite(
            T0, LeaderAndIsr(-1, 8, (3,), EPOCH, 42), 42, False, ReplicaAssignment((1, 2, 3))
        ),
    )
    assert plan.requests == (
        StopReplicaIntent((1,), T0, delete=False),
        LeaderAndIsrIntent((2, 3), T0),
        StopReplicaIntent((2,), T0, delete=False),
        LeaderAndIsrIntent((1, 3), T0),
    )
    assert [(r.kind, r.replica, r.leader, r.leader_epoch, r.isr) for r in plan.records] == [
        ("partition", -1, -1, 8, (2, 3)),
        ("replica", 1, -1, 8, (2, 3)),
        ("partition", -1, -1, 8, (3,)),
        ("replica", 2, -1, 8, (3,)),
    ]


def test_offline_of_deleting_topic_tells_nobody_else(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2)},
        leadership={T0: LeaderAndIsr(1, 7, (1, 2), 4, 42)},
        replica_states={pr(2): R.ONLINE},
        deleting=("t",),
    )
    plan = decide_replica_changes(ctx, [pr(2)], R.OFFLINE, now_ms=NOW)
    assert plan.requests == (StopReplicaIntent((2,), T0, delete=False),)
    assert [w.leader_and_isr for w in plan.writes] == [LeaderAndIsr(1, 8, (1,), EPOCH, 42)]


def test_offline_without_leader_state_sends_metadata(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2)}, brokers=(1, 2, 4), replica_states={pr(2): R.NEW})
    plan = decide_replica_changes(ctx, [pr(2)], R.OFFLINE, now_ms=NOW)
    assert plan.writes == ()
    assert plan.requests == (
        StopReplicaIntent((2,), T0, delete=False),
        UpdateMetadataIntent((1, 2, 4), (T0,)),
    )
    assert plan.replica_transitions == (ReplicaTransition(pr(2), R.NEW, R.OFFLINE),)


def test_offline_against_newer_controller_state_fails(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2)},
        leadership={T0: LeaderAndIsr(1, 7, (1, 2), 9, 42)},
        replica_states={pr(2): R.ONLINE},
    )
    plan = decide_replica_changes(ctx, [pr(2)], R.OFFLINE, now_ms=NOW)
    assert [(f.replica, f.code) for f in plan.failures] == [(2, FailureCode.STALE_CONTROLLER_EPOCH)]
    assert plan.writes == () and plan.replica_transitions == ()


@pytest.mark.parametrize(
    ("leadership", "replica", "requests", "code"),
    [
        pytest.param(
            {T0: LeaderAndIsr(1, 7, (1,), 4, 42)},
            4,
            (LeaderAndIsrIntent((4,), T0, is_new=True),),
            None,
            id="follows-current-leader",
        ),
        pytest.param(None, 4, (), None, id="no-leader-yet"),
        pytest.param(
            {T0: LeaderAndIsr(4, 7, (4,), 4, 42)},
            4,
            (),
            FailureCode.REPLICA_IS_LEADER,
            id="leader-cannot-be-new",
        ),
    ],
)
def test_to_new(make_ctx, leadership, replica, requests, code) -> None:
    ctx = make_ctx(assignments={T0: (1, 2)}, leadership=leadership)
    plan = decide_replica_changes(ctx, [pr(replica)], R.NEW, now_ms=NOW)
    assert plan.requests == requests
    assert [f.code for f in plan.failures] == ([code] if code else [])
    assert plan.replica_transitions == (
        () if code else (ReplicaTransition(pr(replica), R.NON_EXISTENT, R.NEW),)
    )


@pytest.mark.parametrize(
    ("src", "leadership", "replica", "requests", "assignment_changes"),
    [
        pytest.param(
            R.NEW,
            None,
            4,
            (),
            (AssignmentChange(T0, ReplicaAssignment((1, 2, 4))),),
            id="new-replica-joins-assignment",
        ),
        pytest.param(
            R.NEW, {T0: LeaderAndIsr(1, 7, (1,), 4, 42)}, 2, (), (), id="new-already-assigned"
        ),
        pytest.param(
            R.OFFLINE,
            {T0: LeaderAndIsr(1, 7, (1,), 4, 42)},
            2,
            (LeaderAndIsrIntent((2,), T0),),
            (),
            id="restarted-replica-told-leader",
        ),
        pytest.param(R.OFFLINE, None, 2, (), (), id="never-online-partition"),
        pytest.param(
            R.REPLICA_DELETION_INELIGIBLE,
            {T0: LeaderAndIsr(1, 7, (1,), 4, 42)},
            2,
            (LeaderAndIsrIntent((2,), T0),),
            (),
            id="ineligible-back-online",
        ),
    ],
)
def test_to_online(make_ctx, src, leadership, replica, requests, assignment_changes) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2)}, leadership=leadership, replica_states={pr(replica): src}
    )
    plan = decide_replica_changes(ctx, [pr(replica)], R.ONLINE, now_ms=NOW)
    assert plan.requests == requests
    assert plan.assignment_changes == assignment_changes
    assert plan.writes == () and plan.failures == ()


def test_deletion_walk(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2)},
        leadership={T0: LeaderAndIsr(1, 7, (1, 2), 4, 42)},
        replica_states={pr(1): R.OFFLINE, pr(2): R.OFFLINE},
        deleting=("t",),
    )
    started = decide_replica_changes(ctx, [pr(1), pr(2)], R.REPLICA_DELETION_STARTED, now_ms=NOW)
    assert started.requests == (
        StopReplicaIntent((1,), T0, delete=True),
        StopReplicaIntent((2,), T0, delete=True),
    )
    assert [(r.replica, r.to_state, r.reason) for r in started.records] == [
        (1, "ReplicaDeletionStarted", "deletion"),
        (2, "ReplicaDeletionStarted", "deletion"),
    ]
    ctx.apply_plan(started)
    for target in (R.REPLICA_DELETION_INELIGIBLE, R.REPLICA_DELETION_SUCCESSFUL):
        plan = decide_replica_changes(ctx, [pr(1)], target, now_ms=NOW)
        assert plan.requests == () and plan.writes == () and plan.failures == ()
        assert plan.replica_transitions == (
            ReplicaTransition(pr(1), R.REPLICA_DELETION_STARTED, target),
        )
    ctx.apply_plan(
        decide_replica_changes(ctx, [pr(1), pr(2)], R.REPLICA_DELETION_SUCCESSFUL, now_ms=NOW)
    )
    gone = decide_replica_changes(ctx, [pr(2), pr(1)], R.NON_EXISTENT, now_ms=NOW)
    assert gone.assignment_changes == (AssignmentChange(T0, ReplicaAssignment(())),)
    ctx.apply_plan(gone)
    assert ctx.replicas(T0) == ()
    assert ctx.replicas_in_state("t", *R) == ()


def test_dead_replica_goes_offline_to_ineligible(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2)}, replica_states={pr(2): R.OFFLINE})
    plan = decide_replica_changes(ctx, [pr(2)], R.REPLICA_DELETION_INELIGIBLE, now_ms=NOW)
    assert plan.replica_transitions == (
        ReplicaTransition(pr(2), R.OFFLINE, R.REPLICA_DELETION_INELIGIBLE),
    )


def test_grouped_by_broker_then_partition_with_reason_override(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2), T1: (1, 2)})
    plan = decide_replica_changes(
        ctx, [pr(2, T0), pr(1, T1), pr(1, T0)], R.NEW, now_ms=NOW, reason="reassigned"
    )
    assert [(t.replica.replica, t.replica.tp) for t in plan.replica_transitions] == [
        (1, T0),
        (1, T1),
        (2, T0),
    ]
    assert {r.reason for r in plan.records} == {"reassigned"}
