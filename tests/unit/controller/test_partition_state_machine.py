"""Partition state machine plans: every transition, each selector, exact writes/requests/records."""

from __future__ import annotations

import itertools

import pytest

from leasehold.statechange import StateChangeRecord
from services.controller.core import (
    ElectionError,
    FailureCode,
    LeaderAndIsr,
    LeaderAndIsrIntent,
    LeaderSelector,
    PartitionState,
    PartitionStateWrite,
    PartitionTransition,
    ReplicaAssignment,
    StateChangePlan,
    TopicPartition,
    decide_partition_changes,
    decide_trigger_online,
    partitions_to_trigger_online,
)

P = PartitionState
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
NOW = 1_000
EPOCH = 5  # the context's controller epoch (conftest)


def rec(tp, src, dst, leader, leader_epoch, isr, reason) -> StateChangeRecord:
    return StateChangeRecord(
        ts_ms=NOW,
        kind="partition",
        controller_id=100,
        controller_epoch=EPOCH,
        topic=tp.topic,
        partition=tp.partition,
        from_state=src.value,
        to_state=dst.value,
        leader=leader,
        leader_epoch=leader_epoch,
        isr=tuple(isr),
        reason=reason,
    )


LEGAL = {
    (P.NON_EXISTENT, P.NEW),
    (P.NEW, P.ONLINE),
    (P.ONLINE, P.ONLINE),
    (P.OFFLINE, P.ONLINE),
    (P.NEW, P.OFFLINE),
    (P.ONLINE, P.OFFLINE),
    (P.OFFLINE, P.OFFLINE),
    (P.OFFLINE, P.NON_EXISTENT),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(P, P)))
def test_every_transition_through_the_machine(make_ctx, src, dst) -> None:
    has_state = src in (P.ONLINE, P.OFFLINE)
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: LeaderAndIsr(2, 7, (2, 3), 4, 42)} if has_state else None,
        partition_states={T0: src},
    )
    plan = decide_partition_changes(ctx, [T0], dst, now_ms=NOW, selector=LeaderSelector.OFFLINE)
    if (src, dst) in LEGAL:
        assert plan.failures == ()
        assert plan.partition_transitions == (PartitionTransition(T0, src, dst),)
    else:
        assert [(f.tp, f.replica, f.from_state, f.to_state, f.code) for f in plan.failures] == [
            (T0, -1, src, dst, FailureCode.INVALID_TRANSITION)
        ]
        assert plan.is_empty and plan.records == () and plan.writes == ()


def test_new_to_online_initializes_leader_and_isr(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (3, 1, 2)}, brokers=(1, 2), partition_states={T0: P.NEW})
    plan = decide_partition_changes(
        ctx, [T0], P.ONLINE, now_ms=NOW, selector=LeaderSelector.OFFLINE
    )
    written = LeaderAndIsr(1, 0, (1, 2), EPOCH, 0, False)
    assert plan == StateChangePlan(
        controller_epoch=EPOCH,
        writes=(PartitionStateWrite(T0, written, 0, True, ReplicaAssignment((3, 1, 2))),),
        partition_transitions=(PartitionTransition(T0, P.NEW, P.ONLINE),),
        requests=(LeaderAndIsrIntent((1, 2), T0, is_new=True),),
        records=(rec(T0, P.NEW, P.ONLINE, 1, 0, (1, 2), "new"),),
    )


@pytest.mark.parametrize(
    ("brokers", "shutting_down", "offline_dirs", "leader", "isr"),
    [
        ((1, 2, 3), (), {}, 1, (1, 2, 3)),
        ((1, 2, 3), (1,), {}, 2, (2, 3)),  # KIP-841: shutting down never joins the ISR
        ((1, 2, 3), (), {1: [T0]}, 2, (2, 3)),  # replica on a failed log dir is not online
        ((3,), (), {}, 3, (3,)),
    ],
)
def test_new_to_online_uses_online_replicas_only(
    make_ctx, brokers, shutting_down, offline_dirs, leader, isr
) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        brokers=brokers,
        shutting_down=shutting_down,
        offline_dirs=offline_dirs,
        partition_states={T0: P.NEW},
    )
    plan = decide_partition_changes(
        ctx, [T0], P.ONLINE, now_ms=NOW, selector=LeaderSelector.OFFLINE
    )
    assert [(w.leader_and_isr.leader, w.leader_and_isr.isr) for w in plan.writes] == [(leader, isr)]
    assert plan.requests == (LeaderAndIsrIntent(isr, T0, is_new=True),)


