"""RequestBatch: pending-batch guard, UpdateMetadata fan-out, deletion markers, plan queueing,
states already queued in the same controller event."""

from __future__ import annotations

import pytest

from services.controller.core import (
    BrokerRequests,
    IllegalStateError,
    LeaderAndIsr,
    LeaderAndIsrIntent,
    LeaderAndIsrPartitionState,
    LeaderSelector,
    PartitionState,
    ReplicaAssignment,
    RequestBatch,
    StateChangePlan,
    StopReplicaPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
    decide_partition_changes,
)

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
D0 = TopicPartition("doomed", 0)
LAI = LeaderAndIsr(1, 7, (1, 2), 4, 42)


def um(tp, lai: LeaderAndIsr, replicas, offline=(), leader=None) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(
        tp=tp,
        topic_id=f"id-{tp.topic}",
        controller_epoch=lai.controller_epoch,
        leader=lai.leader if leader is None else leader,
        leader_epoch=lai.leader_epoch,
        isr=lai.isr,
        partition_epoch=lai.partition_epoch,
        replicas=tuple(replicas),
        offline_replicas=tuple(offline),
    )


def test_new_batch_refuses_while_requests_pending(make_ctx) -> None:
    batch = RequestBatch(make_ctx(assignments={T0: (1, 2)}))
    batch.new_batch()
    batch.add_stop_replica([1], T0, delete=False)
    assert batch.has_pending
    with pytest.raises(IllegalStateError):
        batch.new_batch()
    batch.build()
    batch.new_batch()
    assert batch.build() == {}


def test_update_metadata_alone_counts_as_pending(make_ctx) -> None:
    batch = RequestBatch(make_ctx())
    batch.add_update_metadata([2])
    with pytest.raises(IllegalStateError):
        batch.new_batch()
    batch.clear()
    batch.new_batch()


def test_leader_and_isr_fans_out_update_metadata_to_every_registered_broker(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        brokers=(1, 2, 3, 4),
        shutting_down=(4,),
        leadership={T0: LAI},
    )
    batch = RequestBatch(ctx)
    batch.add_leader_and_isr([1, 2, -1, 9], T0, LAI, ctx.assignment(T0), is_new=False)
    out = batch.build()
    brokers = tuple(ctx.brokers[i] for i in (1, 2, 3, 4))
    lai_state = LeaderAndIsrPartitionState(T0, "id-t", LAI, (1, 2, 3), (), (), False)
    shared_um = (um(T0, LAI, (1, 2, 3), offline=()),)

    def expected(b: int, lai_states) -> BrokerRequests:
        return BrokerRequests(
            broker_id=b,
            broker_epoch=1000 + b,
            controller_id=100,
            controller_epoch=5,
            leader_and_isr=lai_states,
            live_leaders=(ctx.brokers[1],) if lai_states else (),
            stop_replica=(),
            update_metadata=shared_um,
            live_brokers=brokers,
        )

    # broker 9 is not registered: dropped; shutting-down broker 4 still gets UpdateMetadata
    assert out == {
        1: expected(1, (lai_state,)),
        2: expected(2, (lai_state,)),
        3: expected(3, ()),
        4: expected(4, ()),
    }
    assert not batch.has_pending


def test_is_new_and_delete_are_sticky_latest_state_wins(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2)}, leadership={T0: LAI})
    batch = RequestBatch(ctx)
    newer = LeaderAndIsr(2, 8, (2,), 5, 43)
    batch.add_leader_and_isr([2], T0, LAI, ReplicaAssignment((1, 2)), is_new=True)
    batch.add_leader_and_isr([2], T0, newer, ReplicaAssignment((1, 2)), is_new=False)
    batch.add_stop_replica([1], T0, delete=True)
    batch.add_stop_replica([1], T0, delete=False)
    out = batch.build()
    assert out[2].leader_and_isr == (
        LeaderAndIsrPartitionState(T0, "id-t", newer, (1, 2), (), (), True),
    )
    assert out[1].stop_replica == (StopReplicaPartitionState(T0, 7, True),)


def test_is_new_stays_per_broker_when_a_later_add_reaches_more_brokers(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2, 3)}, leadership={T0: LAI})
    batch = RequestBatch(ctx)
    newer = LeaderAndIsr(2, 8, (2, 3), 5, 43)
    batch.add_leader_and_isr([2], T0, LAI, ReplicaAssignment((1, 2, 3)), is_new=True)
    batch.add_leader_and_isr([1, 2, 3], T0, newer, ReplicaAssignment((1, 2, 3)), is_new=False)
    out = batch.build()
    assert {b: out[b].leader_and_isr for b in (1, 2, 3)} == {
        b: (LeaderAndIsrPartitionState(T0, "id-t", newer, (1, 2, 3), (), (), b == 2),)
        for b in (1, 2, 3)
    }


@pytest.mark.parametrize(
    ("leadership", "deleting", "epoch"),
    [
        ({T0: LAI}, (), 7),
        (None, (), -1),
        ({T0: LAI}, ("t",), -2),
    ],
)
def test_stop_replica_leader_epoch(make_ctx, leadership, deleting, epoch) -> None:
    batch = RequestBatch(
        make_ctx(assignments={T0: (1, 2)}, leadership=leadership, deleting=deleting)
    )
    batch.add_stop_replica([2], T0, delete=False)
    out = batch.build()
    assert out[2].stop_replica == (StopReplicaPartitionState(T0, epoch, False),)
    assert out[2].update_metadata is None and out[2].leader_and_isr == ()


