"""What a state-machine decision returns: a ``StateChangePlan`` (decide, then commit, then apply).

A plan changes nothing by itself. The commit layer turns ``writes`` into fenced etcd transactions
(one compare-and-set per partition-state key: ``mod_revision == expected_partition_epoch``, with
0 meaning "must not exist yet" for a create); after a successful commit the context applies the
plan (``ControllerContext.apply_plan``) and only then are the broker requests queued
(``RequestBatch.add_plan``), which read the freshly applied leader/ISR so every LeaderAndIsr
carries the committed partition epoch.

Items that could not change (an illegal transition, no eligible leader, ...) are listed in
``failures`` and left out of everything else, so the rest of the batch still goes through.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from enum import Enum

from leasehold.statechange import StateChangeRecord
from services.controller.core.model import (
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.core.selectors import ElectionError
from services.controller.core.states import PartitionState, ReplicaState


@dataclass(frozen=True)
class PartitionStateWrite:
    """One partition-state key to write with compare-and-set.

    ``leader_and_isr`` is the value to store; its ``partition_epoch`` is still the expected (old)
    one, the committed mod revision replaces it on apply. ``create`` is True for New -> Online,
    where the key must not exist (``expected_partition_epoch`` is then 0). ``assignment`` is the
    partition's assignment, whose adding/removing replicas the stored PartitionState carries.
    """

    tp: TopicPartition
    leader_and_isr: LeaderAndIsr
    expected_partition_epoch: int
    create: bool
    assignment: ReplicaAssignment


@dataclass(frozen=True)
class PartitionTransition:
    tp: TopicPartition
    from_state: PartitionState
    to_state: PartitionState


@dataclass(frozen=True)
class ReplicaTransition:
    replica: PartitionReplica
    from_state: ReplicaState
    to_state: ReplicaState


@dataclass(frozen=True)
class AssignmentChange:
    """An in-memory assignment update (a replica added on New -> Online or dropped on deletion)."""

    tp: TopicPartition
    assignment: ReplicaAssignment


@dataclass(frozen=True)
class LeaderAndIsrIntent:
    """Send the partition's leader/ISR (as applied in the context) to ``brokers``."""

    brokers: tuple[int, ...]
    tp: TopicPartition
    is_new: bool = False


@dataclass(frozen=True)
class StopReplicaIntent:
    brokers: tuple[int, ...]
    tp: TopicPartition
    delete: bool


@dataclass(frozen=True)
class UpdateMetadataIntent:
    brokers: tuple[int, ...]
    partitions: tuple[TopicPartition, ...]


BrokerRequestIntent = LeaderAndIsrIntent | StopReplicaIntent | UpdateMetadataIntent


class FailureCode(Enum):
    INVALID_TRANSITION = "INVALID_TRANSITION"
    NO_ASSIGNMENT = "NO_ASSIGNMENT"
    NO_LIVE_REPLICA = "NO_LIVE_REPLICA"
    ELECTION_FAILED = "ELECTION_FAILED"
    NO_LEADERSHIP_INFO = "NO_LEADERSHIP_INFO"
    STATE_ALREADY_EXISTS = "STATE_ALREADY_EXISTS"
    STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
    REPLICA_IS_LEADER = "REPLICA_IS_LEADER"
    COMMIT_FAILED = "COMMIT_FAILED"


@dataclass(frozen=True)
class StateChangeFailure:
    """One partition (``replica`` == -1) or replica that did not change, and why."""

    tp: TopicPartition
    replica: int
    from_state: PartitionState | ReplicaState
    to_state: PartitionState | ReplicaState
    code: FailureCode
    reason: str = field(compare=False)
    election_error: ElectionError | None = None


@dataclass(frozen=True)
class StateChangePlan:
    controller_epoch: int
    writes: tuple[PartitionStateWrite, ...] = ()
    partition_transitions: tuple[PartitionTransition, ...] = ()
    replica_transitions: tuple[ReplicaTransition, ...] = ()
    assignment_changes: tuple[AssignmentChange, ...] = ()
    requests: tuple[BrokerRequestIntent, ...] = ()
    failures: tuple[StateChangeFailure, ...] = ()
    records: tuple[StateChangeRecord, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when applying the plan would change nothing and queue nothing."""
        return not (
            self.writes
            or self.partition_transitions
            or self.replica_transitions
            or self.assignment_changes
            or self.requests
        )

    def drop_partitions(self, tps: Collection[TopicPartition], reason: str) -> StateChangePlan:
        """The plan without everything touching ``tps``, which become COMMIT_FAILED failures.

        For a commit layer whose transaction for some partitions failed: what did commit can
        still be applied and sent.
        """
        gone = frozenset(tps)
        if not gone:
            return self
        failures = list(self.failures)
        for t in self.partition_transitions:
            if t.tp in gone:
                failures.append(
                    StateChangeFailure(
                        t.tp, -1, t.from_state, t.to_state, FailureCode.COMMIT_FAILED, reason
                    )
                )
        for rt in self.replica_transitions:
            if rt.replica.tp in gone:
                failures.append(
                    StateChangeFailure(
                        rt.replica.tp,
                        rt.replica.replica,
                        rt.from_state,
                        rt.to_state,
                        FailureCode.COMMIT_FAILED,
                        reason,
                    )
                )
        requests: list[BrokerRequestIntent] = []
        for req in self.requests:
            if isinstance(req, UpdateMetadataIntent):
                kept = tuple(p for p in req.partitions if p not in gone)
                if kept or not req.partitions:
                    requests.append(replace(req, partitions=kept))
            elif req.tp not in gone:
                requests.append(req)
        return replace(
            self,
            writes=tuple(w for w in self.writes if w.tp not in gone),
            partition_transitions=tuple(t for t in self.partition_transitions if t.tp not in gone),
            replica_transitions=tuple(
                t for t in self.replica_transitions if t.replica.tp not in gone
            ),
            assignment_changes=tuple(a for a in self.assignment_changes if a.tp not in gone),
            requests=tuple(requests),
            failures=tuple(failures),
            records=tuple(
                r
                for r in self.records
                if r.kind not in ("partition", "replica")
                or TopicPartition(r.topic, r.partition) not in gone
            ),
        )
