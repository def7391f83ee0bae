"""Every validation rule through the gRPC API: the right error, a clear message, nothing written.

Each case runs against the same starting cluster (brokers 1-3; ``existing`` with 3 partitions at
RF 2; ``doomed`` queued for deletion; ``moving`` with a reassignment in progress) and checks that
etcd's revision did not move: a rejected request writes nothing at all. A whole-call refusal is a
gRPC status with the rich details of the error model (``item(...)`` cases instead expect the OK
answer of CreateTopics, CreatePartitions, DeleteTopics or AlterConfigs to refuse its one item
with that ErrorCode).
"""

from __future__ import annotations

from typing import NamedTuple

import grpc
import pytest

from leasehold.admin.v1 import admin_pb2 as a
from leasehold.client.errors import details_of
from leasehold.common.v1 import common_pb2 as c

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EXISTS = grpc.StatusCode.ALREADY_EXISTS
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


class Item(NamedTuple):
    """The per-item ErrorCode a case expects in an OK answer."""

    code: int


def item(name: str) -> Item:
    return Item(c.ErrorCode.Value(f"ERROR_CODE_{name}"))


def results_of(response):
    return list(getattr(response, "topics", None) or response.results)


def topic(name, n=1, rf=1, assignment=None, **configs):
    return a.CreatableTopic(
        name=name,
        num_partitions=n,
        replication_factor=rf,
        assignments=[a.ReplicaAssignment(partition=p, broker_ids=r) for p, r in (assignment or [])],
        configs=configs,
    )


def create(*topics):
    return "CreateTopics", a.CreateTopicsRequest(topics=list(topics))


def grow(name, count, *assignments):
    return "CreatePartitions", a.CreatePartitionsRequest(
        topics=[
            a.CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=[a.ReplicaAssignment(broker_ids=r) for r in assignments],
            )
        ]
    )


def reassign(*entries, throttle=0):
    return "AlterPartitionReassignments", a.AlterPartitionReassignmentsRequest(
        reassignments=[
            a.ReassignableReplicas(topic=t, partition=p, replicas=r, cancel=cancel)
            for t, p, r, cancel in entries
        ],
        throttle_bytes_per_sec=throttle,
    )


def elect(kind, *parts):
    return "ElectLeaders", a.ElectLeadersRequest(
        election_type=kind, partitions=[c.TopicPartition(topic=t, partition=p) for t, p in parts]
    )


def alter(rtype, name, *ops):
    return "AlterConfigs", a.AlterConfigsRequest(
        resources=[
            a.AlterConfigsResource(
                resource=a.ConfigResource(type=rtype, name=name),
                configs=[a.AlterableConfig(name=k, value=v, operation=o) for k, o, v in ops],
            )
        ]
    )


T, B = a.RESOURCE_TYPE_TOPIC, a.RESOURCE_TYPE_BROKER
SET, APPEND = a.CONFIG_OPERATION_SET, a.CONFIG_OPERATION_APPEND
PREFERRED = c.ELECTION_TYPE_PREFERRED

