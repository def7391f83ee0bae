"""The state machines' initial states when a controller takes office (seed 000 section 9),
pure: Kafka's ``initializePartitionState`` and ``initializeReplicaState``.

``flows/failover.py`` applies them to the context and then moves New/Offline partitions online
and every live replica online; ``tests/unit/controller/test_startup_states.py`` tables them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from services.controller.core.model import LeaderAndIsr, PartitionReplica, TopicPartition
from services.controller.core.states import PartitionState, ReplicaState


def initial_partition_state(lai: LeaderAndIsr | None, live: Collection[int]) -> PartitionState:
    """New with no leadership recorded yet; Online when its leader is a live broker; else
    Offline (no leader, or the leader is gone)."""
    if lai is None:
        return PartitionState.NEW
    if lai.has_leader and lai.leader in live:
        return PartitionState.ONLINE
    return PartitionState.OFFLINE


def initial_partition_states(
    partitions: Iterable[TopicPartition],
    leader_and_isr: Callable[[TopicPartition], LeaderAndIsr | None],
    live: Collection[int],
) -> list[tuple[TopicPartition, PartitionState]]:
    return [(tp, initial_partition_state(leader_and_isr(tp), live)) for tp in partitions]


def initial_replica_states(
    online: Iterable[PartitionReplica], offline: Iterable[PartitionReplica]
) -> list[tuple[PartitionReplica, ReplicaState]]:
    """Online replicas start Online; replicas on dead brokers or failed log directories start
    ReplicaDeletionIneligible (they cannot be deleted until they come back)."""
    return [(pr, ReplicaState.ONLINE) for pr in online] + [
        (pr, ReplicaState.REPLICA_DELETION_INELIGIBLE) for pr in offline
    ]
