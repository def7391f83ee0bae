"""The chaos checkers on hand-built histories: each must pass the good one and name the fault."""

from __future__ import annotations

import pytest
from chaos_checks import (
    Ack,
    ControllerWrite,
    EpochBump,
    EpochSighting,
    LeaderClaim,
    Recovery,
    Seen,
    check_ack_order,
    check_acknowledged,
    check_broker_actions_committed,
    check_broker_controller_epochs,
    check_controller_epochs,
    check_exactly_once_in_order,
    check_log_shape,
    check_one_leader_per_epoch,
    check_reads_agree,
    check_recovery,
    check_replicas_agree,
)
from chaos_group import check_group_consumed, check_group_resume

FINAL = {0: [(0, "a"), (1, "b"), (2, "c")], 1: [(0, "x")]}
REPLICA_0 = [(0, "a", 0), (1, "b", 0), (2, "c", 1)]


@pytest.mark.parametrize(
    ("final", "sent", "problems"),
    [
        (FINAL, {"a", "b", "c", "x"}, ()),
        ({0: []}, set(), ()),
        (
            {0: [(0, "a"), (2, "b")]},
            {"a", "b"},
            ("p0: offset 2 where 1 was due (skipped ahead)",),
        ),
        (
            {0: [(0, "a"), (1, "b"), (1, "c")]},
            {"a", "b", "c"},
            ("p0: offset 1 where 2 was due (went back)",),
        ),
        ({1: [(0, "ghost")]}, {"a"}, ("p1@0: record 'ghost' was never sent",)),
    ],
)
def test_log_shape(final, sent, problems):
    result = check_log_shape(final, sent)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("final", "problems"),
    [
        ({0: [(0, "p1-000000"), (1, "p2-000000"), (2, "p1-000002")], 1: [(0, "p1-000001")]}, ()),
        (
            {0: [(0, "p1-000000"), (1, "p1-000002"), (2, "p1-000002")]},
            ("p1 p0: sequence 2 stored twice (offsets 1 and 2)",),
        ),
        (
            {0: [(0, "p1-000003"), (1, "p1-000001")]},
            ("p1 p0: sequence 3 at offset 0, before sequence 1 at 1",),
        ),
        ({0: [(0, "p1-000007")], 1: [(0, "p1-000007")]}, ()),  # a lane is one partition
    ],
)
def test_exactly_once_in_order(final, problems):
    result = check_exactly_once_in_order(final)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("acks", "problems"),
    [
        ([Ack(1, 0, 0, 0, "a"), Ack(1, 1, 1, 0, "x")], ()),
        ([Ack(1, 0, 0, 5, "a")], ("a acknowledged at p0@5: offset missing",)),
        ([Ack(1, 0, 0, 1, "a")], ("a acknowledged at p0@1: holds b",)),
        ([Ack(1, 0, 2, 0, "a")], ("a acknowledged at p2@0: offset missing",)),
    ],
)
def test_acknowledged(acks, problems):
    result = check_acknowledged(acks, FINAL)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("acks", "problems"),
    [
        ([Ack(1, 0, 0, 0, "a"), Ack(1, 2, 0, 4, "c"), Ack(1, 1, 0, 1, "b")], ()),
        ([Ack(1, 0, 0, 3, "a"), Ack(2, 1, 0, 1, "b")], ()),  # different producers: no order
        (
            [Ack(1, 0, 0, 3, "a"), Ack(1, 1, 0, 1, "b")],
            ("producer 1 p0: b (sent after a) at offset 1 <= 3",),
        ),
        (
            [Ack(1, 0, 0, 3, "a"), Ack(1, 1, 0, 3, "b")],
            ("producer 1 p0: b (sent after a) at offset 3 <= 3",),
        ),
    ],
)
def test_ack_order(acks, problems):
    result = check_ack_order(acks)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("seen", "problems"),
    [
        ([Seen("c", 0, 0, "a"), Seen("c", 0, 2, "c"), Seen("c", 1, 0, "x")], ()),
        ([Seen("c", 0, 1, "z")], ("c read z at p0@1; the log now holds b",)),
        ([Seen("c", 0, 7, "q")], ("c read q at p0@7; the log is missing",)),
        ([Seen("c", 0, 1, "b"), Seen("c", 0, 0, "a")], ("c p0: offset 0 after 1",)),
        ([Seen("c", 0, 1, "b"), Seen("d", 0, 0, "a")], ()),  # separate readers
    ],
)
def test_reads_agree(seen, problems):
    result = check_reads_agree(seen, FINAL)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("replicas", "problems"),
    [
        ({(0, 1): REPLICA_0, (0, 2): REPLICA_0, (1, 4): [(0, "x", 0)]}, ()),
        (
            {(0, 1): [(0, "a", 0), (1, "b", 0)]},
            ("p0 on broker 1: 2 records vs 3 in the final read; first difference at index 2",),
        ),
        (
            {(0, 1): [(0, "a", 0), (1, "z", 0), (2, "c", 0)]},
            ("p0 on broker 1: 3 records vs 3 in the final read; first difference at index 1",),
        ),
        (
            {(1, 1): [(0, "x", 2)], (1, 3): [(0, "x", 3)]},
            ("p1@0: leader epoch 3 on broker 3, 2 on broker 1",),
        ),
    ],
)
def test_replicas_agree(replicas, problems):
    result = check_replicas_agree(replicas, FINAL)
    assert (result.ok, result.problems) == (not problems, problems)


