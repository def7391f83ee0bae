"""Reassignment's pure decisions (``core/reassignment.py``) as named tables."""

from __future__ import annotations

import pytest

from leasehold.common.v1 import common_pb2
from services.controller.core import LeaderAndIsr, ReplicaAssignment, TopicPartition
from services.controller.core.reassignment import (
    LeaderStep,
    ReassignmentRequestView,
    Step,
    completion_leader_step,
    next_step,
)

TP = TopicPartition("t", 0)
E = common_pb2


def lai(leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
    return LeaderAndIsr(leader, 4, isr, 2, 17)


def to(*replicas: int) -> ReassignmentRequestView:
    return ReassignmentRequestView(replicas)


CANCEL = ReassignmentRequestView(cancel=True)
MOVING = ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))  # OAR {1,2,3} -> RAR {4,5,6}

# (current assignment, leader/ISR, request, deleting) -> (step, new assignment, unneeded, error)
NEXT_STEP = [
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(4, 5, 6), False,
        (Step.START, MOVING, (), 0), id="start-oar-to-rar",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(1, 2, 3), False,
        (Step.ALREADY_THERE, None, (), 0), id="target-is-current-nothing-moves",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(3, 2, 1), False,
        (Step.COMPLETE, ReplicaAssignment((3, 2, 1), (), ()), (), 0),
        id="reorder-only-completes-at-once",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(2, 3, 4), False,
        (Step.START, ReplicaAssignment((2, 3, 4, 1), (4,), (1,)), (), 0),
        id="one-replica-moves",
    ),
    pytest.param(
        MOVING, lai(1, (1, 2, 3, 4, 5, 6)), None, False,
        (Step.COMPLETE, MOVING, (), 0), id="recorded-without-intent-caught-up-completes",
    ),
    pytest.param(
        MOVING, lai(1, (1, 2, 3, 4)), None, False,
        (Step.START, MOVING, (), 0), id="recorded-without-intent-still-copying",
    ),
    pytest.param(
        MOVING, lai(1, (1, 2, 3)), to(7, 8, 9), False,
        (Step.START, ReplicaAssignment((7, 8, 9, 1, 2, 3), (7, 8, 9), (1, 2, 3)), (4, 5, 6), 0),
        id="redirected-replicas-being-added-are-unneeded",
    ),
    pytest.param(
        MOVING, lai(1, (1, 2, 3)), CANCEL, False,
        (Step.COMPLETE, ReplicaAssignment((1, 2, 3)), (4, 5, 6), 0),
        id="cancel-returns-to-origin",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), CANCEL, False,
        (Step.REJECT, None, (), E.ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS),
        id="cancel-with-nothing-in-progress",
    ),
    pytest.param(
        None, None, to(1, 2), False,
        (Step.REJECT, None, (), E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION), id="unknown-partition",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(4, 5), True,
        (Step.REJECT, None, (), E.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS), id="topic-being-deleted",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(4, 4), False,
        (Step.REJECT, None, (), E.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT), id="duplicate-target",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), lai(1, (1, 2, 3)), to(), False,
        (Step.REJECT, None, (), E.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT), id="empty-target",
    ),
    pytest.param(
        ReplicaAssignment((1, 2, 3)), None, to(4, 5, 6), False,
        (Step.REJECT, None, (), E.ERROR_CODE_LEADER_NOT_AVAILABLE), id="no-leader-yet",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("current", "leadership", "request_", "deleting", "expected"), NEXT_STEP)
def test_next_step(current, leadership, request_, deleting, expected) -> None:
    d = next_step(TP, current, leadership, request_, deleting=deleting)
    assert (d.step, d.assignment, d.unneeded, d.error_code) == expected
    assert bool(d.message) == (d.step is Step.REJECT)


def online(*ids: int):
    return frozenset(ids).__contains__


# (assignment, leader/ISR, online brokers) -> how leadership settles at completion (step B3)
LEADER_STEP = [
    pytest.param(MOVING, lai(1, (1, 2, 3, 4, 5, 6)), online(1, 4, 5, 6), LeaderStep.ELECT,
                 id="leader-leaving-elect-from-rar"),
    pytest.param(MOVING, lai(4, (1, 2, 3, 4, 5, 6)), online(4, 5, 6), LeaderStep.BUMP_EPOCH,
                 id="leader-in-rar-stays-epoch-bumped"),
    pytest.param(MOVING, lai(4, (4, 5, 6)), online(5, 6), LeaderStep.ELECT,
                 id="leader-in-rar-but-down-elect"),
]  # fmt: skip


@pytest.mark.parametrize(("assignment", "leadership", "is_online", "expected"), LEADER_STEP)
def test_completion_leader_step(assignment, leadership, is_online, expected) -> None:
    assert completion_leader_step(assignment, leadership, is_online) is expected
