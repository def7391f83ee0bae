"""PlanBuilder: the scratchpad both state machines fill while deciding one batch.

It layers the batch's own pending changes over the read-only context, so a later step in the same
batch sees an earlier one (two replicas of a partition going offline together shrink the ISR
once, in one write, with one leader-epoch bump), and it folds everything into one immutable
``StateChangePlan`` with at most one write per partition-state key.

A broker failure or controlled shutdown at 10,000 partitions runs every method here tens of
thousands of times in one event, before any broker hears of it: the state-change records are
built without the frozen dataclass ``__init__`` (``transition_record``), and the value the
election already stamped is written as is rather than copied again.
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


def transition_record(
    kind: str,
    ts_ms: int,
    controller_id: int,
    controller_epoch: int,
    tp: TopicPartition,
    replica: int,
    from_state: str,
    to_state: str,
    lai: LeaderAndIsr | None,
    reason: str,
) -> StateChangeRecord:
    """A partition or replica ``StateChangeRecord`` (every field set, as the constructor would
    with these arguments and the other fields' defaults) for about a third of the frozen
    dataclass ``__init__``'s cost, in the manner of ``model._derived_leader_and_isr``."""
    record = object.__new__(StateChangeRecord)
    record.__dict__.update(
        ts_ms=ts_ms,
        kind=kind,
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        topic=tp.topic,
        partition=tp.partition,
        replica=replica,
        from_state=from_state,
        to_state=to_state,
        leader=lai.leader if lai is not None else -1,
        leader_epoch=lai.leader_epoch if lai is not None else -1,
        isr=lai.isr if lai is not None else (),
        reason=reason,
        event="",
        broker_id=-1,
        duration_ms=-1.0,
        trace_id="",
        detected_ms=-1,
        lease_ttl_ms=-1,
        registered_ms=-1,
    )
    return record


class PlanBuilder:
    def __init__(self, ctx: ControllerContext, now_ms: int) -> None:
        self.ctx = ctx
        self.now_ms = now_ms
        self._leadership = ctx.leader_and_isr  # bound once: read for every record
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
        return pending[0] if pending is not None else self._leadership(tp)

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
        epoch = self.ctx.controller_epoch
        if lai.controller_epoch == epoch and lai.partition_epoch == expected:
            value = lai  # already stamped (an election's result): immutable, no copy needed
        else:
            value = lai.with_epochs(controller_epoch=epoch, partition_epoch=expected)
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
        # ``_value_`` is the member's own attribute; ``value`` is a Python-level property.
        self.partition_record(tp, from_state._value_, to_state._value_, reason)

    def partition_record(
        self, tp: TopicPartition, from_state: str, to_state: str, reason: str
    ) -> None:
        ctx = self.ctx
        self._records.append(
            transition_record(
                "partition",
                self.now_ms,
                ctx.controller_id,
                ctx.controller_epoch,
                tp,
                -1,
                from_state,
                to_state,
                self.leader_and_isr(tp),
                reason,
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
        ctx = self.ctx
        tp = replica.tp
        self._records.append(
            transition_record(
                "replica",
                self.now_ms,
                ctx.controller_id,
                ctx.controller_epoch,
                tp,
                replica.replica,
                from_state._value_,
                to_state._value_,
                self.leader_and_isr(tp),
                reason,
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
