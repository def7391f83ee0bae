"""The states of the partition and replica state machines and their legal transitions.

Seed 000 sections 4-5 and seed 004 define the states; each state lists the states it may be
entered from. The tables below are the single source of truth: the state machines check every
requested transition against them and turn an illegal one into a per-item failure, never an
exception (KRaft style: one bad partition must not abort a whole batch).

The enum values are Kafka's own state names so the state-change log reads like Kafka's.

One deliberate difference from the 0.11-era seed text: ``ReplicaDeletionIneligible`` may also be
entered from ``OfflineReplica``. The seed's own topic-deletion flow (``startReplicaDeletion``)
moves replicas on dead brokers straight from Offline to Ineligible, which the 0.11 check
rejected; Kafka 1.1+ allows it, and we follow the flow rather than the stale check.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType
from typing import TypeVar


class PartitionState(Enum):
    """Seed 000 section 4: where a partition is in its life."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return _PARTITION_PREVIOUS[self]


class ReplicaState(Enum):
    """Seed 000 section 5: where one replica (partition, broker) is in its life."""

    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    REPLICA_DELETION_STARTED = "ReplicaDeletionStarted"
    REPLICA_DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    REPLICA_DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return _REPLICA_PREVIOUS[self]


_P = PartitionState
_PARTITION_PREVIOUS: MappingProxyType[PartitionState, frozenset[PartitionState]] = MappingProxyType(
    {
        # Created: replicas assigned, no leader yet.
        _P.NEW: frozenset({_P.NON_EXISTENT}),
        # New -> Online initialises leader/ISR; Offline/Online -> Online elects with a selector.
        _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
        # Broker failure or the first step of deleting a topic.
        _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
        # Only a topic deletion ends a partition, always through Offline.
        _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
    }
)

_R = ReplicaState
_REPLICA_PREVIOUS: MappingProxyType[ReplicaState, frozenset[ReplicaState]] = MappingProxyType(
    {
        _R.NEW: frozenset({_R.NON_EXISTENT}),
        _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.REPLICA_DELETION_INELIGIBLE}),
        _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.REPLICA_DELETION_INELIGIBLE}),
        _R.REPLICA_DELETION_STARTED: frozenset({_R.OFFLINE}),
        _R.REPLICA_DELETION_SUCCESSFUL: frozenset({_R.REPLICA_DELETION_STARTED}),
        _R.REPLICA_DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.REPLICA_DELETION_STARTED}),
        _R.NON_EXISTENT: frozenset({_R.REPLICA_DELETION_SUCCESSFUL}),
    }
)

S = TypeVar("S", PartitionState, ReplicaState)


def is_valid_transition(from_state: S, to_state: S) -> bool:
    """True when ``to_state`` may be entered from ``from_state``.

    Both states must belong to the same machine; mixing a partition and a replica state is a
    programming error, so it raises instead of quietly answering False.
    """
    if type(from_state) is not type(to_state):
        raise TypeError(
            f"cannot compare {from_state!r} with {to_state!r}: different state machines"
        )
    return from_state in to_state.valid_previous_states
