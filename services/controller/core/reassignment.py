"""Reassignment's decisions (seed 002, KIP-455), pure: what a request asks, where a partition's
reassignment goes next, and how its leadership is settled when it completes.

``flows/reassignment.py`` carries them out (commits, requests, etcd side effects) in the order
of seed 002's table; these functions decide between the awaits, from values only, and are
tested as tables (``tests/unit/controller/test_reassignment_decisions.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from leasehold.common.v1 import common_pb2
from services.controller.core.model import LeaderAndIsr, ReplicaAssignment, TopicPartition

_E = common_pb2


@dataclass(frozen=True)
class ReassignmentRequestView:
    """What a stored reassignment intent asks: a target, or a cancellation."""

    target_replicas: tuple[int, ...] = ()
    cancel: bool = False


class Step(Enum):
    """Where a partition's reassignment goes next."""

    REJECT = "reject"  # answer the intent with an error; nothing moves
    ALREADY_THERE = "already_there"  # answer success; nothing moves
    START = "start"  # record the new assignment, add the new replicas, wait for them to catch up
    COMPLETE = "complete"  # the target replicas are in sync: finish (steps B1-B8)


@dataclass(frozen=True)
class ReassignmentDecision:
    step: Step
    assignment: ReplicaAssignment | None = None  # the new assignment (START and COMPLETE)
    unneeded: tuple[int, ...] = ()  # replicas a redirect or cancellation no longer wants
    error_code: int = 0
    message: str = ""


def target_of(
    tp: TopicPartition,
    current: ReplicaAssignment | None,
    request: ReassignmentRequestView | None,
    *,
    deleting: bool,
) -> tuple[tuple[int, ...] | None, int, str]:
    """``(target, error code, message)`` for a partition's request; with no request (a
    reassignment recorded in etcd without its intent) the recorded target."""
    if current is None:
        return None, _E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp}."
    if deleting:
        return None, _E.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS, f"Topic {tp.topic} is being deleted."
    if request is None:
        return current.target_replicas, 0, ""
    if request.cancel:
        if not current.is_being_reassigned:
            return (
                None,
                _E.ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS,
                f"No reassignment of {tp} is in progress.",
            )
        return current.origin_replicas, 0, ""
    target = tuple(request.target_replicas)
    if not target or len(set(target)) != len(target):
        return None, _E.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT, f"Bad replicas {list(target)}."
    return target, 0, ""


def is_complete(assignment: ReplicaAssignment, lai: LeaderAndIsr | None) -> bool:
    """No reassignment, or every target replica is in the ISR."""
    return not assignment.is_being_reassigned or (
        lai is not None and set(assignment.target_replicas) <= set(lai.isr)
    )


def next_step(
    tp: TopicPartition,
    current: ReplicaAssignment | None,
    lai: LeaderAndIsr | None,
    request: ReassignmentRequestView | None,
    *,
    deleting: bool,
) -> ReassignmentDecision:
    """Kafka's ``onPartitionReassignment`` decision for one partition."""
    target, code, message = target_of(tp, current, request, deleting=deleting)
    if target is None or current is None:
        return ReassignmentDecision(Step.REJECT, error_code=code, message=message)
    if lai is None:
        return ReassignmentDecision(
            Step.REJECT,
            error_code=_E.ERROR_CODE_LEADER_NOT_AVAILABLE,
            message=f"{tp} has no leader yet.",
        )
    new = current.reassign_to(target)
    if new == current and not new.is_being_reassigned:
        return ReassignmentDecision(Step.ALREADY_THERE)
    unneeded = tuple(r for r in current.replicas if r not in new.replicas)
    step = Step.COMPLETE if is_complete(new, lai) else Step.START
    return ReassignmentDecision(step, new, unneeded)


class LeaderStep(Enum):
    """How a completing reassignment settles leadership (step B3)."""

    ELECT = "elect"  # the leader is leaving or down: elect one from the target replicas
    BUMP_EPOCH = "bump_epoch"  # the leader stays: a new leader epoch tells the replicas


def completion_leader_step(
    assignment: ReplicaAssignment, lai: LeaderAndIsr, is_online: Callable[[int], bool]
) -> LeaderStep:
    if lai.leader not in assignment.target_replicas or not is_online(lai.leader):
        return LeaderStep.ELECT
    return LeaderStep.BUMP_EPOCH
