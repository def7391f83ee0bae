"""The brokers' grace after an etcd outage (``role.OutageGrace``), with an injected clock."""

from __future__ import annotations

import pytest

from services.controller.core import BrokerInfo
from services.controller.events import BrokerChange
from services.controller.role import OutageGrace

GRACE = 4.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def broker(bid: int, epoch: int, incarnation: str = "") -> BrokerInfo:
    return BrokerInfo(bid, "127.0.0.1", 9000 + bid, "", epoch, incarnation or f"proc-{bid}")


KNOWN = {b: broker(b, 10 + b) for b in (1, 2, 3)}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def grace(clock) -> OutageGrace:
    return OutageGrace(GRACE, clock)


def test_without_an_outage_deregistrations_pass_through(grace):
    verdict = grace.see(BrokerChange((), (1,)), KNOWN)
    assert verdict.change == BrokerChange((), (1,))
    assert not verdict.held and not grace.held


def test_deregistrations_during_the_outage_and_grace_are_held(grace, clock):
    grace.etcd_unreachable()
    clock.now += 12
    assert grace.etcd_reachable() == GRACE
    clock.now += 0.3
    verdict = grace.see(BrokerChange((), (1, 2)), KNOWN)
    assert verdict.change == BrokerChange((), ())
    assert verdict.held == (1, 2)
    assert set(grace.held) == {1, 2}


def test_a_held_broker_back_from_the_same_process_resumes(grace, clock):
    grace.etcd_unreachable()
    grace.see(BrokerChange((), (1,)), KNOWN)
    grace.etcd_reachable()
    clock.now += 1.0
    back = broker(1, 99)  # new broker epoch, same incarnation
    verdict = grace.see(BrokerChange((back,), ()), KNOWN)
    assert verdict.change == BrokerChange((back,), (), (1,))
    assert verdict.resumed == (1,)
    assert not grace.held


def test_a_held_broker_back_as_another_process_is_a_bounce(grace):
    grace.etcd_unreachable()
    grace.see(BrokerChange((), (1,)), KNOWN)
    grace.etcd_reachable()
    other = broker(1, 99, incarnation="restarted")
    verdict = grace.see(BrokerChange((other,), ()), KNOWN)
    assert verdict.change == BrokerChange((other,), (1,), ())
    assert not verdict.resumed


def test_a_broker_not_back_when_the_grace_ends_is_dead(grace, clock):
    grace.etcd_unreachable()
    grace.see(BrokerChange((), (2,)), KNOWN)
    assert grace.expire() == ()  # still unreachable: no grace has started to run out
    grace.etcd_reachable()
    clock.now += GRACE - 0.01
    assert grace.expire() == ()
    clock.now += 0.02
    assert grace.expire() == (2,)
    assert grace.expire() == ()


def test_after_the_grace_deregistrations_pass_through_again(grace, clock):
    grace.etcd_unreachable()
    grace.etcd_reachable()
    clock.now += GRACE + 0.1
    assert grace.see(BrokerChange((), (3,)), KNOWN).change == BrokerChange((), (3,))


def test_an_unknown_broker_is_never_held(grace):
    grace.etcd_unreachable()
    assert grace.see(BrokerChange((), (7,)), KNOWN).change == BrokerChange((), (7,))


def test_a_surviving_registration_is_untouched(grace):
    grace.etcd_unreachable()
    grace.etcd_reachable()
    same = KNOWN[3]
    assert grace.see(BrokerChange((same,), ()), KNOWN).change == BrokerChange((same,), ())


def test_reachable_without_an_outage_starts_no_grace(grace):
    assert grace.etcd_reachable() is None
    assert not grace.in_grace()


def test_what_passes_through_keeps_when_the_watch_delivered_it(grace):
    # The expired record's detected_ms is this instant: the analysis dates a loss by it.
    change = grace.see(BrokerChange((), (3,), received_ms=1_234), KNOWN).change
    assert change == BrokerChange((), (3,)) and change.received_ms == 1_234
