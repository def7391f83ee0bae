"""The five leader selectors with exact leader, ISR, epochs, recovery state and recipients."""

from __future__ import annotations

import pytest

from services.controller.core import (
    ElectionError,
    ElectionFailure,
    ElectionResult,
    LeaderAndIsr,
    elect_controlled_shutdown,
    elect_noop,
    elect_offline,
    elect_preferred,
    elect_reassigned,
)


def lai(leader: int, isr: tuple[int, ...], *, epoch: int = 5, recovering: bool = False):
    """Current state: controller epoch 3 and partition epoch 42 must survive every selector."""
    return LeaderAndIsr(leader, epoch, isr, 3, 42, recovering)


def online(*ids: int):
    return frozenset(ids).__contains__


E = ElectionError

OFFLINE_CASES = [
    pytest.param(
        lai(1, (1, 2, 3)),
        (1, 2, 3),
        online(2, 3),
        False,
        ElectionResult(lai(2, (2, 3), epoch=6), (2, 3)),
        id="leader-dead-next-isr-member-leads-dead-leaves-isr",
    ),
    pytest.param(
        lai(-1, (1, 2, 3)),
        (3, 1, 2),
        online(1, 2, 3),
        False,
        ElectionResult(lai(3, (1, 2, 3), epoch=6), (3, 1, 2)),
        id="assignment-order-not-isr-order",
    ),
    pytest.param(
        lai(1, (1, 3)),
        (1, 2, 3),
        online(2, 3),
        False,
        ElectionResult(lai(3, (3,), epoch=6), (2, 3)),
        id="live-non-isr-replica-skipped-but-told",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (1, 2, 3),
        online(3),
        True,
        ElectionResult(lai(3, (3,), epoch=6, recovering=True), (3,), unclean=True),
        id="unclean-allowed-first-live-replica-leads-alone-recovering",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (1, 2, 3),
        online(3),
        False,
        ElectionFailure(E.ELIGIBLE_LEADERS_NOT_AVAILABLE, ""),
        id="unclean-disallowed",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (1, 2, 3),
        online(),
        True,
        ElectionFailure(E.ELIGIBLE_LEADERS_NOT_AVAILABLE, ""),
        id="all-replicas-dead-even-unclean",
    ),
    pytest.param(
        lai(1, (1,)),
        (),
        online(1),
        True,
        ElectionFailure(E.NO_REPLICAS_ASSIGNED, ""),
        id="no-assignment",
    ),
    pytest.param(
        lai(1, (1, 2), recovering=True),
        (1, 2),
        online(2),
        False,
        ElectionResult(lai(2, (2,), epoch=6, recovering=True), (2,)),
        id="clean-election-keeps-recovering",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (1, 2),
        online(1, 2),
        False,
        ElectionResult(lai(1, (1, 2), epoch=6), (1, 2)),
        id="leader-still-live-re-elected-with-new-epoch",
    ),
]


@pytest.mark.parametrize(
    ("current", "assignment", "is_online", "unclean", "expected"), OFFLINE_CASES
)
def test_offline_selector(current, assignment, is_online, unclean, expected) -> None:
    assert elect_offline(current, assignment, is_online, unclean) == expected


REASSIGN_CASES = [
    pytest.param(
        lai(1, (1, 2, 3, 4, 5)),
        (4, 5, 6),
        online(1, 2, 3, 4, 5, 6),
        ElectionResult(lai(4, (1, 2, 3, 4, 5), epoch=6), (4, 5, 6)),
        id="first-target-in-isr-isr-kept-all-targets-told",
    ),
    pytest.param(
        lai(1, (1, 4, 5)),
        (4, 5, 6),
        online(1, 5, 6),
        ElectionResult(lai(5, (1, 4, 5), epoch=6), (4, 5, 6)),
        id="offline-target-skipped",
    ),
    pytest.param(
        lai(1, (1, 4, 6)),
        (4, 5, 6),
        online(1, 5, 6),
        ElectionResult(lai(6, (1, 4, 6), epoch=6), (4, 5, 6)),
        id="online-but-out-of-sync-target-skipped",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (4, 5, 6),
        online(1, 2, 4, 5, 6),
        ElectionFailure(E.ELIGIBLE_LEADERS_NOT_AVAILABLE, ""),
        id="no-target-in-isr",
    ),
    pytest.param(
        lai(1, (1, 2)),
        (),
        online(1, 2),
        ElectionFailure(E.NO_REPLICAS_ASSIGNED, ""),
        id="empty-target",
    ),
]


