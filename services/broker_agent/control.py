"""The pure decisions of the control requests (seed 001 §3): which requests and partitions apply.

Two fences guard every control request. The broker epoch (KIP-380) rejects requests a controller
addressed to an earlier incarnation of this broker; the controller epoch rejects a deposed
controller. Past those, each LeaderAndIsr partition applies only with a newer leader epoch, and
each StopReplica partition only with an epoch not older than the one this replica knows. Keeping
these rules here, free of I/O, lets the tests state them as tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from services.broker_agent.model import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    Code,
    LeaderAndIsrPartition,
)


class Hosted(Enum):
    """How this broker holds a partition (Kafka's HostedPartition)."""

    NONE = "none"  # not hosted (yet)
    ONLINE = "online"
    OFFLINE = "offline"  # its log directory failed


class Transition(Enum):
    BECOME_LEADER = "leader"
    BECOME_FOLLOWER = "follower"


def is_broker_epoch_stale(request_epoch: int, current_epoch: int) -> bool:
    """True when the controller addressed an older incarnation of this broker.

    An unknown epoch (-1) is never stale. A request epoch above ours is accepted: the controller
    may learn of our re-registration before our own registration call returns.
    """
    if request_epoch == UNKNOWN_BROKER_EPOCH:
        return False
    return request_epoch < current_epoch


def check_request(
    *,
    request_controller_epoch: int,
    known_controller_epoch: int,
    request_broker_epoch: int,
    current_broker_epoch: int,
) -> Code:
    """Whole-request fencing, in Kafka's order: broker epoch first, then controller epoch."""
    if is_broker_epoch_stale(request_broker_epoch, current_broker_epoch):
        return Code.STALE_BROKER_EPOCH
    if request_controller_epoch < known_controller_epoch:
        return Code.STALE_CONTROLLER_EPOCH
    return Code.NONE


def check_sender(
    *, request_epoch: int, request_controller_id: int, etcd_epoch: int, etcd_holder: int
) -> Code:
    """Whether a control request comes from the controller etcd shows holding its epoch.

    An epoch etcd has not reached, or the epoch's holder not being the sender, is NOT_CONTROLLER;
    an epoch etcd has moved past is STALE_CONTROLLER_EPOCH (``control_fence`` explains why).
    """
    if request_epoch > etcd_epoch:
        return Code.NOT_CONTROLLER
    if request_epoch < etcd_epoch:
        return Code.STALE_CONTROLLER_EPOCH
    if request_controller_id != etcd_holder:
        return Code.NOT_CONTROLLER
    return Code.NONE


@dataclass(frozen=True)
class PartitionDecision:
    """Apply with ``transition``, or answer ``error`` and change nothing."""

    transition: Transition | None = None
    error: Code = Code.NONE


# The five possible answers, shared (they are frozen values): a 10,000-partition LeaderAndIsr
# asks once per partition.
_OFFLINE = PartitionDecision(error=Code.KAFKA_STORAGE_ERROR)
_STALE = PartitionDecision(error=Code.STALE_CONTROLLER_EPOCH)
_NOT_A_REPLICA = PartitionDecision(error=Code.UNKNOWN_TOPIC_OR_PARTITION)
_LEAD = PartitionDecision(transition=Transition.BECOME_LEADER)
_FOLLOW = PartitionDecision(transition=Transition.BECOME_FOLLOWER)


def leader_and_isr_decision(
    state: LeaderAndIsrPartition,
    *,
    hosted: Hosted,
    current_leader_epoch: int,
    local_broker_id: int,
) -> PartitionDecision:
    """What one LeaderAndIsr partition state does to this broker's replica.

    - offline log directory: KAFKA_STORAGE_ERROR;
    - a newer leader epoch applies, provided this broker is one of the replicas (otherwise
      UNKNOWN_TOPIC_OR_PARTITION);
    - an equal or older leader epoch is ignored with STALE_CONTROLLER_EPOCH, as Kafka answers.

    ``current_leader_epoch`` is -1 for a partition not hosted yet, so any real epoch applies.
    """
    if hosted is Hosted.OFFLINE:
        return _OFFLINE
    if state.leader_epoch <= current_leader_epoch:
        return _STALE
    if local_broker_id not in state.replicas:
        return _NOT_A_REPLICA
    if state.leader == local_broker_id:
        return _LEAD
    return _FOLLOW


def stop_replica_decision(
    *, hosted: Hosted, current_leader_epoch: int, request_leader_epoch: int
) -> Code:
    """NONE when the replica should stop, else the error to answer (Kafka's stopReplicas).

    The sentinels -2 (topic being deleted; the controller does not bump the epoch for that) and
    -1 (no epoch) bypass the check; otherwise an epoch older than ours is FENCED_LEADER_EPOCH.
    A partition this broker does not host still "stops" (its files may be left from a deletion
    that happened while we were down).
    """
    if hosted is Hosted.OFFLINE:
        return Code.KAFKA_STORAGE_ERROR
    if hosted is Hosted.NONE:
        return Code.NONE
    if request_leader_epoch in (EPOCH_DURING_DELETE, NO_EPOCH):
        return Code.NONE
    if request_leader_epoch >= current_leader_epoch:
        return Code.NONE
    return Code.FENCED_LEADER_EPOCH


def leader_epoch_check(request_epoch: int, current_epoch: int) -> Code:
    """KIP-359/KIP-320 check of a client's or follower's view of the leader epoch.

    -1 skips the check; an older epoch is FENCED_LEADER_EPOCH (the caller has stale metadata), a
    newer one UNKNOWN_LEADER_EPOCH (this broker has not heard of it yet).
    """
    if request_epoch == NO_EPOCH or request_epoch == current_epoch:
        return Code.NONE
    if request_epoch < current_epoch:
        return Code.FENCED_LEADER_EPOCH
    return Code.UNKNOWN_LEADER_EPOCH
