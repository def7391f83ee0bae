"""Goal targets and values on hand-made clusters: exact numbers."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from services.pipeline.candidates import ReplicaArrays
from services.pipeline.goals import (
    GOALS,
    BalanceOptions,
    BrokerUniverse,
    compute_targets,
    goal_values,
    mix_key,
    surplus_quotas,
)
from services.pipeline.plan_core import local_goal_values, table_from_rows


def values(rows, brokers, **options) -> dict[str, int]:
    arrays = ReplicaArrays.from_table(table_from_rows(rows))
    return local_goal_values(arrays, brokers, BalanceOptions(**options)).as_dict()


def test_universe_adds_referenced_brokers_as_offline_and_gives_rackless_their_own_rack():
    u = BrokerUniverse.build(
        {1: "a", 2: "a", 3: None},
        [4, 1],
        BalanceOptions(drain=frozenset({2}), exclude=frozenset({3})),
    )
    assert u.ids.tolist() == [1, 2, 3, 4]
    assert u.rack.tolist() == [0, 0, 1, 2]
    assert u.offline.tolist() == [False, False, False, True]
    assert u.receivable.tolist() == [True, False, False, False]
    assert u.can_lead.tolist() == [True, False, True, False]
    with pytest.raises(ValueError):
        u.index_of([5])


@pytest.mark.parametrize(
    ("threshold", "lo", "hi", "llo", "lhi"),
    [
        # 10 replicas and 5 partitions over 4 non-drained brokers: avg 2.5 and 1.25.
        (0.0, [2, 0, 2, 0, 0], [3, 0, 3, 3, 3], [1, 0, 1, 0, 0], [2, 0, 2, 2, 2]),
        (0.2, [2, 0, 2, 0, 0], [3, 0, 3, 3, 3], [1, 0, 1, 0, 0], [2, 0, 2, 2, 2]),
        (0.5, [1, 0, 1, 0, 0], [4, 0, 4, 4, 4], [0, 0, 0, 0, 0], [2, 0, 2, 2, 2]),
    ],
)
def test_bands_per_broker(threshold, lo, hi, llo, lhi):
    # brokers 1..5: 2 drained, 4 excluded, 5 offline (referenced only)
    u = BrokerUniverse.build(
        {1: None, 2: None, 3: None, 4: None},
        [5],
        BalanceOptions(drain=frozenset({2}), exclude=frozenset({4})),
    )
    t = compute_targets(u, 10, 5, BalanceOptions(threshold=threshold, drain=frozenset({2})))
    assert (t.lo.tolist(), t.hi.tolist(), t.llo.tolist(), t.lhi.tolist()) == (lo, hi, llo, lhi)
    assert t.cap[1] == 0 and t.cap[0] > 10**12
    assert (t.eligible, t.mid, t.lmid) == (4, 2, 1)


def test_values_of_a_balanced_cluster_are_zero():
    rows = [("t", 0, [1, 2], 0), ("t", 1, [2, 3], 0), ("t", 2, [3, 1], 0)]
    got = values(rows, {1: "a", 2: "b", 3: "c"}, threshold=0)
    assert [got[g] for g in GOALS] == [0] * 9
    assert (got["replicas_min"], got["replicas_max"]) == (2, 2)


def test_values_count_every_violation():
    # brokers 1,2 in rack a; 3 in b; 4 drained (rack b). 4 partitions of rf 2.
    rows = [
        ("t", 0, [1, 2], 0),  # two replicas in rack a: rack excess 1
        ("t", 1, [1, 3], 0),
        ("t", 2, [1, 4], 0),  # replica on the drained broker
        ("u", 0, [1, 3], 0),
    ]
    strict_topics = {"topic_balance": 1.0, "topic_min_gap": 0}
    brokers = {1: "a", 2: "a", 3: "b", 4: "b"}
    got = values(rows, brokers, threshold=0, drain=frozenset({4}), **strict_topics)
    # counts 1:4 2:1 3:2 4:1 ; avg 8/3 -> band [2,3]; leaders 1:4 (avg 4/3 -> [1,2])
    assert got["rack_awareness"] == 1
    assert got["replica_capacity"] == 1  # drained broker holds one
    assert got["replica_distribution"] == (4 - 3) + (2 - 1) + 1  # 1 over, 2 under, 4 drained
    assert got["leader_distribution"] == (4 - 2) + 1 + 1  # 1 over; 2 and 3 under their lo 1
    # topic t: 6 replicas / 3 -> cap 2: broker 1 holds 3 (+1), drained 4 holds 1 (+1)
    assert got["topic_replica_distribution"] == 2


@pytest.mark.parametrize(
    ("balance", "min_gap", "expected"),
    [
        (3.0, 2, [3, 6, 140]),  # Cruise Control's defaults: avg + clamp(2 * avg, 2, 40)
        (1.0, 0, [1, 2, 100]),  # a perfect spread
        (1.5, 1, [2, 3, 140]),
    ],
)
def test_topic_caps(balance, min_gap, expected):
    u = BrokerUniverse.build({b: None for b in range(4)}, [], BalanceOptions())
    options = BalanceOptions(topic_balance=balance, topic_min_gap=min_gap)
    t = compute_targets(u, 410, 100, options)
    assert t.topic_caps(np.array([2, 8, 400])).tolist() == expected


def test_max_replicas_per_broker():
    rows = [("t", p, [1], 0) for p in range(5)]
    got = values(rows, {1: None, 2: None}, max_replicas_per_broker=3)
    assert got["replica_capacity"] == 2


def test_surplus_quotas_offer_above_average_only_when_someone_lacks():
    u = BrokerUniverse.build({1: None, 2: None, 3: None}, [], BalanceOptions())
    t = compute_targets(u, 30, 30, BalanceOptions(threshold=0.1))  # band [9, 11]
    give, lgive = surplus_quotas(u, t, np.array([12, 10, 8]), np.array([10, 10, 10]))
    assert give.tolist() == [2, 0, 0]  # deficit at broker 3: above-average broker 1 gives 2
    give, _ = surplus_quotas(u, t, np.array([11, 10, 9]), np.array([10, 10, 10]))
    assert give.tolist() == [0, 0, 0]
    assert lgive.tolist() == [0, 0, 0]


def test_goal_values_match_matrix_input():
    u = BrokerUniverse.build({1: None, 2: None}, [], BalanceOptions())
    t = compute_targets(u, 3, 2, BalanceOptions(threshold=0))
    # counts 2 and 1 sit in the band [1, 2]; preferred leaders 2 and 0 miss [1, 1] by one each
    got = goal_values(u, t, np.array([[0, 1], [0, -1]]), np.array([0, 0]))
    assert got.vector() == (0, 0, 0, 0, 0, 0, 0, 2, 0)


def test_mix_key_is_deterministic_and_spreads():
    crc = np.array([zlib.crc32(b"orders")] * 4, dtype=np.int64)
    keys = mix_key(crc, np.array([0, 1, 2, 3]), np.array([1, 1, 1, 1]))
    assert keys.tolist() == mix_key(crc, np.array([0, 1, 2, 3]), np.array([1, 1, 1, 1])).tolist()
    assert len(set(keys.tolist())) == 4
    assert all(0 <= k < 2**31 - 1 for k in keys.tolist())
