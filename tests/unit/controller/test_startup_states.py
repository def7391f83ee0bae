"""The state machines' initial states at failover (``core/startup.py``) as named tables."""

from __future__ import annotations

import pytest

from services.controller.core import (
    NO_LEADER,
    LeaderAndIsr,
    PartitionReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from services.controller.core.startup import (
    initial_partition_state,
    initial_partition_states,
    initial_replica_states,
)

LIVE = frozenset({1, 2})

PARTITION_CASES = [
    pytest.param(None, PartitionState.NEW, id="no-leadership-recorded-new"),
    pytest.param(LeaderAndIsr(1, 0, (1, 2), 1), PartitionState.ONLINE, id="live-leader-online"),
    pytest.param(LeaderAndIsr(3, 0, (3,), 1), PartitionState.OFFLINE, id="dead-leader-offline"),
    pytest.param(
        LeaderAndIsr(NO_LEADER, 2, (3,), 1), PartitionState.OFFLINE, id="no-leader-offline"
    ),
]


@pytest.mark.parametrize(("leadership", "expected"), PARTITION_CASES)
def test_initial_partition_state(leadership, expected) -> None:
    assert initial_partition_state(leadership, LIVE) is expected


def test_initial_partition_states_keep_partition_order() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    states = {a: LeaderAndIsr(1, 0, (1,), 1)}
    assert initial_partition_states([b, a], states.get, LIVE) == [
        (b, PartitionState.NEW),
        (a, PartitionState.ONLINE),
    ]


def test_initial_replica_states() -> None:
    up, down = (
        PartitionReplica(TopicPartition("t", 0), 1),
        PartitionReplica(TopicPartition("t", 0), 3),
    )
    assert initial_replica_states([up], [down]) == [
        (up, ReplicaState.ONLINE),
        (down, ReplicaState.REPLICA_DELETION_INELIGIBLE),
    ]
