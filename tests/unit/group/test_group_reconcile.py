"""The member state machine (Kafka's CurrentAssignmentBuilder) as a table: revoke before
assign, the epoch moves only once revoked, partitions still held elsewhere wait."""

from __future__ import annotations

import pytest

from services.broker_agent.group.model import Member, MemberState
from services.broker_agent.group.reconcile import reconcile

S, UNREVOKED, UNRELEASED = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
)


def ps(*numbers: int) -> frozenset:
    return frozenset(("t", n) for n in numbers)


def member(epoch=1, state=S, assigned=ps(), pending=ps(), previous=0) -> Member:
    return Member("m", member_epoch=epoch, previous_member_epoch=previous, state=state,
                  assigned=assigned, pending_revocation=pending)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "before", "target_epoch", "target", "owned", "held", "after"),
    [
        ("up to date: nothing to do",
         member(1, S, ps(0, 1)), 1, ps(0, 1), ps(0, 1), (), member(1, S, ps(0, 1))),
        ("new target, only gains, free partitions: new epoch at once",
         member(1, S, ps(0)), 2, ps(0, 1), ps(0), (), member(2, S, ps(0, 1), previous=1)),
        ("new target takes partitions away: revoke first, same epoch",
         member(1, S, ps(0, 1, 2)), 2, ps(0, 3), ps(0, 1, 2), (),
         member(1, UNREVOKED, ps(0), pending=ps(1, 2))),
        ("still revoking (owns some of them)",
         member(1, UNREVOKED, ps(0), pending=ps(1, 2)), 2, ps(0, 3), ps(0, 2), (),
         member(1, UNREVOKED, ps(0), pending=ps(1, 2))),
        ("owned not sent: still revoking",
         member(1, UNREVOKED, ps(0), pending=ps(1, 2)), 2, ps(0, 3), None, (),
         member(1, UNREVOKED, ps(0), pending=ps(1, 2))),
        ("revoked: new epoch and the new partition",
         member(1, UNREVOKED, ps(0), pending=ps(1, 2)), 2, ps(0, 3), ps(0), (),
         member(2, S, ps(0, 3), previous=1)),
        ("revoked but a new partition is still held elsewhere: unreleased",
         member(1, UNREVOKED, ps(0), pending=ps(1)), 2, ps(0, 3), ps(0), (("t", 3),),
         member(2, UNRELEASED, ps(0), previous=1)),
        ("unreleased partition released later",
         member(2, UNRELEASED, ps(0), previous=1), 2, ps(0, 3), ps(0), (),
         member(2, S, ps(0, 3), previous=1)),
        ("unreleased and still held: no change",
         member(2, UNRELEASED, ps(0), previous=1), 2, ps(0, 3), ps(0), (("t", 3),),
         member(2, UNRELEASED, ps(0), previous=1)),
        ("already revoked before being asked (owned lacks them)",
         member(1, S, ps(0, 1)), 2, ps(0), ps(0), (), member(2, S, ps(0), previous=1)),
        ("a joining member gets its free target",
         member(0, S, ps(), previous=-1), 3, ps(4, 5), ps(), (),
         member(3, S, ps(4, 5), previous=0)),
    ],
)  # fmt: skip
def test_reconcile(name, before, target_epoch, target, owned, held, after):
    got = reconcile(before, target_epoch, target, owned, lambda tp: tp in held)
    assert got == after, name


def test_no_partition_is_ever_in_two_members():
    """Two members swap halves: at no step does a partition appear in both."""
    a = member(1, S, ps(0, 1))
    b = Member("b", member_epoch=1, previous_member_epoch=0, assigned=ps(2, 3))
    targets = {"m": ps(2, 3), "b": ps(0, 1)}
    members = {"m": a, "b": b}
    owned = {"m": ps(0, 1), "b": ps(2, 3)}
    for _ in range(6):
        for name in ("m", "b"):
            other = "b" if name == "m" else "m"
            held = members[other].assigned | members[other].pending_revocation
            members[name] = reconcile(
                members[name], 2, targets[name], owned[name], held.__contains__
            )
            owned[name] = members[name].assigned  # the client revokes what it is told
            mine = members[name].assigned
            theirs = members[other].assigned | members[other].pending_revocation
            assert not mine & theirs
    assert members["m"].assigned == ps(2, 3) and members["b"].assigned == ps(0, 1)
    assert members["m"].member_epoch == members["b"].member_epoch == 2
