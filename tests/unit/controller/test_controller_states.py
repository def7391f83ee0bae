"""Every (from, to) pair of both state machines against the legal sets written out by hand."""

from __future__ import annotations

import itertools

import pytest

from services.controller.core import PartitionState, ReplicaState, is_valid_transition

P = PartitionState
R = ReplicaState

# Seed 000 section 4 / seed 004 (and Kafka's PartitionStateMachine).
LEGAL_PARTITION = {
    (P.NON_EXISTENT, P.NEW),
    (P.NEW, P.ONLINE),
    (P.ONLINE, P.ONLINE),
    (P.OFFLINE, P.ONLINE),
    (P.NEW, P.OFFLINE),
    (P.ONLINE, P.OFFLINE),
    (P.OFFLINE, P.OFFLINE),
    (P.OFFLINE, P.NON_EXISTENT),
}

# Seed 000 section 5, plus Offline -> DeletionIneligible (the seed's own deletion flow; Kafka 1.1+).
LEGAL_REPLICA = {
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


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(P, P)))
def test_partition_transition_table(src: PartitionState, dst: PartitionState) -> None:
    assert is_valid_transition(src, dst) is ((src, dst) in LEGAL_PARTITION)


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(R, R)))
def test_replica_transition_table(src: ReplicaState, dst: ReplicaState) -> None:
    assert is_valid_transition(src, dst) is ((src, dst) in LEGAL_REPLICA)


@pytest.mark.parametrize(
    ("state", "name"),
    [
        (P.NON_EXISTENT, "NonExistentPartition"),
        (P.NEW, "NewPartition"),
        (P.ONLINE, "OnlinePartition"),
        (P.OFFLINE, "OfflinePartition"),
        (R.NEW, "NewReplica"),
        (R.ONLINE, "OnlineReplica"),
        (R.OFFLINE, "OfflineReplica"),
        (R.REPLICA_DELETION_STARTED, "ReplicaDeletionStarted"),
        (R.REPLICA_DELETION_SUCCESSFUL, "ReplicaDeletionSuccessful"),
        (R.REPLICA_DELETION_INELIGIBLE, "ReplicaDeletionIneligible"),
        (R.NON_EXISTENT, "NonExistentReplica"),
    ],
)
def test_state_names_are_kafkas(state: PartitionState | ReplicaState, name: str) -> None:
    assert state.value == name


def test_mixing_machines_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        is_valid_transition(P.OFFLINE, R.OFFLINE)  # type: ignore[type-var]
