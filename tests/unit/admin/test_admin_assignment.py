"""Replica placement: Kafka's own test vectors, hand-computed vectors, and invariants."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    placement_brokers,
    propose_reassignment,
    rack_alternated_broker_list,
)
from leasehold.common.v1 import common_pb2
from leasehold.errors import AdminError, InvalidRequestError, LeaseholdError, PreconditionError


class ScriptedRandom(random.Random):
    """Hands out the given values from randrange, to pin down which draw is which."""

    def __init__(self, values: list[int]) -> None:
        super().__init__(0)
        self.values = list(values)
        self.calls: list[int] = []

    def randrange(self, n, *args, **kwargs):  # type: ignore[override]
        self.calls.append(n)
        return self.values.pop(0)


def unracked(*ids: int) -> list[BrokerMetadata]:
    return [BrokerMetadata(i) for i in ids]


def racked(racks: dict[int, str]) -> list[BrokerMetadata]:
    return [BrokerMetadata(i, r) for i, r in racks.items()]


# ---- Kafka's own expectations (AdminRackAwareTest) -------------------------------------------


def test_kafka_replica_assignment_five_brokers_ten_partitions():
    expected = {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }
    assert assign_replicas_to_brokers(unracked(0, 1, 2, 3, 4), 10, 3, 0) == expected


def test_kafka_rack_alternated_list_and_assignment():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    without_5 = {b: r for b, r in racks.items() if b != 5}
    assert rack_alternated_broker_list(without_5) == [0, 3, 1, 4, 2]
    assert assign_replicas_to_brokers(racked(racks), 7, 3, 0, 0) == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_kafka_rack_alternated_list_doc_example():
    racks = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


# ---- vectors computed by hand from the algorithm ---------------------------------------------


@pytest.mark.parametrize(
    ("brokers", "n", "rf", "start", "first_id", "expected"),
    [
        # start=shift=1; the shift grows to 2 at partition 3 (3 % 3 == 0).
        (unracked(10, 20, 30), 4, 2, 1, -1, {0: [20, 10], 1: [30, 20], 2: [10, 30], 3: [20, 30]}),
        # Numbering from 5 does not replay earlier rounds: the shift stays at the start index.
        (unracked(0, 1, 2, 3), 2, 3, 0, 5, {5: [1, 2, 3], 6: [2, 3, 0]}),
        # Brokers are used in the order given, not sorted.
        (unracked(3, 1, 2), 3, 1, 0, -1, {0: [3], 1: [1], 2: [2]}),
        # One broker, replication factor 1: no follower arithmetic at all.
        (unracked(7), 3, 1, 0, -1, {0: [7], 1: [7], 2: [7]}),
    ],
)
def test_rack_unaware_hand_vectors(brokers, n, rf, start, first_id, expected):
    assert assign_replicas_to_brokers(brokers, n, rf, start, first_id) == expected


def test_rack_aware_hand_vector_skips_used_racks_and_brokers():
    # Racks a:{0,3,4} b:{1} c:{2} -> alternated [0,1,2,3,4]; start=shift=2, RF 4 > 3 racks.
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    assert assign_replicas_to_brokers(racked(racks), 6, 4, 2) == {
        0: [2, 0, 1, 3],
        1: [3, 1, 2, 4],
        2: [4, 2, 1, 3],
        3: [0, 1, 2, 3],
        4: [1, 4, 2, 3],
        5: [2, 4, 1, 3],
    }


def test_random_start_index_is_drawn_before_the_shift():
    rng = ScriptedRandom([2, 1])  # start index 2, shift 1
    result = assign_replicas_to_brokers(unracked(0, 1, 2, 3, 4), 2, 2, rng=rng)
    assert result == {0: [2, 4], 1: [3, 0]}
    assert rng.calls == [5, 5]


def test_fixed_start_index_never_draws():
    rng = ScriptedRandom([])
    assign_replicas_to_brokers(unracked(0, 1, 2), 3, 2, fixed_start_index=0, rng=rng)
    assert rng.calls == []


def test_same_seed_same_plan():
    brokers = unracked(*range(6))
    first = assign_replicas_to_brokers(brokers, 12, 3, rng=random.Random(42))
    second = assign_replicas_to_brokers(brokers, 12, 3, rng=random.Random(42))
    assert first == second


def test_rack_order_is_java_string_order():
    # Java compares UTF-16 units: U+1F600 (surrogates D83D DE00) sorts before U+FFFF.
    racks = {0: "\uffff", 1: "\U0001f600"}
    assert rack_alternated_broker_list(racks) == [1, 0]


# ---- errors ----------------------------------------------------------------------------------

BROKERS5 = unracked(0, 1, 2, 3, 4)


@pytest.mark.parametrize(
    ("brokers", "n", "rf", "error", "code", "message"),
    [
        (BROKERS5, 0, 1, InvalidRequestError, common_pb2.ERROR_CODE_INVALID_PARTITIONS,
         "Number of partitions must be larger than 0."),
        (BROKERS5, 10, 0, InvalidRequestError, common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR,
         "Replication factor must be larger than 0."),
        (BROKERS5, 10, 6, InvalidRequestError, common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR,
         "Replication factor: 6 larger than available brokers: 5."),
        ([], 1, 1, InvalidRequestError, common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR,
         "Replication factor: 1 larger than available brokers: 0."),
        ([BrokerMetadata(0, "r1"), BrokerMetadata(1)], 2, 1, PreconditionError,
         common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
         "Not all brokers have rack information for replica rack aware assignment."),
        (unracked(17, 1, 17, 1), 1, 1, InvalidRequestError,
         common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
         "Broker list contains duplicate entries: [17, 1]"),
    ],
)  # fmt: skip
def test_assignment_errors(brokers, n, rf, error, code, message):
    with pytest.raises(error) as raised:
        assign_replicas_to_brokers(brokers, n, rf, 0)
    assert (raised.value.code, raised.value.message) == (code, message)
    assert isinstance(raised.value, AdminError)


def test_empty_rack_string_means_no_rack():
    assert BrokerMetadata(3, "").rack is None
    assert assign_replicas_to_brokers([BrokerMetadata(0, ""), BrokerMetadata(1)], 2, 2, 0) == {
        0: [0, 1],
        1: [1, 0],
    }


# ---- placement_brokers -------------------------------------------------------------------------


def test_placement_brokers_sorts_filters_and_drops_racks():
    brokers = [BrokerMetadata(3, "b"), BrokerMetadata(1, "a"), BrokerMetadata(2, "a")]
    assert placement_brokers(brokers) == [
        BrokerMetadata(1, "a"),
        BrokerMetadata(2, "a"),
        BrokerMetadata(3, "b"),
    ]
    assert placement_brokers(brokers, only_ids={3, 1, 9}) == [
        BrokerMetadata(1, "a"),
        BrokerMetadata(3, "b"),
    ]
    assert placement_brokers(brokers, rack_aware=False) == unracked(1, 2, 3)


def test_placement_brokers_refuses_partial_racks_unless_disabled():
    brokers = [BrokerMetadata(1, "a"), BrokerMetadata(2)]
    with pytest.raises(PreconditionError) as raised:
        placement_brokers(brokers)
    assert raised.value.message == (
        "Not all brokers have rack information. Add --disable-rack-aware in command line to "
        "make replica assignment without rack information."
    )
    assert placement_brokers(brokers, rack_aware=False) == unracked(1, 2)
    # The filter applies first: the rackless broker is not part of the request.
    assert placement_brokers(brokers, only_ids=[1]) == [BrokerMetadata(1, "a")]


# ---- partition addition ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("brokers", "existing", "total", "expected"),
    [
        # Start at partition 0's leader (broker 2 -> index 2), ids from 2, shift 2 then 3.
        (unracked(0, 1, 2, 3), {0: [2, 3], 1: [3, 0]}, 5, {2: [0, 3], 3: [1, 0], 4: [2, 3]}),
        # Partition 0's leader is gone and no id is larger: start at index 0.
        (unracked(0, 1, 2), {0: [9, 1]}, 3, {1: [1, 2], 2: [2, 0]}),
        # Leader 2 is gone; the first id at least 2 is 3, at index 2: partition 1 leads at
        # index 3 (broker 4), follower 1 + (2 + 0) % 3 = 3 places on (index 2, broker 3).
        (unracked(0, 1, 3, 4), {0: [2, 1]}, 2, {1: [4, 3]}),
    ],
)
def test_new_partitions_hand_vectors(brokers, existing, total, expected):
    assert new_partitions_assignment(brokers, existing, total) == expected


@pytest.mark.parametrize(
    ("existing", "total", "error", "message"),
    [
        ({0: [0], 1: [1]}, 2, InvalidRequestError,
         "The number of partitions for a topic can only be increased. Topic t currently has 2 "
         "partitions, 2 would not be an increase."),
        ({0: [0], 1: [1]}, 1, InvalidRequestError,
         "The number of partitions for a topic can only be increased. Topic t currently has 2 "
         "partitions, 1 would not be an increase."),
        ({1: [0, 1]}, 3, LeaseholdError,
         "Unexpected existing replica assignment for topic 't', partition id 0 is missing. "
         "Assignment: {1: [0, 1]}"),
    ],
)  # fmt: skip
def test_new_partitions_errors(existing, total, error, message):
    with pytest.raises(error) as raised:
        new_partitions_assignment(unracked(0, 1, 2), existing, total, topic="t")
    assert raised.value.message == message


# ---- generate ----------------------------------------------------------------------------------


def test_propose_reassignment_keeps_counts_and_draws_per_topic_in_name_order():
    current = {"foo": {0: [1, 2], 1: [2, 3]}, "bar": {0: [1, 2, 3]}}
    rng = ScriptedRandom([0, 0, 1, 1])  # bar: start 0 shift 0; foo: start 1 shift 1
    proposed = propose_reassignment(current, unracked(4, 5, 6), rng)
    assert proposed == {"bar": {0: [4, 5, 6]}, "foo": {0: [5, 4], 1: [6, 5]}}
    assert list(proposed) == ["bar", "foo"]


# ---- invariants --------------------------------------------------------------------------------

unaware_cases = st.integers(1, 10).flatmap(
    lambda n_brokers: st.tuples(
        st.just(n_brokers),
        st.integers(1, 40),
        st.integers(1, n_brokers),
        st.integers(-1, 3 * n_brokers),
        st.integers(-1, 30),
        st.integers(0, 2**32),
    )
)


@settings(max_examples=200, deadline=None)
@given(unaware_cases)
def test_rack_unaware_invariants(case):
    n_brokers, n, rf, start, first_id, seed = case
    ids = random.Random(seed).sample(range(100), n_brokers)
    result = assign_replicas_to_brokers(unracked(*ids), n, rf, start, first_id, random.Random(seed))
    first = max(0, first_id)
    assert list(result) == list(range(first, first + n))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(ids)
    leaders = Counter(r[0] for r in result.values())
    counts = [leaders.get(b, 0) for b in ids]
    assert max(counts) - min(counts) <= 1
    if n % n_brokers == 0 and first == 0:
        assert max(counts) == min(counts)
        replicas_per_broker = Counter(b for r in result.values() for b in r)
        assert set(replicas_per_broker.values()) == {rf * n // n_brokers}


aware_cases = st.tuples(
    st.dictionaries(st.integers(0, 30), st.sampled_from("abcd"), min_size=1, max_size=10),
    st.integers(1, 30),
    st.integers(1, 10),
    st.integers(-1, 20),
    st.integers(0, 2**32),
)


@settings(max_examples=200, deadline=None)
@given(aware_cases)
def test_rack_aware_invariants(case):
    racks, n, rf, start, seed = case
    rf = min(rf, len(racks))
    result = assign_replicas_to_brokers(racked(racks), n, rf, start, rng=random.Random(seed))
    n_racks = len(set(racks.values()))
    for replicas in result.values():
        assert len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, n_racks)
        # The first min(rf, racks) replicas are the ones on distinct racks.
        assert len({racks[b] for b in replicas[: min(rf, n_racks)]}) == min(rf, n_racks)
    alternated = rack_alternated_broker_list(racks)
    assert sorted(alternated) == sorted(racks)
    assert len({racks[b] for b in alternated[:n_racks]}) == n_racks


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 8).flatmap(
        lambda nb: st.tuples(
            st.just(nb), st.integers(1, nb), st.integers(1, 20), st.integers(0, nb - 1)
        )
    ),
    st.integers(1, 3),
)
def test_growing_a_small_topic_continues_its_pattern(case, rf_seed):
    # A topic created with fixed start s and at most one round of partitions grows exactly as
    # if it had been created with all its partitions at once.
    n_brokers, existing_count, extra, start = case
    rf = min(rf_seed, n_brokers)
    brokers = unracked(*range(0, 2 * n_brokers, 2))
    whole = assign_replicas_to_brokers(brokers, existing_count + extra, rf, start)
    existing = {p: whole[p] for p in range(existing_count)}
    grown = new_partitions_assignment(brokers, existing, existing_count + extra)
    assert grown == {p: whole[p] for p in range(existing_count, existing_count + extra)}
