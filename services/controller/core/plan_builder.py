"""PlanBuilder: the scratchpad both state machines fill while deciding one batch.

It layers the batch's own pending changes over the read-only context, so a later step in the same
batch sees an earlier one (two replicas of a partition going offline together shrink the ISR
once, in one write, with one leader-epoch bump), and it folds everything into one immutable
``StateChangePlan`` with at most one write per partition-state key.
"""

from __future__ import annotations

from leasehold.statechange import StateChangeRecord
from services.controller.core.context import ControllerContext
from services.controller.core.model import (
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.core.plan import (
    AssignmentChange,
    BrokerRequestIntent,
    FailureCode,
    PartitionStateWrite,
    PartitionTransition,
    ReplicaTransition,
    StateChangeFailure,
    StateChangePlan,
)
from services.controller.core.selectors import ElectionError
from services.controller.core.states import PartitionState, ReplicaState


class PlanBuilder:
    def __init__(self, ctx: ControllerContext, now_ms: int) -> None:
        self.ctx = ctx
        self.now_ms = now_ms
        self._writes: dict[TopicPartition, tuple[LeaderAndIsr, bool]] = {}
        self._assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self._partition_transitions: list[PartitionTransition] = []
        self._replica_transitions: list[ReplicaTransition] = []
        self._requests: list[BrokerRequestIntent] = []
        self._failures: list[StateChangeFailure] = []
        self._records: list[StateChangeRecord] = []
        # False: replica transitions that keep the state (X -> X) are not recorded.
        self.record_unchanged = True

    # ---- reads that see this batch's pending changes ---------------------------------------
    def leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        pending = self._writes.get(tp)
        return pending[0] if pending is not None else self.ctx.leader_and_isr(tp)

    def committed_leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        """The value in etcd as the context knows it (the compare-and-set base)."""
        return self.ctx.leader_and_isr(tp)

    def assignment(self, tp: TopicPartition) -> ReplicaAssignment | None:
        if tp in self._assignments:
            return self._assignments[tp]
        return self.ctx.assignment(tp)

    # ---- accumulation ----------------------------------------------------------------------
    def write(self, tp: TopicPartition, lai: LeaderAndIsr, *, create: bool) -> LeaderAndIsr:
        """Record the new state of ``tp``; a second write in the batch replaces the first.

        Stamps the controller epoch and keeps the committed partition epoch as the expected one.
        Returns the value as it will be written.
        """
        committed = self.ctx.leader_and_isr(tp)
        expected = 0 if create or committed is None else committed.partition_epoch
        value = lai.with_epochs(
            controller_epoch=self.ctx.controller_epoch, partition_epoch=expected
        )
        self._writes[tp] = (value, create)
        return value

    def change_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self._assignments[tp] = assignment

    def request(self, intent: BrokerRequestIntent) -> None:
        self._requests.append(intent)

    def partition_transition(
        self,
        tp: TopicPartition,
        from_state: PartitionState,
        to_state: PartitionState,
        reason: str,
    ) -> None:
        self._partition_transitions.append(PartitionTransition(tp, from_state, to_state))
        self.partition_record(tp, from_state.value, to_state.value, reason)

    def partition_record(
        self, tp: TopicPartition, from_state: str, to_state: str, reason: str
    ) -> None:
        lai = self.leader_and_isr(tp)
        self._records.append(
            StateChangeRecord(
                ts_ms=self.now_ms,
                kind="partition",
                controller_id=self.ctx.controller_id,
                controller_epoch=self.ctx.controller_epoch,
                topic=tp.topic,
                partition=tp.partition,
                from_state=from_state,
                to_state=to_state,
                leader=lai.leader if lai is not None else -1,
                leader_epoch=lai.leader_epoch if lai is not None else -1,
                isr=lai.isr if lai is not None else (),
                reason=reason,
            )
        )

    def replica_transition(
        self,
        replica: PartitionReplica,
        from_state: ReplicaState,
        to_state: ReplicaState,
        reason: str,
    ) -> None:
        self._replica_transitions.append(ReplicaTransition(replica, from_state, to_state))
        if from_state is to_state and not self.record_unchanged:
            return
        lai = self.leader_and_isr(replica.tp)
        self._records.append(
            StateChangeRecord(
                ts_ms=self.now_ms,
                kind="replica",
                controller_id=self.ctx.controller_id,
                controller_epoch=self.ctx.controller_epoch,
                topic=replica.topic,
                partition=replica.partition,
                replica=replica.replica,
                from_state=from_state.value,
                to_state=to_state.value,
                leader=lai.leader if lai is not None else -1,
                leader_epoch=lai.leader_epoch if lai is not None else -1,
                isr=lai.isr if lai is not None else (),
                reason=reason,
            )
        )

    def fail(
        self,
        tp: TopicPartition,
        replica: int,
        from_state: PartitionState | ReplicaState,
        to_state: PartitionState | ReplicaState,
        code: FailureCode,
        reason: str,
        election_error: ElectionError | None = None,
    ) -> None:
        self._failures.append(
            StateChangeFailure(tp, replica, from_state, to_state, code, reason, election_error)
        )

    def _build_write(self, tp: TopicPartition) -> PartitionStateWrite:
        value, create = self._writes[tp]
        assignment = self.assignment(tp)
        return PartitionStateWrite(
            tp=tp,
            leader_and_isr=value,
            expected_partition_epoch=value.partition_epoch,
            create=create,
            assignment=assignment if assignment is not None else ReplicaAssignment(()),
        )

    def build(self) -> StateChangePlan:
        return StateChangePlan(
            controller_epoch=self.ctx.controller_epoch,
            writes=tuple(self._build_write(tp) for tp in sorted(self._writes)),
            partition_transitions=tuple(self._partition_transitions),
            replica_transitions=tuple(self._replica_transitions),
            assignment_changes=tuple(
                AssignmentChange(tp, self._assignments[tp]) for tp in sorted(self._assignments)
            ),
            requests=tuple(self._requests),
            failures=tuple(self._failures),
            records=tuple(self._records),
        )
