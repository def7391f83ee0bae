"""Every validation rule with its exact Kafka message, error code and gRPC status."""

from __future__ import annotations

import pytest

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import LeaseholdError
from leasehold.validation import (
    duplicates,
    has_collision_chars,
    topic_name_collides,
    topic_name_problem,
    validate_new_partitions,
    validate_new_topic,
    validate_partition_count,
    validate_partition_increase,
    validate_replica_assignment,
    validate_replication_factor,
    validate_topic_assignment,
    validate_topic_name,
    validate_topic_not_deleting,
)


def raised(fn, *args, **kwargs) -> tuple[int, str, str]:
    with pytest.raises(LeaseholdError) as info:
        fn(*args, **kwargs)
    return info.value.code, info.value.message, info.value.grpc_status


# ---- topic names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "a" * 249]
)
def test_valid_topic_names(name):
    assert topic_name_problem(name) is None
    validate_topic_name(name)


CHARS = "contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is invalid: the empty string is not allowed"),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        ("a" * 250, f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max "
                    "allowed length 249"),
        # 125 emoji are 250 UTF-16 units: Java reports length before characters.
        ("\U0001f600" * 125, f"Topic name is invalid: the length of '{chr(0x1F600) * 125}' is "
                             "longer than the max allowed length 249"),
        ("\U0001f600" * 124, f"Topic name is invalid: '{chr(0x1F600) * 124}' {CHARS}"),
        ("foo bar", f"Topic name is invalid: 'foo bar' {CHARS}"),
        ("foo:bar", f"Topic name is invalid: 'foo:bar' {CHARS}"),
        ("foo=bar", f"Topic name is invalid: 'foo=bar' {CHARS}"),
        ("caf\u00e9", f"Topic name is invalid: 'caf\u00e9' {CHARS}"),
    ],
)  # fmt: skip
def test_invalid_topic_names(name, message):
    assert raised(validate_topic_name, name) == (
        c.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
        message,
        "INVALID_ARGUMENT",
    )


@pytest.mark.parametrize("char", list("/\\,\x00:\"';*? \t\r\n="))
def test_kafka_illegal_characters(char):
    assert topic_name_problem(f"Is {char}illegal") == f"'Is {char}illegal' {CHARS}"


def test_collision_chars():
    for name in ["start", "end", "middle", "many"]:
        assert not has_collision_chars(name)
    for name in [".start", "end.", "mid.dle", ".ma.ny.", "_start", "end_", "mid_dle", "_ma_ny."]:
        assert has_collision_chars(name)


def test_topic_name_collisions_as_kafka_tests_them():
    periods = [".topic", "to.pic", "topic.", "topic"]
    underscores = ["_topic", "to_pic", "topic_", "topic"]
    for name in periods + underscores:
        assert topic_name_collides(name, name)
    for a, b in zip(periods, underscores, strict=True):
        assert topic_name_collides(a, b)
    for a, b in zip(periods, reversed(underscores), strict=True):
        assert not topic_name_collides(a, b)


@pytest.mark.parametrize(
    ("name", "existing", "deleting", "expected"),
    [
        ("a.b", {"a.b", "x"}, set(), (c.ERROR_CODE_TOPIC_ALREADY_EXISTS,
                                       "Topic 'a.b' already exists.", "ALREADY_EXISTS")),
        ("old", {"old"}, {"old"}, (c.ERROR_CODE_TOPIC_ALREADY_EXISTS,
                                   "Topic 'old' is marked for deletion.", "ALREADY_EXISTS")),
        ("a.b", {"a_b", "x", "a_.b"}, set(), (c.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
                                              "Topic 'a.b' collides with existing topics: a_b",
                                              "INVALID_ARGUMENT")),
        ("a_b", {"a.b", "a__b", "b_a"}, set(),
         (c.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
          "Topic 'a_b' collides with existing topics: a.b", "INVALID_ARGUMENT")),
        # Case matters: X_Y does not collide with x.y.
        ("x.y", {"x_y", "X_Y", "y.x"}, set(),
         (c.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
          "Topic 'x.y' collides with existing topics: x_y", "INVALID_ARGUMENT")),
        ("bad name", set(), set(), (c.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
                                    f"Topic name is invalid: 'bad name' {CHARS}",
                                    "INVALID_ARGUMENT")),
    ],
)  # fmt: skip
def test_validate_new_topic_errors(name, existing, deleting, expected):
    assert raised(validate_new_topic, name, existing, deleting) == expected


