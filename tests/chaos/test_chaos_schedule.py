"""Seeded fault schedules: replayable, covering every kind, durations relative to the lease."""

from __future__ import annotations

import pytest
from chaos_schedule import (
    SEED_ENV,
    Fault,
    FaultKind,
    ScheduleSpec,
    build_schedule,
    duration_range,
    schedule_length_s,
    seed_from_env,
)

SPEC = ScheduleSpec(session_ttl=3, partitions=8, count=12, warmup_s=3.0, gap_s=(2.0, 5.0))


def test_same_seed_same_schedule_and_different_seed_differs():
    assert build_schedule(5, SPEC) == build_schedule(5, SPEC)
    assert build_schedule(5, SPEC) != build_schedule(6, SPEC)


def test_every_kind_appears_when_count_allows():
    kinds = [f.kind for f in build_schedule(1, SPEC)]
    assert set(kinds) == set(FaultKind)
    assert len(kinds) == 12


def test_count_below_kinds_takes_the_first_kinds_once():
    spec = ScheduleSpec(
        session_ttl=3,
        partitions=4,
        count=2,
        kinds=(FaultKind.KILL_LEADER, FaultKind.PAUSE_CONTROLLER, FaultKind.RESTART_ETCD),
    )
    assert sorted(f.kind.value for f in build_schedule(9, spec)) == [
        "kill-partition-leader",
        "pause-active-controller",
    ]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 42])
def test_faults_are_sequential_numbered_and_within_their_ranges(seed):
    faults = build_schedule(seed, SPEC)
    assert [f.index for f in faults] == list(range(1, 13))
    assert faults[0].at_s == 3.0
    for before, after in zip(faults, faults[1:], strict=False):
        gap = after.at_s - (before.at_s + before.duration_s)
        assert 2.0 - 0.11 <= gap <= 5.0 + 0.11  # rounded to tenths
    for f in faults:
        low, high = duration_range(f.kind, 3)
        assert low - 0.05 <= f.duration_s <= high + 0.05
        assert 0 <= f.partition < 8


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (FaultKind.RESTART_ETCD, (4.0, 10.0)),  # down past the lease
        (FaultKind.PAUSE_ETCD, (4.0, 15.0)),  # frozen past the lease: every lease expires
        (FaultKind.PAUSE_LEADER, (0.5, 2.0)),  # within the lease
        (FaultKind.PAUSE_FOLLOWER, (0.5, 2.0)),
        (FaultKind.PAUSE_CONTROLLER, (4.5, 7.0)),  # past the lease: a zombie
        (FaultKind.PAUSE_BROKER_PAST_LEASE, (4.5, 7.0)),
        (FaultKind.KILL_LEADER, (4.5, 7.0)),  # down until the lease has expired
        (FaultKind.KILL_CONTROLLER, (4.5, 7.0)),
    ],
)
def test_duration_ranges_relative_to_a_3s_lease(kind, expected):
    assert duration_range(kind, 3) == expected


def test_describe_and_length():
    faults = [
        Fault(1, FaultKind.KILL_LEADER, 3.0, 5.5, partition=2),
        Fault(2, FaultKind.RESTART_ETCD, 12.0, 2.0),
    ]
    assert [f.describe() for f in faults] == [
        "#1 kill-partition-leader of partition 2 at +3.0s for 5.5s",
        "#2 restart-etcd at +12.0s for 2.0s",
    ]
    assert schedule_length_s(faults) == 14.0
    assert schedule_length_s([]) == 0.0


@pytest.mark.parametrize(
    ("env", "default", "expected"),
    [("123", None, 123), ("123", 7, 123), ("", 7, 7), (" 55 ", 7, 55)],
)
def test_seed_from_env(monkeypatch, env, default, expected):
    monkeypatch.setenv(SEED_ENV, env)
    assert seed_from_env(default) == expected


@pytest.mark.parametrize(("env", "default"), [("random", 7), ("", None)])
def test_fresh_seed_when_asked_or_without_default(monkeypatch, env, default):
    monkeypatch.setenv(SEED_ENV, env)
    seeds = {seed_from_env(default) for _ in range(5)}
    assert all(0 <= s < 10**9 for s in seeds) and len(seeds) > 1
