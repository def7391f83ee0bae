"""KIP-73 replication throttles: the replica lists and the byte-rate quota."""

from __future__ import annotations

import pytest

from services.broker_agent.throttle import (
    NOT_THROTTLED,
    ReplicationQuota,
    ThrottledReplicas,
    parse_rate,
    parse_throttled_replicas,
)


@pytest.mark.parametrize(
    ("value", "broker_id", "expected"),
    [
        ("", 1, NOT_THROTTLED),
        ("  ", 1, NOT_THROTTLED),
        ("*", 7, ThrottledReplicas(everything=True)),
        ("0:1,1:2,2:1", 1, ThrottledReplicas(partitions=frozenset({0, 2}))),
        ("0:1, 1:2 ,2:1", 2, ThrottledReplicas(partitions=frozenset({1}))),
        ("0:1,1:2", 3, ThrottledReplicas(partitions=frozenset())),
    ],
)
def test_parse_throttled_replicas(value, broker_id, expected):
    assert parse_throttled_replicas(value, broker_id) == expected


@pytest.mark.parametrize("value", ["0", "0:", "a:1", "0:b", "-1:2", "1:-2", "0:1,,1:1"])
def test_malformed_throttled_replicas_are_refused(value):
    with pytest.raises(ValueError):
        parse_throttled_replicas(value, 1)


def test_membership():
    assert 3 in ThrottledReplicas(everything=True)
    assert 3 in ThrottledReplicas(partitions=frozenset({3}))
    assert 4 not in ThrottledReplicas(partitions=frozenset({3}))


class Clock:
    def __init__(self) -> None:
        self.now = 100_000

    def __call__(self) -> int:
        return self.now


def test_quota_measures_rate_over_the_window_and_recovers():
    clock = Clock()
    quota = ReplicationQuota(clock, bound_bytes_per_sec=1_000)
    assert not quota.is_exceeded()
    quota.record(800)
    assert quota.rate() == 800.0  # one window long at least
    assert not quota.is_exceeded()
    quota.record(400)
    assert quota.is_exceeded()
    clock.now += 2_000  # two more seconds: 1200 bytes over 2 s
    assert quota.rate() == 600.0
    assert not quota.is_exceeded()
    clock.now += 20_000  # past the retained samples: nothing measured
    assert quota.rate() == 0.0


def test_unbounded_quota_is_never_exceeded():
    quota = ReplicationQuota(Clock(), bound_bytes_per_sec=0)
    quota.record(10**9)
    assert not quota.enabled and not quota.is_exceeded()


def test_allowance_is_what_keeps_the_rate_at_the_bound_and_delay_when_it_returns():
    clock = Clock()  # 100,000 ms: the start of a window
    quota = ReplicationQuota(clock, bound_bytes_per_sec=1_000)
    assert (quota.allowance(), quota.delay_s()) == (1_000, None)  # one window's worth
    quota.record(1_500)
    assert quota.allowance() == -500
    assert quota.delay_s() == pytest.approx(0.502)  # 501 bytes at 1,000 B/s, plus 1 ms
    clock.now += 1_500  # 1.5 s in: 1,500 bytes allowed so far, all used
    assert quota.allowance() == 0 and quota.is_exceeded()
    clock.now += 250
    assert quota.allowance() == 250 and not quota.is_exceeded()
    assert ReplicationQuota(clock).allowance() is None  # unbounded


@pytest.mark.parametrize(
    ("value", "rate"),
    [(None, 0), ("1000", 1_000), ("0", 0), ("-5", 0), ("x", 0), (str(2**63 - 1), 0)],
)
def test_dynamic_rate_configs_are_bytes_per_second_or_unlimited(value, rate):
    assert parse_rate(value) == rate