@pytest.mark.parametrize(("current", "target", "is_online", "expected"), REASSIGN_CASES)
def test_reassigned_selector(current, target, is_online, expected) -> None:
    assert elect_reassigned(current, target, is_online) == expected


PREFERRED_CASES = [
    pytest.param(
        lai(2, (1, 2, 3)),
        (1, 2, 3),
        online(1, 2),
        ElectionResult(lai(1, (1, 2, 3), epoch=6), (1, 2, 3)),
        id="preferred-leads-every-assigned-replica-told",
    ),
    pytest.param(
        lai(1, (1, 2, 3)),
        (1, 2, 3),
        online(1, 2, 3),
        ElectionFailure(E.ELECTION_NOT_NEEDED, ""),
        id="already-preferred",
    ),
    pytest.param(
        lai(2, (1, 2, 3)),
        (1, 2, 3),
        online(2, 3),
        ElectionFailure(E.PREFERRED_LEADER_NOT_AVAILABLE, ""),
        id="preferred-offline",
    ),
    pytest.param(
        lai(2, (2, 3)),
        (1, 2, 3),
        online(1, 2, 3),
        ElectionFailure(E.PREFERRED_LEADER_NOT_AVAILABLE, ""),
        id="preferred-out-of-isr",
    ),
    pytest.param(
        lai(2, (2,)),
        (),
        online(2),
        ElectionFailure(E.NO_REPLICAS_ASSIGNED, ""),
        id="no-assignment",
    ),
]


@pytest.mark.parametrize(("current", "assignment", "is_online", "expected"), PREFERRED_CASES)
def test_preferred_selector(current, assignment, is_online, expected) -> None:
    assert elect_preferred(current, assignment, is_online) == expected


SHUTDOWN_CASES = [
    pytest.param(
        lai(1, (1, 2, 3)),
        (1, 2, 3),
        online(1, 2, 3),
        {1},
        ElectionResult(lai(2, (2, 3), epoch=6), (1, 2, 3)),
        id="leader-shutting-down-moves-and-leaves-isr",
    ),
    pytest.param(
        lai(2, (1, 2, 3)),
        (1, 2, 3),
        online(1, 2, 3),
        {3},
        ElectionResult(lai(1, (1, 2), epoch=6), (1, 2, 3)),
        id="first-assigned-in-new-isr-leads",
    ),
    pytest.param(
        lai(1, (1, 2, 3)),
        (1, 2, 3),
        online(1, 2, 3),
        {1, 2},
        ElectionResult(lai(3, (3,), epoch=6), (1, 2, 3)),
        id="two-shutting-down",
    ),
    pytest.param(
        lai(1, (1, 2, 3)),
        (1, 2, 3),
        online(1, 3),
        {1},
        ElectionResult(lai(3, (2, 3), epoch=6), (1, 3)),
        id="dead-replica-not-told-and-cannot-lead",
    ),
    pytest.param(
        lai(1, (1,)),
        (1, 2, 3),
        online(1, 2, 3),
        {1},
        ElectionFailure(E.ELIGIBLE_LEADERS_NOT_AVAILABLE, ""),
        id="only-shutting-down-broker-in-isr",
    ),
]


@pytest.mark.parametrize(
    ("current", "assignment", "is_online_or_sd", "shutting_down", "expected"), SHUTDOWN_CASES
)
def test_controlled_shutdown_selector(
    current, assignment, is_online_or_sd, shutting_down, expected
) -> None:
    assert (
        elect_controlled_shutdown(current, assignment, is_online_or_sd, shutting_down) == expected
    )


def test_noop_selector_keeps_everything() -> None:
    current = lai(2, (2, 3), recovering=True)
    assert elect_noop(current, (1, 2, 3)) == ElectionResult(current, (1, 2, 3))


@pytest.mark.parametrize(
    ("failure", "fragment"),
    [
        (
            elect_offline(lai(1, (1,)), (1, 2), online(2), False),
            "unclean leader election is disabled",
        ),
        (elect_offline(lai(1, (1,)), (1, 2), online(), True), "no assigned replica"),
        (elect_reassigned(lai(1, (1,)), (4,), online(4)), "none of the target replicas"),
        (elect_preferred(lai(1, (1,)), (1,), online(1)), "already leads"),
    ],
)
def test_failure_reasons_are_explicit(failure: ElectionFailure, fragment: str) -> None:
    assert isinstance(failure, ElectionFailure)
    assert fragment in failure.reason