def test_validate_new_topic_lists_every_collision_sorted():
    existing = {"m_n_o", "m.n_o", "m_n.o", "mno"}
    assert raised(validate_new_topic, "m.n.o", existing)[1] == (
        "Topic 'm.n.o' collides with existing topics: m.n_o, m_n.o, m_n_o"
    )


def test_validate_new_topic_accepts_unrelated_names():
    validate_new_topic("plain", {"other", "plain2"})
    validate_new_topic("a.b", {"a-b", "ab"})


@pytest.mark.parametrize(
    ("items", "expected"),
    [([], []), ([1, 2, 3], []), ([1, 2, 1, 1, 3, 2], [1, 2]), (["b", "a", "a", "b"], ["a", "b"])],
)
def test_duplicates(items, expected):
    assert duplicates(items) == expected


# ---- counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        (validate_partition_count, (0,), (c.ERROR_CODE_INVALID_PARTITIONS,
                                          "Number of partitions must be larger than 0.")),
        (validate_partition_count, (-5,), (c.ERROR_CODE_INVALID_PARTITIONS,
                                           "Number of partitions must be larger than 0.")),
        (validate_replication_factor, (0, 3), (c.ERROR_CODE_INVALID_REPLICATION_FACTOR,
                                               "Replication factor must be larger than 0.")),
        (validate_replication_factor, (4, 3), (c.ERROR_CODE_INVALID_REPLICATION_FACTOR,
                                               "Replication factor: 4 larger than available "
                                               "brokers: 3.")),
        (validate_partition_increase, (3, 3), (c.ERROR_CODE_INVALID_PARTITIONS,
                                               "Topic already has 3 partitions.")),
        (validate_partition_increase, (3, 2), (c.ERROR_CODE_INVALID_PARTITIONS,
                                               "Topic currently has 3 partitions, which is higher "
                                               "than the requested 2.")),
        (validate_partition_increase, (3, -22), (c.ERROR_CODE_INVALID_PARTITIONS,
                                                 "Topic currently has 3 partitions, which is "
                                                 "higher than the requested -22.")),
    ],
)  # fmt: skip
def test_count_errors(fn, args, expected):
    assert raised(fn, *args) == (*expected, "INVALID_ARGUMENT")


def test_counts_in_range_pass():
    validate_partition_count(1)
    validate_replication_factor(3, 3)
    validate_replication_factor(1, 1)
    assert validate_partition_increase(3, 5) == 2


# ---- replica assignments -----------------------------------------------------------------------

BAD_ASSIGNMENT = c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT


