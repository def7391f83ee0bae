"""Reassignment texts and throttle arithmetic, against the expectations of Kafka's unit tests."""

from __future__ import annotations

import pytest

from leasehold.errors import NotFoundError
from leasehold.reassign_json import TopicPartition as TP
from leasehold.reassign_report import (
    EXISTING_REASSIGNMENT_MESSAGE,
    OngoingReassignment,
    PartitionMove,
    PartitionReassignmentState,
    follower_throttles,
    format_current_reassignments,
    format_execute_errors,
    format_execute_started,
    format_generate_output,
    format_rollback_output,
    format_verify_status,
    leader_throttles,
    proposed_moves,
    reassigning_brokers,
    reassignment_states,
)


def test_verify_status_text():
    states = {
        TP("foo", 0): PartitionReassignmentState((1, 2, 3), (1, 2, 3), True),
        TP("foo", 1): PartitionReassignmentState((1, 2, 3), (1, 2, 4), False),
        TP("bar", 0): PartitionReassignmentState((1, 2, 3), (1, 2, 4), False),
        TP("baz", 0): PartitionReassignmentState((5, 6), (1, 2), True),
    }
    assert format_verify_status(states) == "\n".join(
        [
            "Status of partition reassignment:",
            "Reassignment of partition bar-0 is still in progress.",
            "There is no active reassignment of partition baz-0, but replica set is 5,6 rather "
            "than 1,2.",
            "Reassignment of partition foo-0 is completed.",
            "Reassignment of partition foo-1 is still in progress.",
        ]
    )


def test_reassignment_states():
    targets = {TP("foo", 0): [1, 2], TP("foo", 1): [3, 4], TP("gone", 0): [1]}
    current = {TP("foo", 0): [1, 2], TP("foo", 1): [1, 2]}
    ongoing = {TP("foo", 1): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2))}
    assert reassignment_states(targets, current, ongoing) == {
        TP("foo", 0): PartitionReassignmentState((1, 2), (1, 2), True),
        TP("foo", 1): PartitionReassignmentState((1, 2, 3, 4), (3, 4), False),
        TP("gone", 0): PartitionReassignmentState((), (1,), True),
    }


def test_list_text():
    assert format_current_reassignments({}) == "No partition reassignments found."
    ongoing = {
        TP("foo", 1): OngoingReassignment((1, 2, 3), (4, 5), (1, 2)),
        TP("foo", 0): OngoingReassignment((0, 1, 2), (4,)),
        TP("bar", 0): OngoingReassignment((2, 3, 0), (), (0,)),
    }
    assert format_current_reassignments(ongoing) == "\n".join(
        [
            "Current partition reassignments:",
            "bar-0: replicas: 2,3,0. removing: 0.",
            "foo-0: replicas: 0,1,2. adding: 4.",
            "foo-1: replicas: 1,2,3. adding: 4,5. removing: 1,2.",
        ]
    )


def test_rollback_text_lists_only_moving_partitions():
    proposed = {TP("foo", 0): [1, 2, 3], TP("foo", 1): [1, 2, 3], TP("bar", 0): [7, 8, 9]}
    current = {
        TP("foo", 0): [1, 2, 3],
        TP("foo", 1): [4, 5, 6],
        TP("bar", 0): [7, 8],
        TP("baz", 0): [10, 11, 12],
    }
    assert format_rollback_output(proposed, current) == "\n".join(
        [
            "Current partition replica assignment",
            "",
            '{"version":1,"partitions":'
            '[{"topic":"bar","partition":0,"replicas":[7,8],"log_dirs":["any","any"]},'
            '{"topic":"foo","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]},'
            '{"topic":"foo","partition":1,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]}',
            "",
            "Save this to use as the --reassignment-json-file option during rollback",
        ]
    )


def test_generate_text():
    current = {TP("foo", 0): [1]}
    proposed = {TP("foo", 0): [2]}
    assert format_generate_output(current, proposed) == (
        "Current partition replica assignment\n"
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1],'
        '"log_dirs":["any"]}]}\n\n'
        "Proposed partition reassignment configuration\n"
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[2],'
        '"log_dirs":["any"]}]}\n'
    )


def test_execute_texts():
    assert format_execute_started({TP("a", 0): [1]}) == (
        "Successfully started partition reassignment for a-0"
    )
    assert format_execute_started({TP("b", 0): [1], TP("a", 10): [1], TP("a", 2): [1]}) == (
        "Successfully started partition reassignments for a-2,a-10,b-0"
    )
    assert format_execute_errors({TP("b", 0): "boom", TP("a", 1): "bad"}) == (
        "Error reassigning partition(s):\na-1: bad\nb-0: boom"
    )
    assert EXISTING_REASSIGNMENT_MESSAGE.startswith(
        "Cannot execute because there is an existing partition assignment.  Use --additional"
    )


def test_moves_and_throttles_match_kafka():
    # Kafka's ReassignPartitionsUnitTest.testMoveMap.
    ongoing = {
        TP("foo", 0): OngoingReassignment((1, 2, 3, 4), (4,), (3,)),
        TP("foo", 1): OngoingReassignment((4, 5, 6, 7, 8), (7, 8), (4, 5)),
        TP("foo", 2): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        TP("foo", 3): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        TP("foo", 4): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        TP("foo", 5): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
    }
    proposed = {
        TP("foo", 0): [1, 2, 5],
        TP("foo", 2): [3, 4],
        TP("foo", 3): [5, 6],
        TP("foo", 4): [3],
        TP("foo", 5): [3, 4, 5, 6],
        TP("bar", 0): [1, 2, 3],
    }
    current = {
        TP("foo", 0): [1, 2, 3, 4],
        TP("foo", 1): [4, 5, 6, 7, 8],
        TP("foo", 2): [1, 2, 3, 4],
        TP("foo", 3): [1, 2, 3, 4],
        TP("foo", 4): [1, 2, 3, 4],
        TP("foo", 5): [1, 2, 3, 4],
        TP("bar", 0): [2, 3, 4],
    }
    moves = proposed_moves(ongoing, proposed, current)

    def move(sources, destinations):
        return PartitionMove(frozenset(sources), frozenset(destinations))

    assert moves == {
        "foo": {
            0: move({1, 2, 3}, {5}),
            1: move({4, 5, 6}, {7, 8}),
            2: move({1, 2}, {3, 4}),
            3: move({1, 2}, {5, 6}),
            4: move({1, 2}, {3}),
            5: move({1, 2}, {3, 4, 5, 6}),
        },
        "bar": {0: move({2, 3, 4}, {1})},
    }
    assert leader_throttles(moves) == {
        "foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2",
        "bar": "0:2,0:3,0:4",
    }
    assert follower_throttles(moves) == {
        "foo": "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6",
        "bar": "0:1",
    }
    assert reassigning_brokers(moves) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_throttle_items_sort_as_text():
    moves = {
        "t": {
            10: PartitionMove(frozenset({1}), frozenset({3})),
            2: PartitionMove(frozenset({1}), frozenset()),
        }
    }
    assert leader_throttles(moves) == {"t": "10:1,2:1"}
    assert follower_throttles(moves) == {"t": "10:3"}


def test_moving_an_unknown_partition_fails():
    with pytest.raises(NotFoundError) as raised:
        proposed_moves({}, {TP("nope", 0): [1]}, {})
    assert raised.value.message == "Trying to reassign a topic partition nope-0 with 0 replicas"
