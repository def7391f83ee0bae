"""The replicas of a simulated broker: a leader and a leader epoch per partition, no logs.

The fences, per-partition decisions, UpdateMetadata and answers are ``ControlState``'s, the
real broker's; only what a decided role change does differs: the real broker opens logs, makes
files durable and starts fetchers, a simulated one records the new leader and epoch. The
per-partition record is a two-slot object, so a process can hold millions of them.
"""

from __future__ import annotations

from services.broker_agent.control_state import ControlState, Errors, classify, confirmed
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplicaPartition,
    TopicPartition,
)


class SimulatedReplica:
    """A hosted partition as the control plane sees it."""

    __slots__ = ("leader_epoch", "is_leader")

    def __init__(self, leader_epoch: int, is_leader: bool) -> None:
        self.leader_epoch = leader_epoch
        self.is_leader = is_leader


class SimulatedReplicas(ControlState):
    """``ControlState`` whose role changes are recorded, not applied to logs."""

    partitions: dict[TopicPartition, SimulatedReplica]

    def __init__(self, broker_id: int, metadata: MetadataCache) -> None:
        super().__init__(broker_id, metadata)
        self.partitions = {}
        self.leading = 0  # partitions led here, kept as roles change (polled often)

    def leader_count(self) -> int:
        return sum(1 for r in self.partitions.values() if r.is_leader)

    def _set_role(self, replica: SimulatedReplica, leading: bool) -> None:
        self.leading += leading - replica.is_leader
        replica.is_leader = leading

    async def _apply_leader_and_isr(self, request: LeaderAndIsr) -> ControlResult:
        errors: Errors = {}
        to_lead, to_follow = await classify(self, request.partitions, errors)
        to_lead, to_follow = await confirmed(self, to_lead, to_follow, errors)
        partitions = self.partitions
        none = Code.NONE
        for states, leading in ((to_lead, True), (to_follow, False)):
            for s in states:
                tp = s.tp
                replica = partitions.get(tp)
                if replica is None:
                    partitions[tp] = SimulatedReplica(s.leader_epoch, leading)
                    self.leading += leading
                else:
                    replica.leader_epoch = s.leader_epoch
                    self._set_role(replica, leading)
                errors[tp] = none
        return ControlResult(Code.NONE, partition_errors=tuple(errors.items()))

    async def _stop_partitions(self, stopping: list[StopReplicaPartition], errors: Errors) -> None:
        for ps in stopping:
            replica = self.partitions.get(ps.tp)
            if replica is None:
                continue
            self._set_role(replica, False)
            if ps.delete:
                del self.partitions[ps.tp]

    def _metadata_deleted(self, deleted: list[TopicPartition]) -> None:
        """Nothing waits on a simulated replica (no produce or fetch)."""
