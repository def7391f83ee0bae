"""Every validation rule through the gRPC API: the right status, a clear message, nothing written.

Each case runs against the same starting cluster (brokers 1-3; ``existing`` with 3 partitions at
RF 2; ``doomed`` queued for deletion; ``moving`` with a reassignment in progress) and checks that
etcd's revision did not move: a rejected request writes nothing at all.
"""

from __future__ import annotations

import grpc
import pytest

from leasehold.admin.v1 import admin_pb2 as a
from leasehold.common.v1 import common_pb2 as c

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EXISTS = grpc.StatusCode.ALREADY_EXISTS
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


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
    ("empty name", *create(topic("")), INVALID, "the empty string is not allowed"),
    ("dot", *create(topic(".")), INVALID, "'.' is not allowed"),
    ("dot dot", *create(topic("..")), INVALID, "'..' is not allowed"),
    ("illegal chars", *create(topic("a/b")), INVALID, "characters other than ASCII"),
    ("too long", *create(topic("x" * 250)), INVALID, "longer than the max allowed length 249"),
    ("exists", *create(topic("existing")), EXISTS, "Topic 'existing' already exists."),
    ("marked for deletion", *create(topic("doomed")), EXISTS, "is marked for deletion"),
    ("collides", *create(topic("my_events")), INVALID, "collides with existing topics: my.events"),
    ("collides in request", *create(topic("x.y"), topic("x_y")), INVALID, "collides with another"),
    ("duplicate topics", *create(topic("d1"), topic("d1")), INVALID, "duplicate topics: d1"),
    ("no topics", "CreateTopics", a.CreateTopicsRequest(), INVALID, "No topics to create"),
    # --- CreateTopics: counts
    ("zero partitions", *create(topic("t", n=0)), INVALID, "partitions must be larger than 0"),
    ("zero rf", *create(topic("t", rf=0)), INVALID, "Replication factor must be larger than 0"),
    ("rf too big", *create(topic("t", rf=4)), INVALID, "larger than available brokers: 3"),
    ("too many partitions", *create(topic("t", n=1001)), INVALID, "exceeds the maximum of 1000"),
    # --- CreateTopics: explicit assignments
    ("gap", *create(topic("t", 0, 0, [(0, [1]), (2, [2])])), INVALID, "consecutive 0-based"),
    ("dup broker", *create(topic("t", 0, 0, [(0, [1, 1])])), INVALID, "Duplicate brokers"),
    ("unknown broker", *create(topic("t", 0, 0, [(0, [1, 9])])), INVALID, "not available"),
    (
        "inconsistent rf",
        *create(topic("t", 0, 0, [(0, [1, 2]), (1, [3])])),
        INVALID,
        "Inconsistent replication factor",
    ),
    ("both given", *create(topic("t", 3, 0, [(0, [1])])), INVALID, "Both numPartitions"),
    (
        "partition twice",
        *create(topic("t", 0, 0, [(0, [1]), (0, [2])])),
        INVALID,
        "appears more than once",
    ),
    # --- CreateTopics: configs
    ("unknown config", *create(topic("t", **{"no.such": "1"})), INVALID, "Unknown topic config"),
    (
        "bad config",
        *create(topic("t", **{"retention.ms": "soon"})),
        INVALID,
        "Invalid value soon for configuration retention.ms",
    ),
    # --- CreatePartitions
    ("grow unknown", *grow("nope", 4), NOT_FOUND, "The topic 'nope' does not exist."),
    ("shrink", *grow("existing", 2), INVALID, "which is higher than the requested 2"),
    ("same count", *grow("existing", 3), INVALID, "already has 3 partitions"),
    ("grow deleting", *grow("doomed", 4), PRECONDITION, "queued for deletion"),
    ("grow moving", *grow("moving", 4), PRECONDITION, "reassignment is in progress"),
    ("grow bad broker", *grow("existing", 4, [1, 9]), INVALID, "Unknown broker(s)"),
    ("grow count mismatch", *grow("existing", 5, [1, 2]), INVALID, "2 but 1 assignments"),
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
        NOT_FOUND,
        "does not exist",
    ),  # fmt: skip
    (
        "delete twice",
        "DeleteTopics",
        a.DeleteTopicsRequest(topic_names=["doomed"]),
        PRECONDITION,
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
        INVALID,
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
    ("alter unknown key", *alter(T, "existing", ("nope", SET, "1")), INVALID, "Unknown topic"),
    (
        "alter bad value",
        *alter(T, "existing", ("min.insync.replicas", SET, "0")),
        INVALID,
        "Value must be at least 1",
    ),  # fmt: skip
    ("alter unknown topic", *alter(T, "nope", ("retention.ms", SET, "1")), NOT_FOUND, "nope"),
    ("alter deleting", *alter(T, "doomed", ("retention.ms", SET, "1")), PRECONDITION, "queued"),
    (
        "alter unknown broker",
        *alter(B, "9", ("num.partitions", SET, "2")),
        NOT_FOUND,
        "Broker 9 is not registered",
    ),  # fmt: skip
    (
        "alter bad broker name",
        *alter(B, "one", ("num.partitions", SET, "2")),
        INVALID,
        "must be a broker id",
    ),  # fmt: skip
    (
        "append non-list",
        *alter(T, "existing", ("retention.ms", APPEND, "1")),
        INVALID,
        "append is not allowed for config key: retention.ms",
    ),  # fmt: skip
    (
        "dup keys",
        *alter(T, "existing", ("retention.ms", SET, "1"), ("retention.ms", SET, "2")),
        INVALID,
        "duplicate config keys",
    ),  # fmt: skip
    (
        "no op",
        *alter(T, "existing", ("retention.ms", a.CONFIG_OPERATION_UNSPECIFIED, "1")),
        INVALID,
        "Unsupported config operation",
    ),  # fmt: skip
    (
        "no type",
        *alter(a.RESOURCE_TYPE_UNSPECIFIED, "x", ("a", SET, "1")),
        INVALID,
        "Unsupported resource type",
    ),  # fmt: skip
    ("no changes", *alter(T, "existing"), INVALID, "No config changes"),
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
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await getattr(admin.stub, method)(request_)
    assert err.value.code() == status, err.value.details()
    assert message in err.value.details()
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


async def test_multi_topic_errors_name_the_topic(cluster):
    admin = cluster
    before = await admin.revision()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await admin.stub.CreateTopics(a.CreateTopicsRequest(topics=[topic("ok"), topic("bad", 0)]))
    assert err.value.code() == INVALID
    assert err.value.details() == "Topic 'bad': Number of partitions must be larger than 0."
    assert await admin.revision() == before
    assert await admin.assignment("ok") is None  # the valid topic was not created either
