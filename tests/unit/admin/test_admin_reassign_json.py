"""kafka-reassign-partitions JSON: exact output, Kafka's parse errors, round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import InvalidRequestError
from leasehold.reassign_json import (
    PartitionTarget,
    TopicPartition,
    check_broker_list,
    check_brokers_exist,
    check_execute_targets,
    check_topic_list,
    flatten_assignment,
    format_reassignment_json,
    format_topics_to_move_json,
    log_dirs_of,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    targets_of,
)


def message_of(fn, *args) -> str:
    with pytest.raises(InvalidRequestError) as raised:
        fn(*args)
    assert raised.value.grpc_status == "INVALID_ARGUMENT"
    return raised.value.message


# ---- writing -----------------------------------------------------------------------------------


def test_format_matches_kafka_byte_for_byte():
    # The rollback JSON of Kafka's ReassignPartitionsUnitTest.
    assignment = {TopicPartition("foo", 1): [4, 5, 6], TopicPartition("bar", 0): [7, 8]}
    assert format_reassignment_json(assignment) == (
        '{"version":1,"partitions":'
        '[{"topic":"bar","partition":0,"replicas":[7,8],"log_dirs":["any","any"]},'
        '{"topic":"foo","partition":1,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]}'
    )


def test_format_sorts_partitions_numerically_and_accepts_plain_tuples():
    assignment = {("t", 10): [1], ("t", 9): [2], ("a", 2): [3]}
    parsed = json.loads(format_reassignment_json(assignment))
    assert [(p["topic"], p["partition"]) for p in parsed["partitions"]] == [
        ("a", 2),
        ("t", 9),
        ("t", 10),
    ]


def test_format_with_log_dirs_and_empty():
    text = format_reassignment_json({("foo", 0): [1, 2, 3]}, {("foo", 0, 2): "/data/b"})
    assert text == (
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3],'
        '"log_dirs":["any","/data/b","any"]}]}'
    )
    assert format_reassignment_json({}) == '{"version":1,"partitions":[]}'


def test_format_escapes_like_jackson():
    # Control characters as \\u00XX with upper-case hex, short escapes for \\n; a literal
    # backslash followed by "u00ab" stays as it is; non-ASCII is written raw.
    dirs = {("t", 0, 1): "a\x1fb", ("t", 0, 2): "\n\\u00ab\u00e9"}
    text = format_reassignment_json({("t", 0): [1, 2, 3]}, dirs)
    assert text.endswith('"log_dirs":["a\\u001Fb","\\n\\\\u00ab\u00e9","any"]}]}')


def test_format_topics_to_move():
    assert format_topics_to_move_json(["foo", "bar"]) == (
        '{"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}'
    )
    assert parse_topics_to_move(format_topics_to_move_json(["foo", "bar"])) == ["foo", "bar"]


def test_flatten_assignment():
    assert flatten_assignment({"a": {0: [1], 1: [2]}, "b": {0: [3]}}) == {
        TopicPartition("a", 0): [1],
        TopicPartition("a", 1): [2],
        TopicPartition("b", 0): [3],
    }
    assert str(TopicPartition("my.topic", 12)) == "my.topic-12"


# ---- topics to move and broker lists -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topics"),
    [
        ('{"topics": [{"topic": "foo"}], "version":1}', ["foo"]),
        ('{"topics": [{"topic": "foo"},{"topic": "bar"}]}', ["foo", "bar"]),
        ('{"version":1}', []),
        ('{"version":1,"topics":[]} trailing text is ignored, as by Jackson', []),
        ('{"topics":[{"topic":"x","other":1}],"extra":true}', ["x"]),
    ],
)
def test_parse_topics_to_move(text, topics):
    assert parse_topics_to_move(text) == topics


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The input string is not a valid JSON"),
        ("{invalid_json", "The input string is not a valid JSON"),
        ("   ", "Expected JSON object, received "),
        ("[1]", "Expected JSON object, received [1]"),
        ('{"version":2,"topics":[]}', "Not supported version field value 2"),
        ('{"version":"1"}', 'Expected `Integer` value, received "1"'),
        ('{"version":null}', "Expected `Integer` value, received null"),
        ('{"topics":{"topic":"a"}}', 'Expected JSON array, received {"topic":"a"}'),
        ('{"topics":["a"]}', 'Expected JSON object, received "a"'),
        ('{"topics":[{"name":"a"}]}', "No such field exists: `topic`"),
        ('{"topics":[{"topic":1}]}', "Expected `String` value, received 1"),
        ('{"topics":[{"topic":"foo"},{"topic":"foo"}]}',
         "List of topics to reassign contains duplicate entries: [foo]"),
        # HashSet order: "a" hashes to bucket 1, "b" to bucket 2, whatever the input order.
        ('{"topics":[{"topic":"b"},{"topic":"a"},{"topic":"b"},{"topic":"a"}]}',
         "List of topics to reassign contains duplicate entries: [a, b]"),
    ],
)  # fmt: skip
def test_topics_to_move_errors(text, message):
    assert message_of(parse_topics_to_move, text) == message


@pytest.mark.parametrize(
    ("text", "brokers"),
    [("5,2,3,4", [5, 2, 3, 4]), ("1", [1]), ("1,2,", [1, 2]), ("+3,-1", [3, -1])],
)
def test_parse_broker_list(text, brokers):
    assert parse_broker_list(text) == brokers


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,1,2", "Broker list contains duplicate entries: [1]"),
        ("5,2,3,4,5", "Broker list contains duplicate entries: [5]"),
        # 17 and 1 share bucket 1 of a 16-slot table: insertion order decides.
        ("17,1,17,1", "Broker list contains duplicate entries: [17, 1]"),
        ("2,1,2,1", "Broker list contains duplicate entries: [1, 2]"),
        ("1,a", 'For input string: "a"'),
        ("1, 2", 'For input string: " 2"'),
        ("", 'For input string: ""'),
        ("2147483648", 'For input string: "2147483648"'),
    ],
)
def test_broker_list_errors(text, message):
    assert message_of(parse_broker_list, text) == message


def test_list_checks_for_grpc_requests():
    check_broker_list([1, 2, 3])
    check_topic_list(["a", "b"])
    assert message_of(check_broker_list, [3, 3]) == "Broker list contains duplicate entries: [3]"
    assert message_of(check_topic_list, ["t", "t"]) == (
        "List of topics to reassign contains duplicate entries: [t]"
    )


# ---- reassignment files ------------------------------------------------------------------------


def test_parse_reassignment_entries_in_file_order():
    text = (
        '{"version":1,"partitions":['
        '{"topic":"foo","partition":1,"replicas":[3,4,5]},'
        '{"topic":"foo","partition":0,"replicas":[1,2,3],"log_dirs":["/a","any","/c"]}]}'
    )
    entries = parse_reassignment(text)
    assert entries == [
        PartitionTarget(TopicPartition("foo", 1), (3, 4, 5), ("any", "any", "any")),
        PartitionTarget(TopicPartition("foo", 0), (1, 2, 3), ("/a", "any", "/c")),
    ]
    assert targets_of(entries) == {("foo", 1): [3, 4, 5], ("foo", 0): [1, 2, 3]}
    assert log_dirs_of(entries) == {("foo", 0, 1): "/a", ("foo", 0, 3): "/c"}
    assert parse_reassignment('{"version":1}') == []
    assert parse_reassignment('{"partitions":[]}') == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The input string shouldn't be empty"),
        (" \n", "Expected JSON object, received "),
        ('"x"', 'Expected JSON object, received "x"'),
        ('{"version":3}', "Not supported version field value 3"),
        ('{"version":1.0}', "Expected `Integer` value, received 1.0"),
        ('{"partitions":{}}', "Expected JSON array, received {}"),
        ('{"partitions":[1]}', "Expected JSON object, received 1"),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', "No such field exists: `topic`"),
        ('{"partitions":[{"topic":"a","replicas":[1]}]}', "No such field exists: `partition`"),
        ('{"partitions":[{"topic":"a","partition":0}]}', "No such field exists: `replicas`"),
        ('{"partitions":[{"topic":"a","partition":"0","replicas":[1]}]}',
         'Expected `Integer` value, received "0"'),
        ('{"partitions":[{"topic":"a","partition":true,"replicas":[1]}]}',
         "Expected `Integer` value, received true"),
        ('{"partitions":[{"topic":"a","partition":2147483648,"replicas":[1]}]}',
         "Expected `Integer` value, received 2147483648"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":"1"}]}',
         'Expected `JSON array` value, received "1"'),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1.5]}]}',
         "Expected `Integer` value, received 1.5"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":null}]}',
         "Expected `JSON array` value, received null"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":[7]}]}',
         "Expected `String` value, received 7"),
        ('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
         "Size of replicas list [1, 2] is different from size of log dirs list [any] for "
         "partition foo-0"),
    ],
)  # fmt: skip
def test_reassignment_parse_errors(text, message):
    assert message_of(parse_reassignment, text) == message


@pytest.mark.parametrize("text", ["{invalid_json", '{"partitions":[NaN]}', '{"version":1,}'])
def test_reassignment_that_is_not_json(text):
    assert message_of(parse_reassignment, text).startswith("Invalid JSON: ")


def _entries(*items: tuple[str, int, list[int]]) -> list[PartitionTarget]:
    return [PartitionTarget(TopicPartition(t, p), tuple(r), ("any",) * len(r)) for t, p, r in items]


@pytest.mark.parametrize(
    ("entries", "code", "message"),
    [
        ([], c.ERROR_CODE_INVALID_REQUEST, "Partition reassignment list cannot be empty"),
        (_entries(("foo", 0, [1]), ("foo", 1, [])), c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
         "Partition replica list cannot be empty"),
        (_entries(("foo", 0, [0, 1]), ("foo", 0, [2, 3, 4])), c.ERROR_CODE_INVALID_REQUEST,
         "Partition reassignment contains duplicate topic partitions: foo-0"),
        # HashSet<TopicPartition> order: foo-2 lands in bucket 4, foo-0 in bucket 6.
        (_entries(("foo", 0, [1]), ("foo", 2, [1]), ("foo", 0, [2]), ("foo", 2, [2])),
         c.ERROR_CODE_INVALID_REQUEST,
         "Partition reassignment contains duplicate topic partitions: foo-2,foo-0"),
        (_entries(("foo", 0, [0, 0]), ("foo", 1, [2, 3])), c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
         "Partition replica lists may not contain duplicate entries: foo-0 contains multiple "
         "entries for 0"),
        (_entries(("foo", 0, [17, 1, 17, 1]), ("bar", 3, [2, 2, 2])),
         c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
         "Partition replica lists may not contain duplicate entries: foo-0 contains multiple "
         "entries for 17,1. bar-3 contains multiple entries for 2"),
    ],
)  # fmt: skip
def test_execute_checks(entries, code, message):
    with pytest.raises(InvalidRequestError) as raised:
        check_execute_targets(entries)
    assert (raised.value.code, raised.value.message) == (code, message)


def test_execute_checks_pass_and_return_targets():
    entries = _entries(("foo", 0, [1, 2, 3]), ("foo", 1, [3, 4, 5]))
    assert check_execute_targets(entries) == {("foo", 0): [1, 2, 3], ("foo", 1): [3, 4, 5]}


def test_unknown_broker_is_reported_first_in_hash_order():
    check_brokers_exist({("foo", 0): [1, 2]}, [1, 2, 3])
    # 18 (bucket 2) comes before 7 (bucket 7) although listed later.
    assert message_of(check_brokers_exist, {("foo", 0): [7, 1, 18]}, [1, 2]) == (
        "Unknown broker id 18"
    )


# ---- round trips -------------------------------------------------------------------------------

assignments = st.dictionaries(
    st.tuples(st.text("ab._-", min_size=1, max_size=4), st.integers(0, 50)),
    st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(assignments, st.data())
def test_format_then_parse_round_trips(assignment, data):
    dirs = {
        (t, p, b): data.draw(st.sampled_from(["any", "/d1", "/d 2", "\u00e9\t"]))
        for (t, p), replicas in assignment.items()
        for b in replicas
    }
    text = format_reassignment_json(assignment, dirs)
    entries = parse_reassignment(text)
    assert targets_of(entries) == {TopicPartition(*tp): r for tp, r in assignment.items()}
    assert log_dirs_of(entries) == {k: v for k, v in dirs.items() if v != "any"}
    assert format_reassignment_json(targets_of(entries), log_dirs_of(entries)) == text
    assert json.loads(text)["version"] == 1
    if assignment:
        assert check_execute_targets(entries) == targets_of(entries)
