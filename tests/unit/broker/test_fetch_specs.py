"""Building a fetcher's request: only changed partitions are re-derived, an unchanged round
returns the very same list, and rescans catch what no state change reports."""

from __future__ import annotations

from dataclasses import dataclass, replace

from services.broker_agent.fetch_specs import FetchSpecBuilder, FetchStates
from services.broker_agent.fetch_state import PartitionFetchState, Phase
from services.broker_agent.leader_endpoint import FetchSpec
from services.broker_agent.model import TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))
RESCAN = 1_000


@dataclass
class FakeLog:
    log_start_offset: int = 0
    latest_epoch: int | None = 3


class Logs:
    """``follower_log`` for the builder: counts the lookups (a lookup means a re-derivation)."""

    def __init__(self) -> None:
        self.logs = {tp: FakeLog() for tp in (A, B, C)}
        self.lookups: list[TopicPartition] = []

    def __call__(self, tp: TopicPartition, _epoch: int) -> FakeLog | None:
        self.lookups.append(tp)
        return self.logs.get(tp)


def fetching(offset: int) -> PartitionFetchState:
    return PartitionFetchState(offset, 5, Phase.FETCHING)


def spec(tp: TopicPartition, offset: int, log_start: int = 0) -> FetchSpec:
    return FetchSpec(tp, offset, 5, 3, log_start, 100)


def started() -> tuple[FetchStates, FetchSpecBuilder, Logs]:
    states = FetchStates()
    for tp, offset in ((A, 10), (B, 20), (C, 30)):
        states[tp] = fetching(offset)
    builder, logs = FetchSpecBuilder(100, rescan_ms=RESCAN), Logs()
    assert builder.build(states, 0, logs) == [spec(A, 10), spec(B, 20), spec(C, 30)]
    logs.lookups.clear()
    return states, builder, logs


def test_states_note_changes_and_truncating_partitions():
    states = FetchStates()
    states[A] = fetching(1)
    states[B] = PartitionFetchState(0, 5, Phase.TRUNCATING)
    assert (states.take_changed(), states.truncating) == ({A, B}, {B})
    states[B] = fetching(0)
    states.pop(A)
    states.pop(C, None)
    assert (states.take_changed(), states.truncating, dict(states)) == (
        {A, B, C},
        set(),
        {B: fetching(0)},
    )
    assert states.take_changed() == set()


def test_an_unchanged_round_returns_the_same_list_without_lookups():
    states, builder, logs = started()
    first = builder.build(states, 10, logs)
    assert builder.build(states, 20, logs) is first
    assert logs.lookups == []


def test_only_changed_partitions_are_derived_again():
    states, builder, logs = started()
    before = builder.build(states, 10, logs)
    states[B] = fetching(25)
    del states[C]
    after = builder.build(states, 20, logs)
    assert (after is before, logs.lookups) == (False, [B])
    assert sorted(after, key=lambda s: s.tp) == [spec(A, 10), spec(B, 25)]
    assert after[0] is before[0]  # A's spec is the same object: the session needs no look
    assert (builder.spec_for(B, states[B]), builder.spec_for(B, fetching(25))) == (
        spec(B, 25),
        None,  # an equal but other state value is not what was fetched
    )


def test_a_delayed_partition_returns_when_its_backoff_ends():
    states, builder, logs = started()
    states[A] = replace(states[A], delayed_until_ms=500)
    assert [s.tp for s in builder.build(states, 100, logs)] == [B, C]
    assert [s.tp for s in builder.build(states, 499, logs)] == [B, C]
    assert sorted(s.tp for s in builder.build(states, 500, logs)) == [A, B, C]


def test_a_log_start_moved_without_a_state_change_is_seen_at_the_rescan():
    states, builder, logs = started()
    logs.logs[B].log_start_offset = 7
    assert spec(B, 20, 7) not in builder.build(states, RESCAN - 1, logs)
    assert builder.build(states, RESCAN, logs) == [spec(A, 10), spec(B, 20, 7), spec(C, 30)]
    assert logs.lookups == [B]


def test_throttling_rounds_scan_everything_and_so_does_the_next():
    states, builder, logs = started()

    def skip_c(tp, _state):
        return tp == C

    assert builder.build(states, 10, logs, skip_c) == [spec(A, 10), spec(B, 20)]
    assert builder.build(states, 20, logs) == [spec(A, 10), spec(B, 20), spec(C, 30)]
    assert logs.lookups == [C]  # re-derived once it was no longer skipped


def test_a_partition_that_no_longer_follows_is_left_out():
    states, builder, logs = started()
    del logs.logs[A]
    states[A] = fetching(11)
    assert builder.build(states, 10, logs) == [spec(B, 20), spec(C, 30)]