@pytest.mark.parametrize(
    ("brokers", "leadership", "code"),
    [
        ((), None, FailureCode.NO_LIVE_REPLICA),
        ((7,), None, FailureCode.NO_LIVE_REPLICA),
        ((1, 2, 3), {T0: LeaderAndIsr(1, 0, (1,), 4, 9)}, FailureCode.STATE_ALREADY_EXISTS),
    ],
)
def test_new_to_online_failures(make_ctx, brokers, leadership, code) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        brokers=brokers,
        leadership=leadership,
        partition_states={T0: P.NEW},
    )
    plan = decide_partition_changes(
        ctx, [T0], P.ONLINE, now_ms=NOW, selector=LeaderSelector.OFFLINE
    )
    assert [(f.from_state, f.to_state, f.code) for f in plan.failures] == [(P.NEW, P.ONLINE, code)]
    assert plan.is_empty


CURRENT = LeaderAndIsr(1, 7, (1, 2, 3), 4, 42)

ELECTION_CASES = [
    pytest.param(
        dict(brokers=(2, 3)),
        P.OFFLINE,
        LeaderSelector.OFFLINE,
        CURRENT,
        LeaderAndIsr(2, 8, (2, 3), EPOCH, 42),
        (2, 3),
        "offline",
        id="offline-clean",
    ),
    pytest.param(
        dict(brokers=(1, 2, 3), shutting_down=(1, 2)),
        P.OFFLINE,
        LeaderSelector.OFFLINE,
        CURRENT,
        LeaderAndIsr(3, 8, (3,), EPOCH, 42),
        (3,),
        "offline",
        id="offline-kip841-shutting-down-leave-isr",
    ),
    pytest.param(
        dict(brokers=(2, 3), configs={"t": {"unclean.leader.election.enable": "true"}}),
        P.OFFLINE,
        LeaderSelector.OFFLINE,
        LeaderAndIsr(1, 7, (1,), 4, 42),
        LeaderAndIsr(2, 8, (2,), EPOCH, 42, recovering=True),
        (2, 3),
        "unclean",
        id="offline-unclean-topic-config",
    ),
    pytest.param(
        dict(brokers=(2, 3), unclean_default=True),
        P.OFFLINE,
        LeaderSelector.OFFLINE,
        LeaderAndIsr(1, 7, (1,), 4, 42),
        LeaderAndIsr(2, 8, (2,), EPOCH, 42, recovering=True),
        (2, 3),
        "unclean",
        id="offline-unclean-cluster-default",
    ),
    pytest.param(
        dict(brokers=(2, 3), configs={"t": {"unclean.leader.election.enable": "False"}}),
        P.OFFLINE,
        LeaderSelector.OFFLINE_UNCLEAN,
        LeaderAndIsr(1, 7, (1,), 4, 42),
        LeaderAndIsr(2, 8, (2,), EPOCH, 42, recovering=True),
        (2, 3),
        "unclean",
        id="forced-unclean-ignores-topic-config",
    ),
    pytest.param(
        dict(brokers=(2, 3)),
        P.OFFLINE,
        LeaderSelector.OFFLINE_UNCLEAN,
        CURRENT,
        LeaderAndIsr(2, 8, (2, 3), EPOCH, 42),
        (2, 3),
        "offline",
        id="forced-unclean-prefers-clean-leader",
    ),
    pytest.param(
        dict(brokers=(1, 2, 3)),
        P.ONLINE,
        LeaderSelector.PREFERRED,
        LeaderAndIsr(2, 7, (1, 2, 3), 4, 42),
        LeaderAndIsr(1, 8, (1, 2, 3), EPOCH, 42),
        (1, 2, 3),
        "preferred",
        id="preferred",
    ),
    pytest.param(
        dict(
            brokers=(1, 2, 4, 5),
            assignments={T0: ReplicaAssignment((4, 5, 1, 2), (4, 5), (1, 2))},
        ),
        P.ONLINE,
        LeaderSelector.REASSIGNED,
        LeaderAndIsr(1, 7, (1, 2, 4, 5), 4, 42),
        LeaderAndIsr(4, 8, (1, 2, 4, 5), EPOCH, 42),
        (4, 5),
        "reassigned",
        id="reassigned-uses-target-replicas",
    ),
    pytest.param(
        dict(brokers=(1, 2, 3), shutting_down=(1,)),
        P.ONLINE,
        LeaderSelector.CONTROLLED_SHUTDOWN,
        CURRENT,
        LeaderAndIsr(2, 8, (2, 3), EPOCH, 42),
        (1, 2, 3),
        "controlled_shutdown",
        id="controlled-shutdown",
    ),
    pytest.param(
        dict(brokers=(1, 2, 3)),
        P.ONLINE,
        LeaderSelector.NO_OP,
        CURRENT,
        LeaderAndIsr(1, 7, (1, 2, 3), EPOCH, 42),
        (1, 2, 3),
        "noop",
        id="noop-from-older-controller-restamps",
    ),
]