def test_update_metadata_marks_deletion_skips_leaderless_and_lists_offline(make_ctx) -> None:
    d_lai = LeaderAndIsr(3, 2, (3,), 4, 17)
    ctx = make_ctx(
        assignments={T0: (1, 2, 3), T1: (1, 2), D0: (3, 1)},
        brokers=(1, 3),
        leadership={T0: LAI, D0: d_lai},
        offline_dirs={3: [T0]},
        deleting=("doomed",),
    )
    batch = RequestBatch(ctx)
    batch.add_update_metadata([1, 3], [T1, D0, T0])
    out = batch.build()
    expected = (
        um(D0, d_lai, (3, 1), leader=-2),
        um(T0, LAI, (1, 2, 3), offline=(2, 3)),
    )
    assert out[1].update_metadata == expected
    assert out[3].update_metadata == expected


def test_update_metadata_without_partitions_still_sends_brokers(make_ctx) -> None:
    ctx = make_ctx(brokers=(1, 2))
    batch = RequestBatch(ctx)
    batch.add_update_metadata([2])
    out = batch.build()
    assert list(out) == [2]
    assert out[2].update_metadata == ()
    assert out[2].live_brokers == (ctx.brokers[1], ctx.brokers[2])


def test_plan_requests_carry_committed_partition_epoch(make_ctx) -> None:
    ctx = make_ctx(
        assignments={T0: (1, 2, 3)},
        brokers=(2, 3),
        leadership={T0: LeaderAndIsr(1, 7, (1, 2, 3), 4, 42)},
        partition_states={T0: PartitionState.OFFLINE},
    )
    plan = decide_partition_changes(
        ctx, [T0], PartitionState.ONLINE, now_ms=1, selector=LeaderSelector.OFFLINE
    )
    batch = RequestBatch(ctx)
    ctx.apply_plan(plan, {T0: 57})
    batch.add_plan(plan)
    out = batch.build()
    committed = LeaderAndIsr(2, 8, (2, 3), 5, 57)
    assert out[2].leader_and_isr == (
        LeaderAndIsrPartitionState(T0, "id-t", committed, (1, 2, 3), (), (), False),
    )
    assert out[2].update_metadata == (um(T0, committed, (1, 2, 3), offline=(1,)),)
    assert sorted(out) == [2, 3]


def test_plan_requests_before_apply_are_refused(make_ctx) -> None:
    ctx = make_ctx(assignments={T0: (1, 2)}, partition_states={T0: PartitionState.NEW})
    plan = decide_partition_changes(
        ctx, [T0], PartitionState.ONLINE, now_ms=1, selector=LeaderSelector.OFFLINE
    )
    with pytest.raises(IllegalStateError):
        RequestBatch(ctx).add_plan(plan)


def test_reassignment_sets_reach_leader_and_isr(make_ctx) -> None:
    a = ReplicaAssignment((4, 1, 2), adding=(4,), removing=(1,))
    ctx = make_ctx(assignments={T0: a}, brokers=(1, 2, 4), leadership={T0: LAI})
    batch = RequestBatch(ctx)
    batch.add_leader_and_isr([4], T0, LAI, a, is_new=True)
    state = batch.build()[4].leader_and_isr[0]
    assert (state.replicas, state.adding_replicas, state.removing_replicas) == (
        (4, 1, 2),
        (4,),
        (1,),
    )


def _lai_plan(*intents: LeaderAndIsrIntent) -> StateChangePlan:
    return StateChangePlan(controller_epoch=4, requests=intents)


def _sent(out: dict[int, BrokerRequests]) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Per broker: the partitions of its LeaderAndIsr and of its UpdateMetadata."""
    return {
        b: (
            tuple(s.tp.partition for s in r.leader_and_isr),
            tuple(s.tp.partition for s in r.update_metadata or ()),
        )
        for b, r in out.items()
    }


BOTH = {b: ((0,), (0,)) for b in (2, 3)} | {1: ((), (0,))}


@pytest.mark.parametrize(
    "second, change_state, end_event, expected",
    [
        # The very state to the same brokers later in the event: nothing is queued again.
        (LeaderAndIsrIntent((2, 3), T0), False, False, {}),
        (LeaderAndIsrIntent((3,), T0), False, False, {}),  # to fewer of them
        # A new event, another broker, a new state, is_new: queued again.
        (LeaderAndIsrIntent((2, 3), T0), False, True, BOTH),
        (
            LeaderAndIsrIntent((2, 3, 4), T0),
            False,
            False,
            {b: ((0,), (0,)) for b in (2, 3, 4)} | {1: ((), (0,))},
        ),
        (LeaderAndIsrIntent((2, 3), T0), True, False, BOTH),
        (
            LeaderAndIsrIntent((2,), T0, is_new=True),
            False,
            False,
            {1: ((), (0,)), 2: ((0,), (0,)), 3: ((), (0,))},
        ),
    ],
)
def test_a_state_already_queued_in_the_event_is_not_queued_again(
    make_ctx, second, change_state, end_event, expected
) -> None:
    ctx = make_ctx(assignments={T0: (1, 2, 3, 4)}, brokers=(1, 2, 3, 4), leadership={T0: LAI})
    batch = RequestBatch(ctx)
    batch.add_plan(_lai_plan(LeaderAndIsrIntent((2, 3), T0)))
    assert _sent(batch.build()) == BOTH | {4: ((), (0,))}
    if change_state:
        ctx.apply_leader_and_isr(T0, LeaderAndIsr(1, 7, (1, 2), 4, 42))  # equal, not the same
    if end_event:
        batch.end_event()
    batch.add_plan(_lai_plan(second))
    out = batch.build()
    if expected:
        expected = {4: ((), (0,))} | expected  # broker 4 gets UpdateMetadata too
    assert _sent(out) == expected