@pytest.mark.parametrize(
    ("assignment", "rf", "expected"),
    [
        ({0: [1, 2], 1: []}, 2, (BAD_ASSIGNMENT,
                                 "Cannot have replication factor of 0 for partition id 1.")),
        ({3: [1, 1]}, 1, (BAD_ASSIGNMENT,
                          "Duplicate brokers not allowed in replica assignment: 1, 1 for "
                          "partition id 3.")),
        ({0: [1, 7, 2]}, 3, (c.ERROR_CODE_BROKER_NOT_AVAILABLE,
                             "Some brokers specified for partition id 0 are not available. "
                             "Specified brokers: 1, 7, 2, available brokers: 1, 2, 3.")),
        ({3: [1, 2], 4: [1], 5: [3, 2, 1]}, 1, (BAD_ASSIGNMENT,
                                                "Inconsistent replication factor between "
                                                "partitions, partition 0 has 1 while partitions "
                                                "[3, 5] have replication factors [2, 3], "
                                                "respectively.")),
        # Per-partition checks run in partition order before the replication-factor check.
        ({2: [1, 1], 1: [9]}, 1, (c.ERROR_CODE_BROKER_NOT_AVAILABLE,
                                  "Some brokers specified for partition id 1 are not available. "
                                  "Specified brokers: 9, available brokers: 1, 2, 3.")),
    ],
)  # fmt: skip
def test_replica_assignment_errors(assignment, rf, expected):
    assert raised(validate_replica_assignment, assignment, rf, [3, 1, 2]) == (
        *expected,
        "INVALID_ARGUMENT",
    )


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({}, "partitions should be a consecutive 0-based integer sequence"),
        ({1: [1]}, "partitions should be a consecutive 0-based integer sequence"),
        ({0: [1], 2: [2]}, "partitions should be a consecutive 0-based integer sequence"),
        ({0: [1], -1: [2]}, "partitions should be a consecutive 0-based integer sequence"),
        ({0: [1, 2], 1: [2]}, "Inconsistent replication factor between partitions, partition 0 "
                              "has 2 while partitions [1] have replication factors [1], "
                              "respectively."),
        ({0: [1, 2], 1: [2, 2]}, "Duplicate brokers not allowed in replica assignment: 2, 2 for "
                                 "partition id 1."),
    ],
)  # fmt: skip
def test_topic_assignment_errors(assignment, message):
    assert raised(validate_topic_assignment, assignment, {1, 2, 3})[1] == message


def test_topic_assignment_returns_replication_factor():
    assert validate_topic_assignment({1: [2, 3], 0: [1, 2]}, {1, 2, 3}) == 2


# The expectations of Kafka's CreatePartitions integration test (3 partitions, RF 1, brokers 0-2).
@pytest.mark.parametrize(
    ("count", "assignments", "expected"),
    [
        (4, [[1, 2]], (BAD_ASSIGNMENT, "Inconsistent replication factor between partitions, "
                                       "partition 0 has 1 while partitions [3] have replication "
                                       "factors [2], respectively.")),
        (6, [[1]], (BAD_ASSIGNMENT, "Increasing the number of partitions by 3 but 1 "
                                    "assignments provided.")),
        (4, [[1], [2]], (BAD_ASSIGNMENT, "Increasing the number of partitions by 1 but 2 "
                                         "assignments provided.")),
        (4, [[1, 1]], (BAD_ASSIGNMENT, "Duplicate brokers not allowed in replica assignment: "
                                       "1, 1 for partition id 3.")),
        (5, [[1], [1, 0]], (BAD_ASSIGNMENT, "Inconsistent replication factor between "
                                            "partitions, partition 0 has 1 while partitions [4] "
                                            "have replication factors [2], respectively.")),
        (4, [[12]], (BAD_ASSIGNMENT, "Unknown broker(s) in replica assignment: 12.")),
        (5, [[12], [7, 12, 9]], (BAD_ASSIGNMENT, "Unknown broker(s) in replica assignment: "
                                                 "12, 7, 9.")),
        (4, [], (BAD_ASSIGNMENT, "Increasing the number of partitions by 1 but 0 assignments "
                                 "provided.")),
        (3, [[1]], (c.ERROR_CODE_INVALID_PARTITIONS, "Topic already has 3 partitions.")),
    ],
)  # fmt: skip
def test_new_partitions_errors(count, assignments, expected):
    assert raised(validate_new_partitions, assignments, 3, count, 1, [0, 1, 2]) == (
        *expected,
        "INVALID_ARGUMENT",
    )


def test_new_partitions_numbered_after_existing():
    assert validate_new_partitions([[1, 2], [2, 0]], 3, 5, 2, [0, 1, 2]) == {
        3: [1, 2],
        4: [2, 0],
    }


def test_topic_queued_for_deletion():
    validate_topic_not_deleting("a", {"b"})
    assert raised(validate_topic_not_deleting, "a", {"a"}) == (
        c.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS,
        "The topic is queued for deletion.",
        "FAILED_PRECONDITION",
    )