@pytest.mark.parametrize(
    ("ctx_args", "src", "selector", "current", "written", "recipients", "reason"), ELECTION_CASES
)
def test_election_plans(make_ctx, ctx_args, src, selector, current, written, recipients, reason):
    args = {"assignments": {T0: (1, 2, 3)}, **ctx_args}
    ctx = make_ctx(leadership={T0: current}, partition_states={T0: src}, **args)
    plan = decide_partition_changes(ctx, [T0], P.ONLINE, now_ms=NOW, selector=selector)
    assert plan == StateChangePlan(
        controller_epoch=EPOCH,
        writes=(PartitionStateWrite(T0, written, 42, False, ctx.assignment(T0)),),
        partition_transitions=(PartitionTransition(T0, src, P.ONLINE),),
        requests=(LeaderAndIsrIntent(recipients, T0, is_new=False),),
        records=(
            rec(T0, src, P.ONLINE, written.leader, written.leader_epoch, written.isr, reason),
        ),
    )


def test_noop_with_current_epoch_writes_nothing(make_ctx) -> None:
    current = LeaderAndIsr(1, 7, (1, 2, 3), EPOCH, 42)
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)}, leadership={T0: current}, partition_states={T0: P.ONLINE}
    )
    plan = decide_partition_changes(ctx, [T0], P.ONLINE, now_ms=NOW, selector=LeaderSelector.NO_OP)
    assert plan.writes == ()
    assert plan.requests == (LeaderAndIsrIntent((1, 2, 3), T0),)
    assert plan.partition_transitions == (PartitionTransition(T0, P.ONLINE, P.ONLINE),)


@pytest.mark.parametrize(
    ("ctx_args", "selector", "current", "code", "election_error"),
    [
        pytest.param(
            dict(brokers=(2, 3)),
            LeaderSelector.OFFLINE,
            LeaderAndIsr(1, 7, (1,), 4, 42),
            FailureCode.ELECTION_FAILED,
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            id="unclean-disabled",
        ),
        pytest.param(
            dict(brokers=(), unclean_default=True),
            LeaderSelector.OFFLINE,
            CURRENT,
            FailureCode.ELECTION_FAILED,
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            id="all-replicas-dead",
        ),
        pytest.param(
            dict(brokers=(2,), shutting_down=(2,), unclean_default=True),
            LeaderSelector.OFFLINE,
            LeaderAndIsr(3, 7, (3,), 4, 42),
            FailureCode.ELECTION_FAILED,
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            id="unclean-cannot-pick-dead-or-shutting-down",
        ),
        pytest.param(
            dict(brokers=(1, 2, 3)),
            LeaderSelector.PREFERRED,
            CURRENT,
            FailureCode.ELECTION_FAILED,
            ElectionError.ELECTION_NOT_NEEDED,
            id="preferred-already-leads",
        ),
        pytest.param(
            dict(brokers=(1, 2, 3)),
            LeaderSelector.OFFLINE,
            LeaderAndIsr(1, 7, (1,), 6, 42),
            FailureCode.STALE_CONTROLLER_EPOCH,
            None,
            id="state-written-by-newer-controller",
        ),
        pytest.param(
            dict(brokers=(1, 2, 3)),
            LeaderSelector.OFFLINE,
            None,
            FailureCode.NO_LEADERSHIP_INFO,
            None,
            id="no-state-to-elect-from",
        ),
    ],
)
def test_election_failures(make_ctx, ctx_args, selector, current, code, election_error) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: current} if current else None,
        partition_states={T0: P.OFFLINE},
        **ctx_args,
    )
    plan = decide_partition_changes(ctx, [T0], P.ONLINE, now_ms=NOW, selector=selector)
    assert [(f.tp, f.from_state, f.to_state, f.code, f.election_error) for f in plan.failures] == [
        (T0, P.OFFLINE, P.ONLINE, code, election_error)
    ]
    assert plan.is_empty and plan.records == ()