CASES = [
    # --- CreateTopics: names (Kafka's Topic.validate and collision rule)
    (
        "empty name",
        *create(topic("")),
        item("INVALID_TOPIC_EXCEPTION"),
        "the empty string is not allowed",
    ),
    ("dot", *create(topic(".")), item("INVALID_TOPIC_EXCEPTION"), "'.' is not allowed"),
    ("dot dot", *create(topic("..")), item("INVALID_TOPIC_EXCEPTION"), "'..' is not allowed"),
    (
        "illegal chars",
        *create(topic("a/b")),
        item("INVALID_TOPIC_EXCEPTION"),
        "characters other than ASCII",
    ),
    (
        "too long",
        *create(topic("x" * 250)),
        item("INVALID_TOPIC_EXCEPTION"),
        "longer than the max allowed length 249",
    ),
    (
        "exists",
        *create(topic("existing")),
        item("TOPIC_ALREADY_EXISTS"),
        "Topic 'existing' already exists.",
    ),
    (
        "marked for deletion",
        *create(topic("doomed")),
        item("TOPIC_ALREADY_EXISTS"),
        "is marked for deletion",
    ),
    (
        "collides",
        *create(topic("my_events")),
        item("INVALID_TOPIC_EXCEPTION"),
        "collides with existing topics: my.events",
    ),
    ("duplicate topics", *create(topic("d1"), topic("d1")), INVALID, "duplicate topics: d1"),
    ("no topics", "CreateTopics", a.CreateTopicsRequest(), INVALID, "No topics to create"),
    # --- CreateTopics: counts
    (
        "zero partitions",
        *create(topic("t", n=0)),
        item("INVALID_PARTITIONS"),
        "partitions must be larger than 0",
    ),
    (
        "zero rf",
        *create(topic("t", rf=0)),
        item("INVALID_REPLICATION_FACTOR"),
        "Replication factor must be larger than 0",
    ),
    (
        "rf too big",
        *create(topic("t", rf=4)),
        item("INVALID_REPLICATION_FACTOR"),
        "larger than available brokers: 3",
    ),
    (
        "too many partitions",
        *create(topic("t", n=1001)),
        item("INVALID_PARTITIONS"),
        "exceeds the maximum of 1000",
    ),
    # --- CreateTopics: explicit assignments
    (
        "gap",
        *create(topic("t", 0, 0, [(0, [1]), (2, [2])])),
        item("INVALID_REPLICA_ASSIGNMENT"),
        "consecutive 0-based",
    ),
    (
        "dup broker",
        *create(topic("t", 0, 0, [(0, [1, 1])])),
        item("INVALID_REPLICA_ASSIGNMENT"),
        "Duplicate brokers",
    ),
    (
        "unknown broker",
        *create(topic("t", 0, 0, [(0, [1, 9])])),
        item("BROKER_NOT_AVAILABLE"),
        "not available",
    ),
    (
        "inconsistent rf",
        *create(topic("t", 0, 0, [(0, [1, 2]), (1, [3])])),
        item("INVALID_REPLICA_ASSIGNMENT"),
        "Inconsistent replication factor",
    ),
    (
        "both given",
        *create(topic("t", 3, 0, [(0, [1])])),
        item("INVALID_REQUEST"),
        "Both numPartitions",
    ),
    (
        "partition twice",
        *create(topic("t", 0, 0, [(0, [1]), (0, [2])])),
        INVALID,
        "appears more than once",
    ),
    # --- CreateTopics: configs
    (
        "unknown config",
        *create(topic("t", **{"no.such": "1"})),
        item("INVALID_CONFIG"),
        "Unknown topic config",
    ),
    (
        "bad config",
        *create(topic("t", **{"retention.ms": "soon"})),
        item("INVALID_CONFIG"),
        "Invalid value soon for configuration retention.ms",
    ),
    # --- CreatePartitions
    (
        "grow unknown",
        *grow("nope", 4),
        item("UNKNOWN_TOPIC_OR_PARTITION"),
        "The topic 'nope' does not exist.",
    ),
    (
        "shrink",
        *grow("existing", 2),
        item("INVALID_PARTITIONS"),
        "which is higher than the requested 2",
    ),
    ("same count", *grow("existing", 3), item("INVALID_PARTITIONS"), "already has 3 partitions"),
    (
        "grow deleting",
        *grow("doomed", 4),
        item("TOPIC_DELETION_IN_PROGRESS"),
        "queued for deletion",
    ),
    (
        "grow moving",
        *grow("moving", 4),
        item("REASSIGNMENT_IN_PROGRESS"),
        "reassignment is in progress",
    ),
    (
        "grow bad broker",
        *grow("existing", 4, [1, 9]),
        item("INVALID_REPLICA_ASSIGNMENT"),
        "Unknown broker(s)",
    ),
    (
        "grow count mismatch",
        *grow("existing", 5, [1, 2]),
        item("INVALID_REPLICA_ASSIGNMENT"),
        "2 but 1 assignments",
    ),
    (
        "grow dup",
        "CreatePartitions",
        a.CreatePartitionsRequest(topics=[a.CreatePartitionsTopic(name="existing", count=4)] * 2),
        INVALID,
        "duplicate topics",
    ),  # fmt: skip
    # --- DeleteTopics
    (
        "delete unknown",
        "DeleteTopics",
        a.DeleteTopicsRequest(topic_names=["nope"]),
        item("UNKNOWN_TOPIC_OR_PARTITION"),
        "does not exist",
    ),  # fmt: skip
    (
        "delete twice",
        "DeleteTopics",
        a.DeleteTopicsRequest(topic_names=["doomed"]),
        item("TOPIC_DELETION_IN_PROGRESS"),
        "queued for deletion",
    ),  # fmt: skip
    (
        "delete dup",
        "DeleteTopics",
        a.DeleteTopicsRequest(topic_names=["existing", "existing"]),
        INVALID,
        "duplicate topics",
    ),  # fmt: skip
    ("delete none", "DeleteTopics", a.DeleteTopicsRequest(), INVALID, "No topics to delete"),
    (
        "delete bad name",
        "DeleteTopics",
        a.DeleteTopicsRequest(topic_names=["a b"]),
        item("INVALID_TOPIC_EXCEPTION"),
        "Topic name is invalid",
    ),  # fmt: skip
    # --- AlterPartitionReassignments
    ("reassign none", *reassign(), INVALID, "list cannot be empty"),
    (
        "reassign dup partition",
        *reassign(("existing", 0, [1], False), ("existing", 0, [2], False)),
        INVALID,
        "duplicate topic partitions: existing-0",
    ),  # fmt: skip
    (
        "reassign dup replica",
        *reassign(("existing", 0, [3, 3], False)),
        INVALID,
        "existing-0 contains multiple entries for 3",
    ),  # fmt: skip
    ("reassign empty", *reassign(("existing", 0, [], False)), INVALID, "cannot be empty"),
    ("reassign unknown topic", *reassign(("nope", 0, [1], False)), NOT_FOUND, "does not exist"),
    (
        "reassign unknown partition",
        *reassign(("existing", 7, [1], False)),
        NOT_FOUND,
        "Partition 7 of topic 'existing' does not exist",
    ),  # fmt: skip
    (
        "reassign unknown broker",
        *reassign(("existing", 0, [1, 9], False)),
        INVALID,
        "Unknown broker id 9",
    ),  # fmt: skip
    ("reassign no change", *reassign(("existing", 0, [1, 2], False)), INVALID, "no change"),
    ("reassign same target", *reassign(("moving", 0, [2], False)), INVALID, "no change"),
    ("reassign deleting", *reassign(("doomed", 0, [1], False)), PRECONDITION, "queued"),
    (
        "cancel idle",
        *reassign(("existing", 1, [], True)),
        PRECONDITION,
        "No reassignment is in progress for partition existing-1",
    ),  # fmt: skip
    ("cancel with replicas", *reassign(("moving", 0, [1], True)), INVALID, "must not name"),
    (
        "negative throttle",
        *reassign(("existing", 0, [3, 1], False), throttle=-5),
        INVALID,
        "must not be negative",
    ),  # fmt: skip
    # --- ElectLeaders
    ("elect no type", *elect(c.ELECTION_TYPE_UNSPECIFIED), INVALID, "Unsupported election type"),
    ("elect unknown topic", *elect(PREFERRED, ("nope", 0)), NOT_FOUND, "does not exist"),
    ("elect unknown partition", *elect(PREFERRED, ("existing", 3)), NOT_FOUND, "Partition 3"),
    ("elect dup", *elect(PREFERRED, ("existing", 0), ("existing", 0)), INVALID, "duplicate"),
    ("elect deleting", *elect(PREFERRED, ("doomed", 0)), PRECONDITION, "queued for deletion"),
    # --- AlterConfigs
    (
        "alter unknown key",
        *alter(T, "existing", ("nope", SET, "1")),
        item("INVALID_CONFIG"),
        "Unknown topic",
    ),
    (
        "alter bad value",
        *alter(T, "existing", ("min.insync.replicas", SET, "0")),
        item("INVALID_CONFIG"),
        "Value must be at least 1",
    ),  # fmt: skip
    (
        "alter unknown topic",
        *alter(T, "nope", ("retention.ms", SET, "1")),
        item("UNKNOWN_TOPIC_OR_PARTITION"),
        "nope",
    ),
    (
        "alter deleting",
        *alter(T, "doomed", ("retention.ms", SET, "1")),
        item("TOPIC_DELETION_IN_PROGRESS"),
        "queued",
    ),
    (
        "alter unknown broker",
        *alter(B, "9", ("num.partitions", SET, "2")),
        item("BROKER_NOT_AVAILABLE"),
        "Broker 9 is not registered",
    ),  # fmt: skip
    (
        "alter bad broker name",
        *alter(B, "one", ("num.partitions", SET, "2")),
        item("INVALID_REQUEST"),
        "must be a broker id",
    ),  # fmt: skip
    (
        "append non-list",
        *alter(T, "existing", ("retention.ms", APPEND, "1")),
        item("INVALID_CONFIG"),
        "append is not allowed for config key: retention.ms",
    ),  # fmt: skip
    (
        "dup keys",
        *alter(T, "existing", ("retention.ms", SET, "1"), ("retention.ms", SET, "2")),
        item("INVALID_REQUEST"),
        "duplicate config keys",
    ),  # fmt: skip
    (
        "no op",
        *alter(T, "existing", ("retention.ms", a.CONFIG_OPERATION_UNSPECIFIED, "1")),
        item("INVALID_REQUEST"),
        "Unsupported config operation",
    ),  # fmt: skip
    (
        "no type",
        *alter(a.RESOURCE_TYPE_UNSPECIFIED, "x", ("a", SET, "1")),
        INVALID,
        "Unsupported resource type",
    ),  # fmt: skip
    ("no changes", *alter(T, "existing"), item("INVALID_REQUEST"), "No config changes"),
    # --- GenerateReassignment
    (
        "generate dup topics",
        "GenerateReassignment",
        a.GenerateReassignmentRequest(topics=["existing", "existing"], broker_ids=[1, 2]),
        INVALID,
        "List of topics to reassign contains duplicate entries: [existing]",
    ),  # fmt: skip
    (
        "generate dup brokers",
        "GenerateReassignment",
        a.GenerateReassignmentRequest(topics=["existing"], broker_ids=[1, 1]),
        INVALID,
        "Broker list contains duplicate entries: [1]",
    ),  # fmt: skip
    (
        "generate unknown",
        "GenerateReassignment",
        a.GenerateReassignmentRequest(topics=["nope"], broker_ids=[1, 2]),
        NOT_FOUND,
        "does not exist",
    ),  # fmt: skip
    (
        "generate too few brokers",
        "GenerateReassignment",
        a.GenerateReassignmentRequest(topics=["existing"], broker_ids=[1]),
        INVALID,
        "Replication factor: 2 larger than available brokers: 1.",
    ),  # fmt: skip
    # --- reads and polling
    (
        "describe unknown",
        "DescribeTopics",
        a.DescribeTopicsRequest(topics=["nope"]),
        NOT_FOUND,
        "does not exist",
    ),  # fmt: skip
    (
        "describe bad name",
        "DescribeTopics",
        a.DescribeTopicsRequest(topics=[".."]),
        INVALID,
        "'..' is not allowed",
    ),  # fmt: skip
    (
        "describe configs unknown",
        "DescribeConfigs",
        a.DescribeConfigsRequest(resources=[a.ConfigResource(type=T, name="nope")]),
        NOT_FOUND,
        "nope",
    ),  # fmt: skip
    (
        "list reassign unknown",
        "ListPartitionReassignments",
        a.ListPartitionReassignmentsRequest(
            partitions=[c.TopicPartition(topic="existing", partition=9)]
        ),
        NOT_FOUND,
        "Partition 9",
    ),  # fmt: skip
    (
        "operation unknown",
        "GetOperation",
        a.GetOperationRequest(request_id="abc"),
        NOT_FOUND,
        "No operation with request id abc",
    ),  # fmt: skip
    (
        "operation bad id",
        "GetOperation",
        a.GetOperationRequest(request_id="a/b"),
        INVALID,
        "request_id must be",
    ),  # fmt: skip
]


