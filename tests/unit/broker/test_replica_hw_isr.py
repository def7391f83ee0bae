"""Leader-side follower tracking: caught-up time, high watermark, ISR expansion and shrink."""

from __future__ import annotations

import pytest

from services.broker_agent.replica_state import (
    FollowerState,
    after_fetch,
    can_join_isr,
    caught_up_in_session,
    expansion_candidates,
    is_caught_up,
    new_high_watermark,
    out_of_sync_replicas,
    reset_for_leadership,
)

LAG = 1_000


def fs(broker_id: int, leo: int, caught_up: int = 0) -> FollowerState:
    return FollowerState(broker_id=broker_id, log_end_offset=leo, last_caught_up_ms=caught_up)


@pytest.mark.parametrize(
    ("prior", "fetch_offset", "leader_leo", "fetch_ms", "expected_caught_up"),
    [
        # At the leader's end: caught up now.
        (FollowerState(2), 10, 10, 500, 500),
        # Behind now, but at or past where the leader ended at the previous fetch: it was
        # caught up at that previous fetch time.
        (FollowerState(2, 8, 0, 100, 8, 300), 8, 10, 500, 300),
        (FollowerState(2, 8, 0, 100, 7, 300), 9, 10, 500, 300),
        # Behind the previous leader end too: no progress.
        (FollowerState(2, 5, 0, 100, 9, 300), 6, 10, 500, 100),
        # Never moves backwards.
        (FollowerState(2, 10, 0, 900, 10, 900), 10, 10, 800, 900),
    ],
)
def test_caught_up_time_after_fetch(prior, fetch_offset, leader_leo, fetch_ms, expected_caught_up):
    got = after_fetch(
        prior,
        fetch_offset=fetch_offset,
        log_start_offset=0,
        fetch_ms=fetch_ms,
        leader_leo=leader_leo,
        broker_epoch=42,
    )
    assert got.last_caught_up_ms == expected_caught_up
    assert (got.log_end_offset, got.last_fetch_leader_leo, got.last_fetch_ms, got.broker_epoch) == (
        fetch_offset,
        leader_leo,
        fetch_ms,
        42,
    )


class Session:
    def __init__(self, last_ms: int | None) -> None:
        self.last_ms = last_ms

    def last_fetch_ms(self) -> int | None:
        return self.last_ms


@pytest.mark.parametrize(
    ("state", "session_ms", "expected"),
    [
        # Idle at the end since a fetch at 100; its session's last request was at 400.
        (FollowerState(2, 10, 0, 100, 10, 100), 400, FollowerState(2, 10, 0, 400, 10, 400)),
        # Behind the end, or ahead of the session's time already: nothing to credit.
        (FollowerState(2, 9, 0, 100, 10, 100), 400, None),
        (FollowerState(2, 10, 0, 500, 10, 500), 400, None),
        # The partition left the session: its requests say nothing about it.
        (FollowerState(2, 10, 0, 100, 10, 100), None, None),
    ],
)
def test_caught_up_in_session(state, session_ms, expected):
    got = caught_up_in_session({2: state}, {2: Session(session_ms)}, leader_leo=10)
    assert got == ({} if expected is None else {2: expected})


def test_caught_up_in_session_only_for_followers_with_state_and_session():
    followers = {2: FollowerState(2, 10, 0, 100, 10, 100), 3: FollowerState(3, 10, 0, 100)}
    sessions = {2: Session(300), 4: Session(300)}
    assert caught_up_in_session(followers, sessions, leader_leo=10) == {
        2: FollowerState(2, 10, 0, 300, 10, 300)
    }


@pytest.mark.parametrize(
    ("in_isr", "new_leader", "expected"),
    [
        (True, True, FollowerState(2, last_caught_up_ms=5_000)),
        (False, True, FollowerState(2, last_caught_up_ms=0)),
        (True, False, FollowerState(2, 7, 0, 5_000, 7, 100, 3)),
        (False, False, FollowerState(2, 7, 0, 0, 7, 100, 3)),
    ],
)
def test_reset_for_leadership(in_isr, new_leader, expected):
    prior = FollowerState(2, 7, 0, 100, 7, 100, 3)
    got = reset_for_leadership(prior, 2, in_isr=in_isr, now_ms=5_000, new_leader=new_leader)
    assert got == expected


