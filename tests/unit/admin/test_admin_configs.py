"""Config schema: parsing and validation messages, defaults, resolution order, alter operations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold import configs
from leasehold.common.v1 import common_pb2 as c
from leasehold.configs import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    AlterOp,
    ConfigSource,
    ResourceType,
    apply_alter_ops,
    effective,
    format_value,
    parse_value,
    throttled_replicas,
    validate,
)
from leasehold.errors import InvalidRequestError

TOPIC = ResourceType.TOPIC
BROKER = ResourceType.BROKER
THROTTLE_FORMAT = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


def test_schema_names_are_the_agreed_ones():
    assert sorted(TOPIC_CONFIGS) == [
        "cleanup.policy",
        "delete.retention.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.ms",
        "unclean.leader.election.enable",
    ]
    assert sorted(BROKER_CONFIGS) == [
        "auto.leader.rebalance.enable",
        "default.replication.factor",
        "delete.topic.enable",
        "follower.replication.throttled.rate",
        "leader.imbalance.check.interval.seconds",
        "leader.imbalance.per.broker.percentage",
        "leader.replication.throttled.rate",
        "min.insync.replicas",
        "num.partitions",
        "replica.lag.time.max.ms",
        "unclean.leader.election.enable",
    ]
    for key in [*TOPIC_CONFIGS.values(), *BROKER_CONFIGS.values()]:
        assert key.doc.strip()


# ---- parsing good values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "name", "raw", "parsed"),
    [
        (TOPIC, "retention.ms", "5", 5),
        (TOPIC, "retention.ms", " 5 ", 5),
        (TOPIC, "retention.ms", "+5", 5),
        (TOPIC, "retention.ms", "-1", -1),
        (TOPIC, "retention.bytes", "-9223372036854775808", -(2**63)),
        (TOPIC, "segment.bytes", "14", 14),
        (TOPIC, "segment.bytes", "2147483647", 2**31 - 1),
        (TOPIC, "unclean.leader.election.enable", " TRUE ", True),
        (TOPIC, "unclean.leader.election.enable", "False", False),
        (TOPIC, "message.timestamp.type", "LogAppendTime", "LogAppendTime"),
        (TOPIC, "cleanup.policy", "delete", ("delete",)),
        (TOPIC, "cleanup.policy", "delete , delete", ("delete", "delete")),
        (TOPIC, "leader.replication.throttled.replicas", "0:1, 1:2", ("0:1", "1:2")),
        (TOPIC, "leader.replication.throttled.replicas", "*", ("*",)),
        (TOPIC, "follower.replication.throttled.replicas", "", ()),
        (TOPIC, "follower.replication.throttled.replicas", "0:1,", ("0:1", "")),
        (BROKER, "leader.imbalance.per.broker.percentage", "100", 100),
        (BROKER, "leader.imbalance.per.broker.percentage", "0", 0),
        (BROKER, "leader.replication.throttled.rate", "0", 0),
        (BROKER, "delete.topic.enable", "false", False),
    ],
)
def test_good_values(resource, name, raw, parsed):
    assert validate(resource, {name: raw}) == {name: parsed}


# ---- rejecting bad values, in Kafka's words ----------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "name", "raw", "message"),
    [
        (TOPIC, "foo", "1", "Unknown topic config name: foo"),
        (BROKER, "retention.ms", "1", "Unknown broker config name: retention.ms"),
        (TOPIC, "retention.ms", "abc",
         "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        (TOPIC, "retention.ms", "5_000",
         "Invalid value 5_000 for configuration retention.ms: Not a number of type LONG"),
        (TOPIC, "retention.ms", "1.5",
         "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"),
        (TOPIC, "retention.ms", "-2",
         "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
        (TOPIC, "retention.ms", " -2",
         "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
        (TOPIC, "segment.bytes", "13",
         "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
        (TOPIC, "segment.bytes", "2147483648",
         "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"),
        (TOPIC, "segment.ms", "0",
         "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
        (TOPIC, "min.insync.replicas", "0",
         "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (TOPIC, "max.message.bytes", "-1",
         "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"),
        (TOPIC, "index.interval.bytes", "-1",
         "Invalid value -1 for configuration index.interval.bytes: Value must be at least 0"),
        (TOPIC, "unclean.leader.election.enable", "yes",
         "Invalid value yes for configuration unclean.leader.election.enable: Expected value to "
         "be either true or false"),
        (TOPIC, "message.timestamp.type", "createtime",
         "Invalid value createtime for configuration message.timestamp.type: String must be one "
         "of: CreateTime, LogAppendTime"),
        (TOPIC, "cleanup.policy", "compacted",
         "Invalid value [compacted] for configuration cleanup.policy: String must be one of: "
         "compact, delete"),
        (TOPIC, "cleanup.policy", "delete,Compact",
         "Invalid value [delete, Compact] for configuration cleanup.policy: String must be one "
         "of: compact, delete"),
        (TOPIC, "cleanup.policy", "",
         "Invalid value [] for configuration cleanup.policy: String must be one of: compact, "
         "delete"),
        (TOPIC, "min.cleanable.dirty.ratio", "1.5",
         "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more "
         "than 1.0"),
        (TOPIC, "min.cleanable.dirty.ratio", "half",
         "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type "
         "DOUBLE"),
        (TOPIC, "delete.retention.ms", "-1",
         "Invalid value -1 for configuration delete.retention.ms: Value must be at least 0"),
        (TOPIC, "leader.replication.throttled.replicas", "0:1,*",
         "Invalid value [0:1, *] for configuration leader.replication.throttled.replicas: "
         f"leader.replication.throttled.replicas {THROTTLE_FORMAT}"),
        (TOPIC, "follower.replication.throttled.replicas", "a:b",
         "Invalid value [a:b] for configuration follower.replication.throttled.replicas: "
         f"follower.replication.throttled.replicas {THROTTLE_FORMAT}"),
        (TOPIC, "follower.replication.throttled.replicas", "1:-2",
         "Invalid value [1:-2] for configuration follower.replication.throttled.replicas: "
         f"follower.replication.throttled.replicas {THROTTLE_FORMAT}"),
        (BROKER, "leader.imbalance.per.broker.percentage", "101",
         "Invalid value 101 for configuration leader.imbalance.per.broker.percentage: Value must "
         "be no more than 100"),
        (BROKER, "leader.imbalance.per.broker.percentage", "-1",
         "Invalid value -1 for configuration leader.imbalance.per.broker.percentage: Value must "
         "be at least 0"),
        (BROKER, "leader.imbalance.check.interval.seconds", "0",
         "Invalid value 0 for configuration leader.imbalance.check.interval.seconds: Value must "
         "be at least 1"),
        (BROKER, "replica.lag.time.max.ms", "0",
         "Invalid value 0 for configuration replica.lag.time.max.ms: Value must be at least 1"),
        (BROKER, "leader.replication.throttled.rate", "-1",
         "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at "
         "least 0"),
        (BROKER, "follower.replication.throttled.rate", "9223372036854775808",
         "Invalid value 9223372036854775808 for configuration follower.replication.throttled.rate:"
         " Not a number of type LONG"),
        (BROKER, "default.replication.factor", "0",
         "Invalid value 0 for configuration default.replication.factor: Value must be at least 1"),
        (BROKER, "num.partitions", "0",
         "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
        (BROKER, "auto.leader.rebalance.enable", "1",
         "Invalid value 1 for configuration auto.leader.rebalance.enable: Expected value to be "
         "either true or false"),
    ],
)  # fmt: skip
def test_bad_values(resource, name, raw, message):
    with pytest.raises(InvalidRequestError) as raised:
        validate(resource, {name: raw})
    assert raised.value.message == message
    assert raised.value.code == c.ERROR_CODE_INVALID_CONFIG
    assert raised.value.grpc_status == "INVALID_ARGUMENT"


def test_unknown_names_are_reported_before_bad_values():
    with pytest.raises(InvalidRequestError) as raised:
        validate(TOPIC, {"retention.ms": "x", "nope": "1"})
    assert raised.value.message == "Unknown topic config name: nope"


# ---- defaults and resolution -------------------------------------------------------------------

TOPIC_DEFAULTS = {
    "cleanup.policy": "delete",
    "delete.retention.ms": "86400000",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}
BROKER_DEFAULTS = {
    "auto.leader.rebalance.enable": "true",
    "default.replication.factor": "1",
    "delete.topic.enable": "true",
    "follower.replication.throttled.rate": "9223372036854775807",
    "leader.imbalance.check.interval.seconds": "300",
    "leader.imbalance.per.broker.percentage": "10",
    "leader.replication.throttled.rate": "9223372036854775807",
    "min.insync.replicas": "1",
    "num.partitions": "1",
    "replica.lag.time.max.ms": "30000",
    "unclean.leader.election.enable": "false",
}


@pytest.mark.parametrize(
    ("resource", "defaults"), [(TOPIC, TOPIC_DEFAULTS), (BROKER, BROKER_DEFAULTS)]
)
def test_kafka_defaults(resource, defaults):
    resolved = effective(resource)
    assert {n: r.value for n, r in resolved.entries.items()} == defaults
    assert all(r.source == ConfigSource.DEFAULT and r.is_default for r in resolved.entries.values())


@pytest.mark.parametrize(
    ("name", "topic", "broker", "cluster", "value", "source"),
    [
        ("min.insync.replicas", {"min.insync.replicas": "3"}, {"min.insync.replicas": "2"},
         {"min.insync.replicas": "4"}, "3", ConfigSource.TOPIC),
        ("min.insync.replicas", {}, {"min.insync.replicas": "2"},
         {"min.insync.replicas": "4"}, "2", ConfigSource.BROKER),
        ("min.insync.replicas", {}, {}, {"min.insync.replicas": "4"}, "4",
         ConfigSource.CLUSTER_DEFAULT),
        ("min.insync.replicas", {}, {}, {}, "1", ConfigSource.DEFAULT),
        ("unclean.leader.election.enable", {}, {}, {"unclean.leader.election.enable": "TRUE"},
         "true", ConfigSource.CLUSTER_DEFAULT),
        # Topic-only keys never read the broker levels.
        ("retention.ms", {}, {"retention.ms": "1"}, {"retention.ms": "2"}, "604800000",
         ConfigSource.DEFAULT),
        # A stored value that no longer parses is skipped; the next level applies.
        ("min.insync.replicas", {"min.insync.replicas": "zero"}, {"min.insync.replicas": "0"},
         {"min.insync.replicas": "2"}, "2", ConfigSource.CLUSTER_DEFAULT),
        ("leader.replication.throttled.replicas",
         {"leader.replication.throttled.replicas": "0:1 , 1:2"}, {}, {}, "0:1,1:2",
         ConfigSource.TOPIC),
    ],
)  # fmt: skip
def test_topic_resolution(name, topic, broker, cluster, value, source):
    resolved = effective(TOPIC, topic, broker, cluster)[name]
    assert (resolved.value, resolved.source) == (value, source)
    assert resolved.doc == TOPIC_CONFIGS[name].doc


def test_broker_resolution_ignores_topic_entries():
    resolved = effective(
        BROKER,
        topic_entries={"num.partitions": "9"},
        broker_entries={"num.partitions": "3"},
        cluster_entries={"num.partitions": "6", "delete.topic.enable": "false"},
    )
    assert (resolved["num.partitions"].value, resolved["num.partitions"].source) == (
        "3",
        ConfigSource.BROKER,
    )
    assert resolved["delete.topic.enable"].source == ConfigSource.CLUSTER_DEFAULT
    cluster_only = effective(BROKER, cluster_entries={"num.partitions": "6"})
    assert cluster_only["num.partitions"].source == ConfigSource.CLUSTER_DEFAULT


def test_typed_getters():
    resolved = effective(TOPIC, {"retention.ms": "10", "cleanup.policy": "delete"})
    assert resolved.get_int("retention.ms") == 10
    assert resolved.get_bool("unclean.leader.election.enable") is False
    assert resolved.get_str("message.timestamp.type") == "CreateTime"
    assert resolved.get_list("cleanup.policy") == ("delete",)
    with pytest.raises(TypeError):
        resolved.get_int("unclean.leader.election.enable")
    with pytest.raises(TypeError):
        resolved.get_bool("retention.ms")
    with pytest.raises(KeyError):
        resolved.get_int("nope")


def test_source_and_resource_numbers_match_the_admin_proto():
    from leasehold.admin.v1 import admin_pb2

    assert ConfigSource.DEFAULT == admin_pb2.CONFIG_SOURCE_DEFAULT
    assert ConfigSource.TOPIC == admin_pb2.CONFIG_SOURCE_TOPIC
    assert ConfigSource.BROKER == admin_pb2.CONFIG_SOURCE_BROKER
    assert ConfigSource.CLUSTER_DEFAULT == admin_pb2.CONFIG_SOURCE_CLUSTER_DEFAULT
    assert ResourceType.TOPIC == admin_pb2.RESOURCE_TYPE_TOPIC
    assert ResourceType.BROKER == admin_pb2.RESOURCE_TYPE_BROKER
    assert AlterOp.SET == admin_pb2.CONFIG_OPERATION_SET
    assert AlterOp.DELETE == admin_pb2.CONFIG_OPERATION_DELETE
    assert AlterOp.APPEND == admin_pb2.CONFIG_OPERATION_APPEND
    assert AlterOp.SUBTRACT == admin_pb2.CONFIG_OPERATION_SUBTRACT


# ---- incremental alter ------------------------------------------------------------------------

LEADER = "leader.replication.throttled.replicas"


@pytest.mark.parametrize(
    ("current", "ops", "expected"),
    [
        ({}, [("retention.ms", AlterOp.SET, "5")], {"retention.ms": "5"}),
        ({"retention.ms": "5"}, [("retention.ms", AlterOp.DELETE, "")], {}),
        ({}, [("retention.ms", AlterOp.DELETE, "")], {}),
        ({}, [(LEADER, AlterOp.APPEND, "0:1,1:2")], {LEADER: "0:1,1:2"}),
        ({LEADER: "0:1"}, [(LEADER, AlterOp.APPEND, "1:2,0:1")], {LEADER: "0:1,1:2"}),
        ({LEADER: "0:1,1:2,0:1"}, [(LEADER, AlterOp.SUBTRACT, "0:1")], {LEADER: "1:2,0:1"}),
        ({}, [(LEADER, AlterOp.SUBTRACT, "0:1")], {LEADER: ""}),
        ({}, [("cleanup.policy", AlterOp.APPEND, "delete")], {"cleanup.policy": "delete"}),
        ({"segment.ms": "9"},
         [("retention.ms", AlterOp.SET, "7"), ("segment.ms", AlterOp.DELETE, "")],
         {"retention.ms": "7"}),
    ],
)  # fmt: skip
def test_alter_ops(current, ops, expected):
    assert apply_alter_ops(TOPIC, current, ops) == expected


@pytest.mark.parametrize(
    ("ops", "code", "message"),
    [
        ([("retention.ms", AlterOp.SET, "1"), ("retention.ms", AlterOp.DELETE, "")],
         c.ERROR_CODE_INVALID_REQUEST, "Error due to duplicate config keys"),
        ([("nope", AlterOp.SET, "1")], c.ERROR_CODE_INVALID_CONFIG,
         "Unknown topic config name: nope"),
        ([("retention.ms", AlterOp.APPEND, "1")], c.ERROR_CODE_INVALID_CONFIG,
         "Config value append is not allowed for config key: retention.ms"),
        ([("segment.ms", AlterOp.SUBTRACT, "1")], c.ERROR_CODE_INVALID_CONFIG,
         "Config value subtract is not allowed for config key: segment.ms"),
        ([("cleanup.policy", AlterOp.APPEND, "compacted")], c.ERROR_CODE_INVALID_CONFIG,
         "Invalid value [delete, compacted] for configuration cleanup.policy: String must be "
         "one of: compact, delete"),
        ([("retention.ms", AlterOp.SET, "x")], c.ERROR_CODE_INVALID_CONFIG,
         "Invalid value x for configuration retention.ms: Not a number of type LONG"),
    ],
)  # fmt: skip
def test_alter_op_errors(ops, code, message):
    with pytest.raises(InvalidRequestError) as raised:
        apply_alter_ops(TOPIC, {}, ops)
    assert (raised.value.code, raised.value.message) == (code, message)


def test_alter_does_not_touch_the_input():
    current = {"retention.ms": "5"}
    apply_alter_ops(TOPIC, current, [("retention.ms", AlterOp.DELETE, "")])
    assert current == {"retention.ms": "5"}


# ---- throttled replicas ------------------------------------------------------------------------


def test_throttled_replicas_interpretation():
    everything = throttled_replicas(("*",))
    assert everything.all_replicas and everything.applies(7, 3)
    listed = throttled_replicas(("0:1", " 1:2", ""))
    assert listed.replicas == frozenset({(0, 1), (1, 2)})
    assert listed.applies(1, 2) and not listed.applies(2, 1)
    assert throttled_replicas(()).replicas == frozenset()


# ---- round trips -------------------------------------------------------------------------------


NUMERIC_KEYS = sorted(
    (resource, key.name)
    for resource in (TOPIC, BROKER)
    for key in configs.schema(resource).values()
    if key.type in (configs.ConfigType.INT, configs.ConfigType.LONG)
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(NUMERIC_KEYS),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(["", " ", "\t"]),
    st.booleans(),
)
def test_numbers_parse_and_print_back(resource_and_name, number, pad, plus):
    resource, name = resource_and_name
    key = configs.schema(resource)[name]
    if key.type is configs.ConfigType.INT:
        number = number % 2**32 - 2**31
    text = f"{pad}{'+' if plus and number >= 0 else ''}{number}{pad}"
    try:
        parsed = parse_value(key, text)
    except InvalidRequestError as e:
        # Only the range check may refuse a well-formed number of the right width.
        assert "Value must be" in e.message
        return
    assert parsed == number
    assert format_value(key, parsed) == str(number)
    assert effective(resource, {name: text}, {name: text})[name].value == str(number)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=8))
def test_throttled_lists_parse_and_print_back(pairs):
    key = TOPIC_CONFIGS[LEADER]
    parsed = parse_value(key, " , ".join(f"{p}:{b}" for p, b in pairs))
    assert format_value(key, parsed) == ",".join(f"{p}:{b}" for p, b in pairs)
    assert throttled_replicas(parsed).replicas == frozenset(pairs)
