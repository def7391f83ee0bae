"""Replica state machine details the failover relies on: grouping order over unsorted input,
and ``record_unchanged=False`` (startup's Online -> Online) changing only the records."""

from __future__ import annotations

import pytest

from services.controller.core import (
    LeaderAndIsr,
    LeaderAndIsrIntent,
    PartitionReplica,
    ReplicaState,
    TopicPartition,
    decide_replica_changes,
)

R = ReplicaState
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
LAI = LeaderAndIsr(1, 3, (1, 2), 5, 40)


def _ctx(make_ctx, states):
    return make_ctx(
        assignments={A0: (1, 2), A1: (2, 1), B0: (1, 2)},
        leadership={A0: LAI, A1: LAI, B0: LAI},
        replica_states=states,
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            [PartitionReplica(B0, 2), PartitionReplica(A1, 1), PartitionReplica(A0, 2),
             PartitionReplica(A0, 1), PartitionReplica(B0, 2)],
            [(1, A0), (1, A1), (2, A0), (2, B0)],
        ),
        ([PartitionReplica(A1, 2)], [(2, A1)]),
        ([], []),
    ],
)  # fmt: skip
def test_replicas_are_handled_by_broker_then_partition(make_ctx, given, expected) -> None:
    ctx = _ctx(make_ctx, {r: R.OFFLINE for r in given})
    plan = decide_replica_changes(ctx, given, R.ONLINE, now_ms=1)
    assert [(t.replica.replica, t.replica.tp) for t in plan.replica_transitions] == expected
    assert [(i.brokers, i.tp) for i in plan.requests] == [((b,), tp) for b, tp in expected]


@pytest.mark.parametrize("record_unchanged", [True, False])
def test_unchanged_replicas_can_go_unrecorded(make_ctx, record_unchanged) -> None:
    online, offline = PartitionReplica(A0, 1), PartitionReplica(A0, 2)
    ctx = _ctx(make_ctx, {online: R.ONLINE, offline: R.OFFLINE})
    plan = decide_replica_changes(
        ctx, [online, offline], R.ONLINE, now_ms=1, record_unchanged=record_unchanged
    )
    assert [(t.replica, t.from_state) for t in plan.replica_transitions] == [
        (online, R.ONLINE),
        (offline, R.OFFLINE),
    ]
    assert plan.requests == (
        LeaderAndIsrIntent((1,), A0, is_new=False),
        LeaderAndIsrIntent((2,), A0, is_new=False),
    )
    recorded = [(r.replica, r.from_state, r.to_state) for r in plan.records]
    both = [(1, "OnlineReplica", "OnlineReplica"), (2, "OfflineReplica", "OnlineReplica")]
    assert recorded == (both if record_unchanged else both[1:])