def claim(epoch: int, broker: int, source: str, partition: int = 0) -> LeaderClaim:
    return LeaderClaim("t", partition, epoch, broker, source)


@pytest.mark.parametrize(
    ("claims", "problems"),
    [
        ([claim(1, 2, "etcd@5"), claim(1, 2, "broker-2.log"), claim(2, 3, "etcd@9")], ()),
        ([claim(1, 2, "etcd@5"), claim(1, 3, "etcd@5", partition=1)], ()),
        (
            [claim(1, 2, "etcd@5"), claim(1, 3, "broker-3.log"), claim(1, 2, "broker-1.log")],
            ("t-0 epoch 1: broker 2 per broker-1.log, etcd@5; broker 3 per broker-3.log",),
        ),
    ],
)
def test_one_leader_per_epoch(claims, problems):
    result = check_one_leader_per_epoch(claims)
    assert (result.ok, result.problems) == (not problems, problems)


def test_one_leader_per_epoch_counts_sources():
    result = check_one_leader_per_epoch(
        [claim(1, 2, "etcd@5"), claim(2, 2, "etcd@8"), claim(1, 2, "broker-1.log")]
    )
    assert (
        result.summary
        == "2 (partition, leader epoch) pairs; claims: 1 from broker-1.log, 2 from etcd"
    )


@pytest.mark.parametrize(
    ("broker_claims", "problems"),
    [
        ([claim(1, 2, "broker-3.log")], ()),
        (
            [claim(1, 3, "broker-3.log")],
            ("broker-3.log: acted on leader 3 of t-0 in epoch 1, which etcd never recorded",),
        ),
        (
            [claim(4, 2, "broker-1.log")],
            ("broker-1.log: acted on leader 2 of t-0 in epoch 4, which etcd never recorded",),
        ),
    ],
)
def test_broker_actions_committed(broker_claims, problems):
    committed = [claim(1, 2, "etcd@5"), claim(2, 1, "etcd@7")]
    result = check_broker_actions_committed(broker_claims, committed)
    assert (result.ok, result.problems) == (not problems, problems)


BUMPS = [EpochBump(7, 1, 1), EpochBump(20, 2, 2)]


