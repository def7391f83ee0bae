"""Value types: ReplicaAssignment's reassignment helpers and LeaderAndIsr's transitions."""

from __future__ import annotations

import pytest

from services.controller.core import (
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    TopicPartition,
)

RA = ReplicaAssignment


@pytest.mark.parametrize(
    ("assignment", "origin", "target", "reassigning", "preferred"),
    [
        (RA((1, 2, 3)), (1, 2, 3), (1, 2, 3), False, 1),
        (RA((4, 5, 1, 2), adding=(4, 5), removing=(1, 2)), (1, 2), (4, 5), True, 4),
        (RA((3, 4, 1), adding=(4,), removing=()), (3, 1), (3, 4, 1), True, 3),
        (RA((3, 1), adding=(), removing=(1,)), (3, 1), (3,), True, 3),
        (RA(()), (), (), False, None),
    ],
)
def test_assignment_views(
    assignment: ReplicaAssignment,
    origin: tuple[int, ...],
    target: tuple[int, ...],
    reassigning: bool,
    preferred: int | None,
) -> None:
    assert assignment.origin_replicas == origin
    assert assignment.target_replicas == target
    assert assignment.is_being_reassigned is reassigning
    assert assignment.preferred_replica == preferred


@pytest.mark.parametrize(
    ("start", "target", "expected"),
    [
        # disjoint move: new replicas first, then the old ones
        (RA((1, 2, 3)), (4, 5, 6), RA((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))),
        # overlapping move
        (RA((1, 2, 3)), (3, 4, 5), RA((3, 4, 5, 1, 2), (4, 5), (1, 2))),
        # reorder only: nothing added or removed
        (RA((1, 2, 3)), (3, 2, 1), RA((3, 2, 1), (), ())),
        # redirecting a running reassignment keeps the origin replicas as the base
        (RA((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)), (7, 1), RA((7, 1, 2, 3), (7,), (2, 3))),
        # cancelling = reassigning back to the origin
        (RA((4, 1, 2), (4,), (1,)), (1, 2), RA((1, 2), (), ())),
    ],
)
def test_reassign_to(start: RA, target: tuple[int, ...], expected: RA) -> None:
    assert start.reassign_to(target) == expected


def test_remove_and_add_replica() -> None:
    a = RA((4, 5, 1, 2), adding=(4, 5), removing=(1, 2))
    assert a.remove_replica(5) == RA((4, 1, 2), (4,), (1, 2))
    assert a.remove_replica(1) == RA((4, 5, 2), (4, 5), (2,))
    assert a.remove_replica(9) == a
    assert RA((1, 2)).add_replica(3) == RA((1, 2, 3))
    assert RA((1, 2)).add_replica(2) == RA((1, 2))


@pytest.mark.parametrize(
    ("replicas", "adding", "removing"),
    [((1, 1, 2), (), ()), ((1, 2), (3,), ()), ((1, 2), (), (4,))],
)
def test_invalid_assignment_rejected(replicas, adding, removing) -> None:
    with pytest.raises(ValueError):
        RA(replicas, adding, removing)


def test_lists_become_tuples() -> None:
    lai = LeaderAndIsr(1, 0, [1, 2], 3)  # type: ignore[arg-type]
    assert lai.isr == (1, 2)
    assert hash(lai) == hash(LeaderAndIsr(1, 0, (1, 2), 3))
    assert RA([1, 2], [2], []).replicas == (1, 2)  # type: ignore[arg-type]


def test_leader_and_isr_changes() -> None:
    base = LeaderAndIsr(1, 7, (1, 2, 3), controller_epoch=4, partition_epoch=42)
    assert base.new_leader_and_isr(2, [2, 3]) == LeaderAndIsr(2, 8, (2, 3), 4, 42, False)
    assert base.new_leader(3) == LeaderAndIsr(3, 8, (1, 2, 3), 4, 42, False)
    assert base.new_recovering_leader_and_isr(3, (3,)) == LeaderAndIsr(3, 8, (3,), 4, 42, True)
    recovering = LeaderAndIsr(1, 7, (1,), 4, 42, recovering=True)
    # a clean change keeps KIP-704's recovery state; only the new leader clears it
    assert recovering.new_leader_and_isr(1, (1, 2)).recovering is True
    assert base.has_leader and not LeaderAndIsr(-1, 7, (1,), 4).has_leader


def test_derived_values_equal_constructed_ones() -> None:
    base = LeaderAndIsr(1, 7, [1, 2, 3], 4, 42)  # type: ignore[arg-type]
    derived = [
        base.new_leader_and_isr(2, [2, 3]),
        base.with_epochs(controller_epoch=9),
        base.with_epochs(partition_epoch=50),
        base.with_epochs(controller_epoch=9, partition_epoch=50),
        base.new_recovering_leader_and_isr(3, (3,)),
    ]
    constructed = [
        LeaderAndIsr(2, 8, (2, 3), 4, 42),
        LeaderAndIsr(1, 7, (1, 2, 3), 9, 42),
        LeaderAndIsr(1, 7, (1, 2, 3), 4, 50),
        LeaderAndIsr(1, 7, (1, 2, 3), 9, 50),
        LeaderAndIsr(3, 8, (3,), 4, 42, True),
    ]
    assert derived == constructed
    assert [hash(d) for d in derived] == [hash(c) for c in constructed]
    assert [repr(d) for d in derived] == [repr(c) for c in constructed]
    assert all(type(d.isr) is tuple for d in derived)
    with pytest.raises(AttributeError):
        derived[0].leader = 5  # type: ignore[misc]


def test_same_decision_ignores_only_partition_epoch() -> None:
    a = LeaderAndIsr(1, 7, (1, 2), 4, 42)
    assert a.same_decision_as(LeaderAndIsr(1, 7, (1, 2), 4, 99))
    assert not a.same_decision_as(LeaderAndIsr(1, 7, (1, 2), 5, 42))
    assert not a.same_decision_as(LeaderAndIsr(1, 8, (1, 2), 4, 42))
    assert not a.same_decision_as(LeaderAndIsr(1, 7, (1, 2), 4, 42, recovering=True))


def test_ordering_and_names() -> None:
    tps = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]
    assert sorted(tps) == [TopicPartition("a", 2), TopicPartition("a", 10), TopicPartition("b", 0)]
    pr = PartitionReplica(TopicPartition("a", 2), 3)
    assert (pr.topic, pr.partition, pr.replica) == ("a", 2, 3)
    assert str(pr) == "[a-2,replica=3]"
    assert sorted([PartitionReplica(TopicPartition("a", 1), 2), pr]) == [
        PartitionReplica(TopicPartition("a", 1), 2),
        pr,
    ]


def test_equal_replica_lists_and_plain_assignments_are_shared():
    """A million partitions over a few hundred brokers repeat their replica lists and ISRs:
    equal ones are one object, so memory grows with distinct lists, not partitions."""
    from services.controller.core.model import ReplicaAssignment as RA

    a, b = RA.of_distinct((7, 8, 9)), RA.of_distinct(tuple([7, 8, 9]))
    assert a is b and a.replicas is b.replicas
    assert (a.adding, a.removing) == ((), ())
    lai = LeaderAndIsr(7, 1, [7, 8], 1)
    assert lai.isr is LeaderAndIsr(8, 2, (7, 8), 1).isr
    # A reassignment's assignment is its own (adding/removing differ per partition).
    moving = RA((7, 8, 9, 10), adding=(10,), removing=(7,))
    assert moving is not RA((7, 8, 9, 10), adding=(10,), removing=(7,))
