"""The session's lease states, one transition per test, driven by given instants (no clock)."""

from __future__ import annotations

import pytest

from leasehold.etcd.lease import (
    RETRY_S,
    Ask,
    LeaseState,
    LeaseTracker,
    keep_alive_interval,
)

TTL = 3.0


def tracker(granted_at: float = 100.0) -> LeaseTracker:
    return LeaseTracker(TTL, granted_at)


def test_a_granted_lease_is_confirmed_until_one_ttl_after_the_grant_was_sent():
    t = tracker()
    assert t.state is LeaseState.CONFIRMED
    assert t.check(102.99) is None
    assert t.check(103.0) is LeaseState.UNCONFIRMED


def test_lease_confirmed_a_renewal_moves_the_deadline_from_when_it_was_sent():
    t = tracker()
    assert t.alive(sent_at=101.0, ttl_left=3) is None  # already confirmed: no change
    assert t.deadline == 104.0
    assert t.check(103.9) is None
    assert t.min_margin == pytest.approx(2.0)  # 103 - 101: the lease had 2 s left when renewed


def test_etcd_unreachable_within_the_ttl_stays_confirmed_then_becomes_unconfirmed():
    t = tracker()
    assert t.unanswered(now=101.0) is None
    assert t.state is LeaseState.CONFIRMED
    assert t.unanswered(now=103.2) is LeaseState.UNCONFIRMED


def test_lease_confirmed_again_after_etcd_comes_back_with_the_same_lease():
    t = tracker()
    t.unanswered(now=104.0)
    assert t.state is LeaseState.UNCONFIRMED
    # etcd restarted and renewed every lease's TTL: TimeToLive says 3 s left.
    assert t.alive(sent_at=111.0, ttl_left=3) is LeaseState.CONFIRMED
    assert t.deadline == 114.0


def test_lease_gone_is_final():
    t = tracker()
    t.unanswered(now=104.0)
    assert t.gone() is LeaseState.LOST
    assert t.alive(sent_at=105.0, ttl_left=3) is None
    assert t.state is LeaseState.LOST
    assert t.next_step(now=105.0, last_sent=105.0) is None


def test_time_to_live_zero_is_a_lease_with_under_a_second_left_renewed_at_once():
    # A renewal went unanswered, then LeaseTimeToLive says 0: etcd truncates the seconds
    # left, and says -1 for a lease it does not have.
    t = tracker()
    t.alive(sent_at=101.0, ttl_left=3)
    t.unanswered(now=102.5)
    assert t.answered(Ask.TIME_TO_LIVE, sent_at=103.2, ttl=0) is None
    assert (t.state, t.deadline) == (LeaseState.CONFIRMED, 104.0)  # nothing confirmed beyond
    step = t.next_step(now=103.2, last_sent=103.2)
    assert (step.ask, step.wait_s) == (Ask.KEEP_ALIVE, 0.0)
    assert t.answered(Ask.KEEP_ALIVE, sent_at=103.21, ttl=3) is None
    assert t.deadline == pytest.approx(106.21)
    assert t.next_step(now=103.3, last_sent=103.21).wait_s == pytest.approx(0.41)


def test_time_to_live_zero_while_unconfirmed_renews_before_confirming():
    t = tracker()
    t.unanswered(now=103.5)
    assert t.answered(Ask.TIME_TO_LIVE, sent_at=103.7, ttl=0) is None
    assert t.state is LeaseState.UNCONFIRMED
    step = t.next_step(now=103.7, last_sent=103.7)
    assert (step.ask, step.wait_s) == (Ask.KEEP_ALIVE, 0.0)
    assert step.timeout_s > 0.5  # not the expired deadline's minimum
    # The renewal unanswered: ask again whether it lives before renewing.
    t.unanswered(now=104.7)
    assert t.next_step(now=104.7, last_sent=103.7).ask is Ask.TIME_TO_LIVE
    assert t.answered(Ask.TIME_TO_LIVE, sent_at=104.8, ttl=0) is None
    assert t.answered(Ask.KEEP_ALIVE, sent_at=104.81, ttl=3) is LeaseState.CONFIRMED