@pytest.mark.parametrize(
    ("bumps", "writes", "problems"),
    [
        (BUMPS, [ControllerWrite(9, "s0", 1), ControllerWrite(19, "s1", 1)], ()),
        (BUMPS, [ControllerWrite(21, "s0", 2), ControllerWrite(20, "s1", 2)], ()),
        (
            BUMPS,
            [ControllerWrite(25, "s0", 1)],
            ("s0 written at revision 25 with controller epoch 1 while epoch 2 was current",),
        ),
        (
            BUMPS,
            [ControllerWrite(5, "s0", 1)],
            ("s0 written at revision 5 with controller epoch 1 while epoch 0 was current",),
        ),
        (
            [EpochBump(7, 2, 1), EpochBump(20, 2, 2)],
            [],
            ("epoch went from 2 to 2 at revision 20",),
        ),
    ],
)
def test_controller_epochs(bumps, writes, problems):
    result = check_controller_epochs(bumps, writes)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("sightings", "problems"),
    [
        ([EpochSighting(1.0, 1, 1), EpochSighting(2.0, 1, 0), EpochSighting(3.0, 1, 2)], ()),
        (
            [EpochSighting(1.0, 1, 2), EpochSighting(2.0, 1, 1)],
            ("broker 1 went from controller epoch 2 (t=1.0s) back to 1 (t=2.0s)",),
        ),
        ([EpochSighting(2.0, 1, 1), EpochSighting(1.0, 2, 2)], ()),  # per broker
        ([EpochSighting(1.0, 3, 4)], ("broker 3 reported epoch 4 > etcd's 3",)),
    ],
)
def test_broker_controller_epochs(sightings, problems):
    result = check_broker_controller_epochs(sightings, max_epoch=3)
    assert (result.ok, result.problems) == (not problems, problems)


@pytest.mark.parametrize(
    ("recovery", "ok"),
    [
        (Recovery(30.0, 4.2), True),
        (Recovery(30.0, 0.0), True),
        (Recovery(30.0, None, ("p1 (leader -1, isr [2])",)), False),
        (Recovery(30.0, 31.0), False),
    ],
)
def test_recovery(recovery, ok):
    assert check_recovery(recovery).ok is ok


def test_problem_lists_are_capped_but_counted():
    final = {0: [(i, f"r{i}") for i in range(30)]}
    result = check_log_shape(final, set())
    assert len(result.problems) == 11
    assert result.problems[-1] == "... and 20 more"


# ------------------------------------------------------------------------ the consumer group


def test_group_consumed_every_acknowledged_record():
    acks = [Ack(1, 0, 0, 0, "a"), Ack(1, 1, 1, 0, "b")]
    seen = [Seen("group-1", 0, 0, "a"), Seen("group-2", 1, 0, "b"), Seen("group-2", 1, 0, "b")]
    assert check_group_consumed(acks, seen).ok  # duplicates are fine: at least once


def test_group_missed_a_record():
    acks = [Ack(1, 0, 0, 0, "a"), Ack(1, 1, 1, 0, "b")]
    result = check_group_consumed(acks, [Seen("group-1", 0, 0, "a")])
    assert not result.ok and "b (p1@0) never consumed" in result.problems[0]


def test_group_resumes_at_the_commit():
    assert check_group_resume({0: 5, 1: 3}, {0: 5, 1: 3}, {0: 5, 1: 3}).ok


@pytest.mark.parametrize(
    ("committed", "resumed", "problem"),
    [
        ({0: 4, 1: 3}, {0: 4, 1: 3}, "p0: committed 4, log end 5"),
        ({0: 5, 1: 3}, {0: 0, 1: 3}, "p0: the new member started at 0, commit 5"),
        ({0: 5}, {0: 5}, "p1: committed None, log end 3"),
    ],
)
def test_group_resume_problems(committed, resumed, problem):
    result = check_group_resume({0: 5, 1: 3}, committed, resumed)
    assert not result.ok and problem in result.problems
