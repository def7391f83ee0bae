"""Building a fetcher's request: only changed partitions are re-derived, an unchanged round
returns the very same list, and rescans catch what no state change reports."""

from __future__ import annotations

from dataclasses import dataclass

from services.broker_agent.follower.fetch_specs import FetchSpecBuilder, FetchStates
from services.broker_agent.follower.fetch_state import PartitionFetchState, Phase
from services.broker_agent.follower.leader_endpoint import FetchSpec
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
    states[A] = states[A]._replace(delayed_until_ms=500)
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


def test_a_partition_only_delayed_keeps_its_spec_through_the_backoff():
    states, builder, logs = started()
    first = builder.build(states, 10, logs)
    for tp in (A, B):  # what the fetcher does when a fetch fails: delay and carry
        delayed = states[tp].delayed(10, 490)
        builder.carry(tp, states[tp], delayed)
        states[tp] = delayed
    assert builder.build(states, 100, logs) == [spec(C, 30)]
    after = sorted(builder.build(states, 500, logs), key=lambda s: s.tp)  # set order: any
    assert (after, logs.lookups) == ([spec(A, 10), spec(B, 20), spec(C, 30)], [])
    assert (after[0] is first[0], after[1] is first[1]) == (True, True)
    assert builder.spec_for(A, states[A]) is first[0]


def test_a_partition_changed_while_delayed_is_derived_again():
    states, builder, logs = started()
    first = builder.build(states, 10, logs)
    delayed = states[A].delayed(10, 490)
    builder.carry(A, states[A], delayed)
    states[A] = delayed
    builder.build(states, 100, logs)
    states[A] = delayed._replace(fetch_offset=12)  # e.g. truncated meanwhile
    after = builder.build(states, 500, logs)
    assert (sorted(after, key=lambda s: s.tp), logs.lookups) == (
        [spec(A, 12), spec(B, 20), spec(C, 30)],
        [A],
    )
    assert first[0] not in after


def test_carry_ignores_a_state_the_spec_was_not_built_from():
    states, builder, logs = started()
    builder.build(states, 10, logs)
    states[A] = fetching(11)  # not yet built
    builder.carry(A, fetching(11), fetching(11).delayed(10, 490))
    assert builder.spec_for(A, states[A]) is None
    assert spec(A, 11) in builder.build(states, 20, logs)
    assert logs.lookups == [A]


def test_a_rescan_keeps_the_spec_of_a_partition_still_delayed():
    states, builder, logs = started()
    first = builder.build(states, 10, logs)
    delayed = states[B].delayed(10, 5 * RESCAN)
    builder.carry(B, states[B], delayed)
    states[B] = delayed
    assert builder.build(states, RESCAN, logs) == [spec(A, 10), spec(C, 30)]
    after = builder.build(states, 5 * RESCAN + 10, logs)
    assert spec(B, 20) in after and first[1] in after and B not in logs.lookups


def test_put_all_moves_partitions_to_the_end_and_notes_them():
    states = FetchStates()
    states[A] = fetching(1)
    states[B] = fetching(2)
    states.take_changed()
    states.put_all({A: PartitionFetchState(0, 6, Phase.TRUNCATING), C: fetching(3)})
    assert (list(states.items()), states.truncating, states.take_changed()) == (
        [(B, fetching(2)), (A, PartitionFetchState(0, 6, Phase.TRUNCATING)), (C, fetching(3))],
        {A},
        {A, C},
    )
    states.put_all({A: fetching(0)})
    assert (list(states), states.truncating) == ([B, C, A], set())
