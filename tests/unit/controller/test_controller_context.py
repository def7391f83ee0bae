"""ControllerContext queries, apply_plan, and StateChangePlan.drop_partitions."""

from __future__ import annotations

import pytest

from services.controller.core import (
    FailureCode,
    LeaderAndIsr,
    LeaderAndIsrIntent,
    LeaderSelector,
    PartitionReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    StateChangeFailure,
    TopicPartition,
    UpdateMetadataIntent,
    decide_partition_changes,
    decide_replica_changes,
)

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)


def test_liveness_views(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)}, brokers=(1, 2, 3), shutting_down=(3,), offline_dirs={2: [T0]}
    )
    assert ctx.live_broker_ids == {1, 2}
    assert ctx.live_or_shutting_down_broker_ids == {1, 2, 3}
    assert ctx.shutting_down_broker_ids == {3}
    assert [ctx.is_replica_online(b, T0) for b in (1, 2, 3, 4)] == [True, False, False, False]
    assert [ctx.is_replica_online(b, T0, include_shutting_down=True) for b in (1, 2, 3, 4)] == [
        True,
        False,
        True,
        False,
    ]
    assert ctx.is_replica_online(2, T1)  # the failed log dir holds only t-0
    assert [ctx.is_eligible_isr_member(b, T0) for b in (1, 2, 3)] == [True, False, False]
    assert (ctx.broker_epoch(2), ctx.broker_epoch(7)) == (1002, -1)
    ctx.apply_broker_removed(3)
    assert ctx.live_or_shutting_down_broker_ids == {1, 2} and ctx.shutting_down_broker_ids == set()


@pytest.mark.parametrize(
    ("offline_dirs", "include_shutting_down", "tp", "expected"),
    [
        ({}, False, T0, [True, True, False, False]),
        ({}, True, T0, [True, True, True, False]),
        ({2: [T0]}, False, T0, [True, False, False, False]),
        ({2: [T0]}, True, T0, [True, False, True, False]),
        ({2: [T0]}, False, T1, [True, True, False, False]),
        ({3: [T0]}, True, T0, [True, True, False, False]),
    ],
)
def test_replica_online_check_is_is_replica_online(
    make_ctx, offline_dirs, include_shutting_down, tp, expected
) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3), T1: (1, 2, 3)},
        brokers=(1, 2, 3),
        shutting_down=(3,),
        offline_dirs=offline_dirs,
    )
    check = ctx.replica_online_check(tp, include_shutting_down=include_shutting_down)
    assert [check(b) for b in (1, 2, 3, 4)] == expected
    assert expected == [
        ctx.is_replica_online(b, tp, include_shutting_down=include_shutting_down)
        for b in (1, 2, 3, 4)
    ]


def test_shutting_down_ids_follow_every_broker_change(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2, 3)}, brokers=(1, 2, 3))
    seen = [ctx.shutting_down_broker_ids]
    ctx.apply_broker_shutting_down(2)
    seen.append(ctx.shutting_down_broker_ids)
    ctx.apply_broker_shutting_down(3)
    seen.append(ctx.shutting_down_broker_ids)
    ctx.apply_broker_removed(2)
    seen.append(ctx.shutting_down_broker_ids)
    assert seen == [frozenset(), {2}, {2, 3}, {3}]
    assert [ctx.is_replica_online(b, T0) for b in (1, 2, 3)] == [True, False, False]


def test_partition_and_replica_queries(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2), T1: ReplicaAssignment((3, 2, 1), (3,), (1,)), U0: (2,)},
        leadership={T0: LeaderAndIsr(1, 0, (1, 2), 1), U0: LeaderAndIsr(2, 0, (2,), 1)},
        partition_states={
            T0: PartitionState.ONLINE,
            T1: PartitionState.NEW,
            U0: PartitionState.OFFLINE,
        },
        replica_states={
            PartitionReplica(T0, 1): ReplicaState.ONLINE,
            PartitionReplica(T0, 2): ReplicaState.OFFLINE,
            PartitionReplica(U0, 2): ReplicaState.OFFLINE,
        },
    )
    assert ctx.all_topics == {"t", "u"}
    assert ctx.has_topic("t") and ctx.has_topic("u") and not ctx.has_topic("v")
    assert ctx.topic_count == 2
    assert ctx.all_partitions() == (T0, T1, U0)
    assert ctx.partitions_for_topic("t") == (T0, T1)
    assert ctx.partitions_on_broker(1) == (T0, T1)
    assert ctx.partitions_on_broker(3) == (T1,)
    assert ctx.partitions_led_by(2) == (U0,)
    assert ctx.replicas_on_brokers([3, 1]) == (
        PartitionReplica(T0, 1),
        PartitionReplica(T1, 1),
        PartitionReplica(T1, 3),
    )
    assert ctx.replicas_for_topic("u") == (PartitionReplica(U0, 2),)
    assert ctx.partitions_being_reassigned() == (T1,)
    assert ctx.partitions_in_state(PartitionState.NEW, PartitionState.OFFLINE) == (T1, U0)
    assert ctx.replicas_in_state("t", ReplicaState.OFFLINE) == (PartitionReplica(T0, 2),)
    assert ctx.partition_state(TopicPartition("x", 0)) is PartitionState.NON_EXISTENT
    assert ctx.replica_state(PartitionReplica(T1, 3)) is ReplicaState.NON_EXISTENT
    assert ctx.offline_partition_count() == 1
    ctx.apply_topic_deletion_queued("u")
    assert ctx.offline_partition_count() == 0