@pytest.mark.parametrize(
    ("src", "dst", "reason", "logged"),
    [
        (P.NON_EXISTENT, P.NEW, None, "new"),
        (P.ONLINE, P.OFFLINE, None, "offline"),
        (P.NEW, P.OFFLINE, "deletion", "deletion"),
        (P.OFFLINE, P.NON_EXISTENT, None, "deletion"),
    ],
)
def test_state_only_transitions(make_ctx, src, dst, reason, logged) -> None:
    current = LeaderAndIsr(2, 7, (2, 3), 4, 42)
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        leadership={T0: current} if src in (P.ONLINE, P.OFFLINE) else None,
        partition_states={T0: src},
    )
    plan = decide_partition_changes(ctx, [T0], dst, now_ms=NOW, reason=reason)
    leader, epoch, isr = (2, 7, (2, 3)) if src in (P.ONLINE, P.OFFLINE) else (-1, -1, ())
    assert plan == StateChangePlan(
        controller_epoch=EPOCH,
        partition_transitions=(PartitionTransition(T0, src, dst),),
        records=(rec(T0, src, dst, leader, epoch, isr, logged),),
    )


def test_new_needs_an_assignment(make_ctx) -> None:
    plan = decide_partition_changes(make_ctx(), [T0], P.NEW, now_ms=NOW)
    assert [f.code for f in plan.failures] == [FailureCode.NO_ASSIGNMENT]


def test_online_without_selector_is_a_programming_error(make_ctx) -> None:
    with pytest.raises(ValueError):
        decide_partition_changes(make_ctx(), [T0], P.ONLINE, now_ms=NOW)


def test_one_bad_partition_does_not_stop_the_batch(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2), T1: (2, 1)},
        partition_states={T0: P.NEW, T1: P.NON_EXISTENT},
    )
    plan = decide_partition_changes(
        ctx, [T1, T0, T0], P.ONLINE, now_ms=NOW, selector=LeaderSelector.OFFLINE
    )
    assert [w.tp for w in plan.writes] == [T0]
    assert plan.partition_transitions == (PartitionTransition(T0, P.NEW, P.ONLINE),)
    assert [(f.tp, f.code) for f in plan.failures] == [(T1, FailureCode.INVALID_TRANSITION)]


def test_trigger_online_skips_topics_being_deleted(make_ctx) -> None:
    d0 = TopicPartition("doomed", 0)
    ctx = make_ctx(
        assignments={T0: (1, 2), T1: (2, 1), d0: (1,), TopicPartition("u", 0): (1,)},
        brokers=(2,),
        leadership={T1: LeaderAndIsr(1, 3, (1, 2), 4, 8), d0: LeaderAndIsr(9, 1, (9,), 4, 5)},
        partition_states={
            T0: P.NEW,
            T1: P.OFFLINE,
            d0: P.OFFLINE,
            TopicPartition("u", 0): P.ONLINE,
        },
        deleting=("doomed",),
    )
    assert partitions_to_trigger_online(ctx) == (T0, T1)
    plan = decide_trigger_online(ctx, now_ms=NOW)
    assert plan.writes == (
        PartitionStateWrite(
            T0, LeaderAndIsr(2, 0, (2,), EPOCH), 0, True, ReplicaAssignment((1, 2))
        ),
        PartitionStateWrite(
            T1, LeaderAndIsr(2, 4, (2,), EPOCH, 8), 8, False, ReplicaAssignment((2, 1))
        ),
    )
    assert plan.requests == (
        LeaderAndIsrIntent((2,), T0, is_new=True),
        LeaderAndIsrIntent((2,), T1, is_new=False),
    )