def test_a_lease_in_its_last_second_that_expires_before_the_renewal_is_gone():
    t = tracker()
    t.unanswered(now=102.5)
    t.answered(Ask.TIME_TO_LIVE, sent_at=102.7, ttl=0)
    assert t.expiring
    assert t.answered(Ask.KEEP_ALIVE, sent_at=102.71, ttl=0) is LeaseState.LOST
    assert not t.expiring  # the renewer does not report it as still being renewed
    assert t.next_step(now=102.8, last_sent=102.71) is None


@pytest.mark.parametrize(("ask", "ttl"), [(Ask.KEEP_ALIVE, 0), (Ask.TIME_TO_LIVE, -1)])
def test_the_answer_etcd_gives_for_a_lease_it_does_not_have_is_gone(ask, ttl):
    t = tracker()
    assert t.answered(ask, sent_at=101.0, ttl=ttl) is LeaseState.LOST
    assert t.next_step(now=101.0, last_sent=101.0) is None


def test_lease_gone_while_confirmed():
    t = tracker()
    assert t.gone() is LeaseState.LOST


def test_a_late_answer_does_not_shorten_the_deadline():
    t = tracker()
    t.alive(sent_at=102.0, ttl_left=3)
    t.alive(sent_at=101.5, ttl_left=3)  # an earlier request answered last
    assert t.deadline == 105.0


def test_next_step_renews_every_interval_while_confirmed():
    t = tracker()
    step = t.next_step(now=100.0, last_sent=100.0)
    assert step.ask is Ask.KEEP_ALIVE
    assert step.wait_s == pytest.approx(keep_alive_interval(TTL))
    assert 0 < step.timeout_s <= TTL


def test_next_step_asks_time_to_live_after_a_failure_and_while_unconfirmed():
    t = tracker()
    t.unanswered(now=101.0)
    step = t.next_step(now=101.0, last_sent=101.0)
    assert (step.ask, step.wait_s) == (Ask.TIME_TO_LIVE, pytest.approx(RETRY_S))
    t.unanswered(now=103.5)
    step = t.next_step(now=103.6, last_sent=103.5)
    assert step.ask is Ask.TIME_TO_LIVE
    # Once etcd answers that the lease lives, renewals resume.
    t.alive(sent_at=104.0, ttl_left=2)
    assert t.next_step(now=104.1, last_sent=104.0).ask is Ask.KEEP_ALIVE


def test_renewal_timeout_never_runs_past_the_deadline():
    t = tracker()
    step = t.next_step(now=102.0, last_sent=101.9)  # renew at 102.4; the lease ends at 103
    assert (step.wait_s, step.timeout_s) == (pytest.approx(0.4), pytest.approx(0.6))


@pytest.mark.parametrize(("ttl", "interval"), [(2, 1 / 3), (3, 0.5), (60, 0.5)])
def test_keep_alive_interval(ttl, interval):
    assert keep_alive_interval(ttl) == pytest.approx(interval)


def test_the_renewer_asks_together_for_every_lease_due_within_the_slack_of_the_first():
    from leasehold.etcd.lease import Step
    from leasehold.etcd.session import Held, due_now

    def held(lease_id: int, wait_s: float | None) -> Held:
        h = Held(lease_id, tracker(), lambda state: None, last_sent=100.0)
        h.step = None if wait_s is None else Step(Ask.KEEP_ALIVE, wait_s, 1.0)
        return h

    leases = [held(1, 0.30), held(2, 0.25), held(3, 0.34), held(4, 0.5), held(5, None)]
    wait, batch = due_now(leases, now=100.0, slack=0.1)
    assert wait == pytest.approx(0.25)
    assert [h.lease_id for h in batch] == [1, 2, 3]
    assert due_now([held(6, None)], now=100.0, slack=0.1) == (-1.0, [])
