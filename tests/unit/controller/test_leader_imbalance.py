"""Auto leader rebalance decisions and PreferredReplicaImbalanceCount."""

from __future__ import annotations

import pytest

from services.controller.core import (
    BrokerImbalance,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
    decide_auto_rebalance,
    leader_imbalance,
)


def tp(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


def led(leader: int, isr=(1, 2, 3)) -> LeaderAndIsr:
    return LeaderAndIsr(leader, 1, isr, 1, 1)


# Broker 1 is preferred for t-0..t-3 and leads only t-0 (ratio 3/4); broker 2 is preferred for
# t-4, t-5 and leads both (ratio 0); broker 3 is preferred for t-6, which has no leader yet.
ASSIGNMENTS = {
    tp(0): (1, 2, 3),
    tp(1): (1, 2, 3),
    tp(2): (1, 3, 2),
    tp(3): (1, 2),
    tp(4): (2, 1),
    tp(5): (2, 3),
    tp(6): (3, 1),
}
LEADERSHIP = {
    tp(0): led(1),
    tp(1): led(2),
    tp(2): led(3),
    tp(3): led(2, isr=(2,)),  # preferred replica 1 is out of the ISR
    tp(4): led(2),
    tp(5): led(2),
}


def test_imbalance_per_broker(make_ctx) -> None:
    ctx = make_ctx(assignments=ASSIGNMENTS, leadership=LEADERSHIP)
    assert leader_imbalance(ctx) == (
        BrokerImbalance(1, 4, (tp(1), tp(2), tp(3))),
        BrokerImbalance(2, 2, ()),
        BrokerImbalance(3, 1, ()),  # leaderless partitions count in the denominator only
    )
    assert [i.ratio for i in leader_imbalance(ctx)] == [0.75, 0.0, 0.0]


@pytest.mark.parametrize(
    ("percentage", "ctx_args", "expected"),
    [
        pytest.param(10, {}, (tp(1), tp(2)), id="above-threshold-preferred-in-isr-only"),
        pytest.param(75, {}, (), id="ratio-must-exceed-not-equal"),
        pytest.param(74, {}, (tp(1), tp(2)), id="just-above"),
        pytest.param(10, {"brokers": (2, 3)}, (), id="preferred-broker-dead"),
        pytest.param(10, {"shutting_down": (1,)}, (), id="preferred-broker-shutting-down"),
        pytest.param(10, {"offline_dirs": {1: [tp(1)]}}, (tp(2),), id="preferred-on-failed-dir"),
    ],
)
def test_rebalance_candidates(make_ctx, percentage, ctx_args, expected) -> None:
    ctx = make_ctx(assignments=ASSIGNMENTS, leadership=LEADERSHIP, **ctx_args)
    assert decide_auto_rebalance(ctx, percentage).partitions_to_elect == expected


def test_topics_being_deleted_are_not_counted(make_ctx) -> None:
    assignments = {**ASSIGNMENTS, tp(0, "doomed"): (1, 2), tp(1, "doomed"): (1, 2)}
    leadership = {**LEADERSHIP, tp(0, "doomed"): led(2), tp(1, "doomed"): led(2)}
    ctx = make_ctx(assignments=assignments, leadership=leadership, deleting=("doomed",))
    decision = decide_auto_rebalance(ctx, 10)
    assert decision.imbalances[0] == BrokerImbalance(1, 4, (tp(1), tp(2), tp(3)))
    assert decision.partitions_to_elect == (tp(1), tp(2))
    assert ctx.preferred_replica_imbalance_count() == 3


def test_no_rebalance_while_any_reassignment_runs(make_ctx) -> None:
    assignments = {**ASSIGNMENTS, tp(4): ReplicaAssignment((3, 2, 1), (3,), (1,))}
    ctx = make_ctx(assignments=assignments, leadership=LEADERSHIP)
    decision = decide_auto_rebalance(ctx, 10)
    assert decision.partitions_to_elect == ()
    assert decision.imbalances[0].ratio == 0.75


@pytest.mark.parametrize(
    ("assignment", "lai", "imbalanced"),
    [
        pytest.param((1, 2), led(1), 0, id="preferred-leads"),
        pytest.param((1, 2), led(2), 1, id="other-leads"),
        pytest.param((1, 2), None, 0, id="no-leader-state-not-counted"),
        pytest.param(
            ReplicaAssignment((3, 1, 2), (3,), ()),
            led(1, isr=(1, 2)),
            1,
            id="reassigning-preferred-not-yet-in-isr",
        ),
        pytest.param(
            ReplicaAssignment((3, 1, 2), (3,), ()),
            led(1, isr=(1, 2, 3)),
            0,
            id="reassigning-preferred-caught-up",
        ),
    ],
)
def test_preferred_replica_imbalance_count(make_ctx, assignment, lai, imbalanced) -> None:
    ctx = make_ctx(
        assignments={tp(0): assignment, tp(1): (2, 1)},
        leadership={tp(0): lai, tp(1): led(2)} if lai else {tp(1): led(2)},
    )
    assert ctx.preferred_replica_imbalance_count() == imbalanced