def test_online_and_offline_replicas(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2, 3)}, brokers=(1, 3), shutting_down=(3,))
    online, offline = ctx.online_and_offline_replicas()
    assert online == (PartitionReplica(T0, 1), PartitionReplica(T0, 3))
    assert offline == (PartitionReplica(T0, 2),)


@pytest.mark.parametrize(
    ("default", "config", "expected"),
    [
        (False, None, False),
        (True, None, True),
        (False, "true", True),
        (False, " TRUE ", True),
        (True, "false", False),
        (True, "nonsense", False),
    ],
)
def test_unclean_config(make_ctx, default, config, expected) -> None:
    configs = {"t": {"unclean.leader.election.enable": config}} if config is not None else None
    ctx = make_ctx(assignments={T0: (1,)}, configs=configs, unclean_default=default)
    assert ctx.is_unclean_leader_election_enabled("t") is expected


def _election_plan(ctx):
    return decide_partition_changes(
        ctx, [T0, T1], PartitionState.ONLINE, now_ms=1, selector=LeaderSelector.OFFLINE
    )


def _online_ctx(make_ctx):
    return make_ctx(
        assignments={T0: (1, 2), T1: (2, 1)},
        brokers=(2,),
        leadership={T0: LeaderAndIsr(1, 3, (1, 2), 4, 10), T1: LeaderAndIsr(1, 6, (1, 2), 4, 11)},
        partition_states={T0: PartitionState.OFFLINE, T1: PartitionState.OFFLINE},
    )


def test_apply_plan_sets_committed_epochs_and_states(make_ctx) -> None:
    ctx = _online_ctx(make_ctx)
    ctx.apply_plan(_election_plan(ctx), {T0: 20, T1: 21})
    assert ctx.leader_and_isr(T0) == LeaderAndIsr(2, 4, (2,), 5, 20)
    assert ctx.leader_and_isr(T1) == LeaderAndIsr(2, 7, (2,), 5, 21)
    assert ctx.partitions_in_state(PartitionState.ONLINE) == (T0, T1)


@pytest.mark.parametrize(
    ("epochs", "controller_epoch"),
    [({T0: 20}, 5), ({T0: 20, T1: 21}, 6)],
    ids=["missing-committed-epoch", "controller-epoch-moved"],
)
def test_apply_plan_checks_before_changing_anything(make_ctx, epochs, controller_epoch) -> None:
    ctx = _online_ctx(make_ctx)
    plan = _election_plan(ctx)
    ctx.apply_controller(100, controller_epoch)
    with pytest.raises(ValueError):
        ctx.apply_plan(plan, epochs)
    assert ctx.leader_and_isr(T0) == LeaderAndIsr(1, 3, (1, 2), 4, 10)
    assert ctx.partitions_in_state(PartitionState.OFFLINE) == (T0, T1)


def test_drop_partitions_turns_everything_into_commit_failures(make_ctx) -> None:
    ctx = _online_ctx(make_ctx)
    plan = _election_plan(ctx)
    kept = plan.drop_partitions([T1], "txn 2 failed")
    assert [w.tp for w in kept.writes] == [T0]
    assert [t.tp for t in kept.partition_transitions] == [T0]
    assert kept.requests == (LeaderAndIsrIntent((2,), T0),)
    assert [(r.topic, r.partition) for r in kept.records] == [("t", 0)]
    assert kept.failures == (
        StateChangeFailure(
            T1,
            -1,
            PartitionState.OFFLINE,
            PartitionState.ONLINE,
            FailureCode.COMMIT_FAILED,
            "txn 2 failed",
        ),
    )
    assert plan.drop_partitions([], "x") is plan


def test_drop_partitions_trims_replica_plans_and_metadata(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2), T1: (1, 2)},
        leadership={T0: LeaderAndIsr(1, 3, (1, 2), 4, 10)},
        replica_states={
            PartitionReplica(T0, 2): ReplicaState.ONLINE,
            PartitionReplica(T1, 2): ReplicaState.ONLINE,
        },
    )
    plan = decide_replica_changes(
        ctx, [PartitionReplica(T0, 2), PartitionReplica(T1, 2)], ReplicaState.OFFLINE, now_ms=1
    )
    kept = plan.drop_partitions([T0], "conflict")
    assert kept.writes == ()
    assert [t.replica for t in kept.replica_transitions] == [PartitionReplica(T1, 2)]
    assert [r for r in kept.requests if isinstance(r, UpdateMetadataIntent)] == [
        UpdateMetadataIntent((1, 2, 3), (T1,))
    ]
    assert [(f.replica, f.code) for f in kept.failures] == [(2, FailureCode.COMMIT_FAILED)]


def test_remove_topic_forgets_everything(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1,), U0: (1,)},
        leadership={T0: LeaderAndIsr(1, 0, (1,), 1)},
        partition_states={T0: PartitionState.OFFLINE},
        replica_states={PartitionReplica(T0, 1): ReplicaState.REPLICA_DELETION_SUCCESSFUL},
        configs={"t": {"retention.ms": "1"}},
        deleting=("t",),
    )
    ctx.apply_topic_deletion_eligibility("t", ineligible=True)
    ctx.apply_remove_topic("t")
    assert ctx.all_topics == {"u"}
    assert not ctx.has_topic("t") and ctx.topic_count == 1
    assert ctx.all_partitions() == (U0,)
    assert ctx.leader_and_isr(T0) is None
    assert ctx.partition_state(T0) is PartitionState.NON_EXISTENT
    assert ctx.replicas_in_state("t", *ReplicaState) == ()
    assert ctx.topic_config("t") == {}
    assert not ctx.is_topic_queued_for_deletion("t")
    assert not ctx.is_topic_ineligible_for_deletion("t")