@pytest.fixture
async def cluster(admin):
    await admin.register_brokers({1: "", 2: "", 3: ""})
    assignment = [(0, [1, 2]), (1, [2, 3]), (2, [3, 1])]
    topics = [
        topic("existing", 0, 0, assignment),
        topic("doomed"),
        topic("moving", 0, 0, [(0, [1])]),
        topic("my.events"),
    ]
    await admin.stub.CreateTopics(a.CreateTopicsRequest(topics=topics))
    await admin.stub.DeleteTopics(a.DeleteTopicsRequest(topic_names=["doomed"]))
    await admin.stub.AlterPartitionReassignments(
        a.AlterPartitionReassignmentsRequest(
            reassignments=[a.ReassignableReplicas(topic="moving", partition=0, replicas=[2])]
        )
    )
    return admin


@pytest.mark.parametrize(
    ("method", "request_", "status", "message"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_rejected_and_nothing_written(cluster, method, request_, status, message):
    admin = cluster
    before = await admin.revision()
    if isinstance(status, Item):
        (result,) = results_of(await getattr(admin.stub, method)(request_))
        assert c.ErrorCode.Name(result.error_code) == c.ErrorCode.Name(status.code)
        assert message in result.error_message
    else:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await getattr(admin.stub, method)(request_)
        assert err.value.code() == status, err.value.details()
        assert message in err.value.details()
        details = details_of(err.value)
        assert details.reason == c.ErrorCode.Name(details.code).removeprefix("ERROR_CODE_")
    assert await admin.revision() == before


async def test_delete_refused_when_deletion_disabled(cluster):
    admin = cluster
    await admin.stub.AlterConfigs(
        a.AlterConfigsRequest(
            resources=[
                a.AlterConfigsResource(
                    resource=a.ConfigResource(type=B, name=""),
                    configs=[a.AlterableConfig(name="delete.topic.enable", value="false",
                                               operation=SET)],
                )
            ]
        )
    )  # fmt: skip
    before = await admin.revision()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await admin.stub.DeleteTopics(a.DeleteTopicsRequest(topic_names=["existing"]))
    assert err.value.code() == PRECONDITION
    assert "delete.topic.enable=false" in err.value.details()
    assert await admin.revision() == before


async def test_valid_topics_are_created_and_refused_ones_reported(cluster):
    admin = cluster
    response = await admin.stub.CreateTopics(
        a.CreateTopicsRequest(topics=[topic("ok"), topic("bad", 0), topic("x.y"), topic("x_y")])
    )
    outcomes = [(t.name, c.ErrorCode.Name(t.error_code), t.error_message) for t in response.topics]
    assert outcomes == [
        ("ok", "ERROR_CODE_NONE", ""),
        ("bad", "ERROR_CODE_INVALID_PARTITIONS", "Number of partitions must be larger than 0."),
        ("x.y", "ERROR_CODE_NONE", ""),
        (
            "x_y",
            "ERROR_CODE_INVALID_TOPIC_EXCEPTION",
            "Topic 'x_y' collides with another topic of this request: x.y",
        ),
    ]
    assert await admin.assignment("ok") is not None
    assert await admin.assignment("x.y") is not None
    assert await admin.assignment("bad") is None and await admin.assignment("x_y") is None


async def test_per_item_refusals_leave_the_others_to_go_on(cluster):
    admin = cluster
    grown = await admin.stub.CreatePartitions(
        a.CreatePartitionsRequest(
            topics=[
                a.CreatePartitionsTopic(name="existing", count=4),
                a.CreatePartitionsTopic(name="nope", count=2),
            ]
        )
    )
    assert [(t.name, t.error_code) for t in grown.topics] == [
        ("existing", c.ERROR_CODE_NONE),
        ("nope", c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert len(grown.topics[0].assignments) == 1
    altered = await admin.stub.AlterConfigs(
        a.AlterConfigsRequest(
            resources=[
                a.AlterConfigsResource(
                    resource=a.ConfigResource(type=T, name="existing"),
                    configs=[a.AlterableConfig(name="retention.ms", value="1000", operation=SET)],
                ),
                a.AlterConfigsResource(
                    resource=a.ConfigResource(type=T, name="doomed"),
                    configs=[a.AlterableConfig(name="retention.ms", value="1000", operation=SET)],
                ),
            ]
        )
    )
    assert [r.error_code for r in altered.results] == [
        c.ERROR_CODE_NONE,
        c.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS,
    ]
    described = await admin.stub.DescribeTopics(a.DescribeTopicsRequest(topics=["existing"]))
    assert described.topics[0].configs["retention.ms"] == "1000"
    assert len(described.topics[0].partitions) == 4
    deleted = await admin.stub.DeleteTopics(
        a.DeleteTopicsRequest(topic_names=["my.events", "nope", "doomed"])
    )
    assert deleted.request_id
    assert [(t.name, t.error_code) for t in deleted.topics] == [
        ("my.events", c.ERROR_CODE_NONE),
        ("nope", c.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION),
        ("doomed", c.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS),
    ]


async def test_whole_call_refusals_name_the_field(cluster):
    admin = cluster
    cases = [
        ("CreateTopics", a.CreateTopicsRequest(), "topics"),
        ("CreateTopics", a.CreateTopicsRequest(topics=[topic("d"), topic("d")]), "topics"),
        ("DeleteTopics", a.DeleteTopicsRequest(), "topic_names"),
        ("AlterConfigs", alter(7, "x", ("a", SET, "1"))[1], "resources[0].resource.type"),
        ("ElectLeaders", elect(9)[1], "election_type"),
        (
            "GenerateReassignment",
            a.GenerateReassignmentRequest(topics=["existing"], broker_ids=[1, 2, 99]),
            "broker_ids",
        ),
    ]
    for method, request, field in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await getattr(admin.stub, method)(request)
        assert err.value.code() == INVALID, (method, err.value.details())
        details = details_of(err.value)
        assert [v.field for v in details.violations] == [field], method
    assert "99" in err.value.details()