@pytest.mark.parametrize(
    ("state", "now", "expected"),
    [
        (fs(2, 10, caught_up=0), 5_000, True),  # at the end, however long ago
        (fs(2, 9, caught_up=4_000), 5_000, True),
        (fs(2, 9, caught_up=3_999), 5_000, False),
        (fs(2, -1, caught_up=0), 500, True),
    ],
)
def test_is_caught_up(state, now, expected):
    assert is_caught_up(state, 10, now, LAG) is expected


@pytest.mark.parametrize(
    ("followers", "maximal_isr", "current_hw", "expected"),
    [
        # Smallest log end in the ISR.
        ({2: fs(2, 7, 4_500), 3: fs(3, 9, 4_500)}, {1, 2, 3}, 5, 7),
        # A follower outside the (maximal) ISR and not caught up does not hold it back.
        ({2: fs(2, 7, 4_500), 3: fs(3, 2, 0)}, {1, 2}, 5, 7),
        # Only the leader in the ISR: up to the leader's end.
        ({2: fs(2, 3, 0)}, {1}, 5, 10),
        # An unknown follower offset in the ISR keeps the watermark where it is.
        ({2: fs(2, -1, 4_500)}, {1, 2}, 5, None),
        # Never backwards.
        ({2: fs(2, 4, 4_500)}, {1, 2}, 5, None),
        # Caught-up follower about to join holds the watermark at its offset.
        ({2: fs(2, 8, 4_500)}, {1}, 5, 8),
        # Equal to the current value: no change.
        ({2: fs(2, 5, 4_500)}, {1, 2}, 5, None),
    ],
)
def test_new_high_watermark(followers, maximal_isr, current_hw, expected):
    got = new_high_watermark(
        leader_leo=10,
        current_hw=current_hw,
        followers=followers,
        maximal_isr=maximal_isr,
        now_ms=5_000,
        max_lag_ms=LAG,
        isr_eligible=lambda b: True,
    )
    assert got == expected


def test_ineligible_caught_up_replica_does_not_hold_the_watermark():
    got = new_high_watermark(
        leader_leo=10,
        current_hw=5,
        followers={2: fs(2, 8, 4_500)},
        maximal_isr={1},
        now_ms=5_000,
        max_lag_ms=LAG,
        isr_eligible=lambda b: False,
    )
    assert got == 10


@pytest.mark.parametrize(
    ("leo", "hw", "epoch_start", "expected"),
    [(10, 10, 10, True), (10, 11, 5, False), (10, 8, 11, False), (12, 8, 11, True)],
)
def test_can_join_isr(leo, hw, epoch_start, expected):
    got = can_join_isr(fs(2, leo), high_watermark=hw, leader_epoch_start_offset=epoch_start)
    assert got is expected


def test_expansion_candidates_only_eligible_assigned_caught_up_non_members():
    followers = {
        2: fs(2, 10),  # joins
        3: fs(3, 10),  # already in ISR
        4: fs(4, 9),  # below the watermark
        5: fs(5, 10),  # not eligible (fenced / shutting down)
        6: fs(6, 10),  # not an assigned replica
    }
    got = expansion_candidates(
        followers=followers,
        replicas=[1, 2, 3, 4, 5],
        isr=[1, 3],
        high_watermark=10,
        leader_epoch_start_offset=4,
        isr_eligible=lambda b: b != 5,
    )
    assert got == [2]


def test_out_of_sync_replicas():
    followers = {
        2: fs(2, 10, caught_up=0),  # at the end: in sync however silent
        3: fs(3, 9, caught_up=4_500),  # lagging, but within the lag time
        4: fs(4, 9, caught_up=3_000),  # lagging too long
    }
    got = out_of_sync_replicas(
        leader_id=1,
        isr=[1, 2, 3, 4, 5],  # 5 has no state at all: out
        followers=followers,
        leader_leo=10,
        now_ms=5_000,
        max_lag_ms=LAG,
    )
    assert got == [4, 5]
