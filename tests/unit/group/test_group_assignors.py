"""The server-side assignors as tables: every partition of a subscribed topic goes to exactly one
subscribed member, counts are balanced, and the uniform assignor moves as little as it can."""

from __future__ import annotations

import pytest

from services.broker_agent.group.assignors import ASSIGNORS, MemberSubscription, range_, uniform


def subs(**topics: str) -> dict[str, MemberSubscription]:
    return {m: MemberSubscription(frozenset(t.split(","))) for m, t in topics.items()}


def counts(target) -> dict[str, int]:
    return {m: len(ps) for m, ps in target.items()}


def check_valid(members, topics, target) -> None:
    owned = [tp for ps in target.values() for tp in ps]
    assert len(owned) == len(set(owned)), "a partition in two targets"
    for m, ps in target.items():
        assert all(t in members[m].topics for t, _ in ps), "a partition of an unsubscribed topic"
    wanted = {(t, p) for s in members.values() for t in s.topics for p in range(topics.get(t, 0))}
    assert set(owned) == wanted, "a partition nobody got"


@pytest.mark.parametrize(
    ("name", "members", "topics", "current", "expected_counts"),
    [
        ("one member takes everything", subs(a="t"), {"t": 4}, {}, {"a": 4}),
        ("even split", subs(a="t", b="t"), {"t": 4}, {}, {"a": 2, "b": 2}),
        ("remainder to the first", subs(a="t", b="t", c="t"), {"t": 4}, {},
         {"a": 2, "b": 1, "c": 1}),
        ("more members than partitions", subs(a="t", b="t", c="t"), {"t": 2}, {},
         {"a": 1, "b": 1, "c": 0}),
        ("unknown topics give nothing", subs(a="t,missing"), {"t": 1}, {}, {"a": 1}),
        ("a joiner takes from the fullest only", subs(a="t", b="t"), {"t": 4},
         {"a": frozenset({("t", 0), ("t", 1), ("t", 2), ("t", 3)})}, {"a": 2, "b": 2}),
        ("heterogeneous: as even as subscriptions allow", subs(a="x", b="x,y", c="y"),
         {"x": 2, "y": 4}, {}, {"a": 2, "b": 2, "c": 2}),
        ("no members", {}, {"t": 3}, {}, {}),
    ],
)  # fmt: skip
def test_uniform(name, members, topics, current, expected_counts):
    target = uniform(members, topics, current)
    check_valid(members, topics, target)
    assert counts(target) == expected_counts, name


def test_uniform_is_sticky_when_a_member_leaves():
    members = subs(a="t", b="t", c="t")
    before = uniform(members, {"t": 9}, {})
    del members["c"]
    after = uniform(members, {"t": 9}, {m: before[m] for m in ("a", "b")})
    check_valid(members, {"t": 9}, after)
    assert before["a"] <= after["a"] and before["b"] <= after["b"]  # nobody lost anything
    assert sorted(counts(after).values()) == [4, 5]


def test_uniform_drops_partitions_that_no_longer_exist_or_are_unsubscribed():
    members = subs(a="t", b="u")
    current = {"a": frozenset({("t", 0), ("t", 5), ("u", 0)}), "b": frozenset()}
    target = uniform(members, {"t": 2, "u": 1}, current)
    check_valid(members, {"t": 2, "u": 1}, target)
    assert ("t", 0) in target["a"] and target["b"] == {("u", 0)}


def test_uniform_balances_a_hundred_members_on_a_thousand_partitions():
    members = {f"m{i:03d}": MemberSubscription(frozenset({"t"})) for i in range(100)}
    target = uniform(members, {"t": 1000}, {})
    check_valid(members, {"t": 1000}, target)
    assert set(counts(target).values()) == {10}
    del members["m050"]
    again = uniform(members, {"t": 1000}, target)
    check_valid(members, {"t": 1000}, again)
    moved = sum(len(again[m] - target[m]) for m in again)
    assert moved == 10 and set(counts(again).values()) == {10, 11}


@pytest.mark.parametrize(
    ("members", "topics", "expected"),
    [
        (subs(a="t", b="t"), {"t": 5},
         {"a": {("t", 0), ("t", 1), ("t", 2)}, "b": {("t", 3), ("t", 4)}}),
        (subs(b="x,y", a="x,y"), {"x": 3, "y": 3},  # co-partitioned: same numbers per member
         {"a": {("x", 0), ("x", 1), ("y", 0), ("y", 1)}, "b": {("x", 2), ("y", 2)}}),
        (subs(a="x", b="x,y"), {"x": 2, "y": 2},
         {"a": {("x", 0)}, "b": {("x", 1), ("y", 0), ("y", 1)}}),
    ],
)  # fmt: skip
def test_range(members, topics, expected):
    target = range_(members, topics, {})
    check_valid(members, topics, target)
    assert {m: set(ps) for m, ps in target.items()} == expected


def test_assignors_are_named_as_kafkas():
    assert sorted(ASSIGNORS) == ["range", "uniform"]
