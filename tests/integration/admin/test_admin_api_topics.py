"""Topic creation, growth, listing and description through the gRPC API against real etcd."""

from __future__ import annotations

import asyncio
import random
import uuid

import grpc
import pytest

from leasehold.admin.v1 import admin_pb2 as a
from leasehold.assignment import BrokerMetadata, assign_replicas_to_brokers
from leasehold.common.v1 import common_pb2 as c
from leasehold.metadata.v1 import metadata_pb2
from services.admin.model import CallContext, TopicResult, frozen_assignment
from services.admin.operations import trace_context

SEED = 20240601  # the harness's placement seed (conftest)


def as_dict(assignments) -> dict[int, list[int]]:
    return {x.partition: list(x.broker_ids) for x in assignments}


async def create(admin, name, n=-1, rf=-1, assignment=None, configs=None, **kw):
    request = a.CreateTopicsRequest(
        topics=[
            a.CreatableTopic(
                name=name,
                num_partitions=n,
                replication_factor=rf,
                assignments=[
                    a.ReplicaAssignment(partition=p, broker_ids=r)
                    for p, r in (assignment or {}).items()
                ],
                configs=configs or {},
            )
        ],
        **kw,
    )
    return (await admin.stub.CreateTopics(request)).topics[0]


@pytest.mark.parametrize(
    ("racks", "partitions", "rf"),
    [
        ({1: "", 2: "", 3: ""}, 6, 3),
        ({1: "", 2: "", 3: "", 4: "", 5: ""}, 10, 2),
        ({1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}, 12, 3),
    ],
    ids=["rack-unaware-6x3", "rack-unaware-10x2", "rack-aware-12x3"],
)
async def test_create_places_like_kafka_and_writes_one_txn(admin, racks, partitions, rf):
    await admin.register_brokers(racks)
    result = await create(admin, "demo", partitions, rf, configs={"retention.ms": "60000"})
    brokers = [BrokerMetadata(b, r or None) for b, r in sorted(racks.items())]
    expected = assign_replicas_to_brokers(brokers, partitions, rf, rng=random.Random(SEED))
    assert result.error_code == c.ERROR_CODE_NONE
    assert as_dict(result.assignments) == expected
    assert (result.num_partitions, result.replication_factor) == (partitions, rf)
    assert uuid.UUID(result.topic_id).version == 4
    stored = await admin.assignment("demo")
    assert stored.topic_id == result.topic_id
    assert {p: list(r.replicas) for p, r in stored.partitions.items()} == expected
    topic_kv = await admin.etcd.get(admin.ks.topic("demo"))
    config_kv = await admin.etcd.get(admin.ks.topic_config("demo"))
    assert topic_kv.create_revision == config_kv.create_revision  # one transaction
    assert dict(metadata_pb2.ConfigEntries.FromString(config_kv.value).entries) == {
        "retention.ms": "60000"
    }


async def test_create_defaults_come_from_cluster_config(admin):
    await admin.register_brokers({1: "", 2: ""})
    await admin.stub.AlterConfigs(
        a.AlterConfigsRequest(
            resources=[
                a.AlterConfigsResource(
                    resource=a.ConfigResource(type=a.RESOURCE_TYPE_BROKER, name=""),
                    configs=[
                        a.AlterableConfig(name="num.partitions", value="4",
                                          operation=a.CONFIG_OPERATION_SET),
                        a.AlterableConfig(name="default.replication.factor", value="2",
                                          operation=a.CONFIG_OPERATION_SET),
                    ],
                )
            ]
        )
    )  # fmt: skip
    result = await create(admin, "defaults")
    assert (result.num_partitions, result.replication_factor) == (4, 2)


async def test_explicit_assignment_and_validate_only(admin):
    await admin.register_brokers({1: "", 2: "", 3: ""})
    assignment = {0: [3, 1], 1: [1, 2]}
    before = await admin.revision()
    dry = await create(admin, "explicit", 0, 0, assignment, validate_only=True)
    assert as_dict(dry.assignments) == assignment and dry.replication_factor == 2
    assert await admin.revision() == before  # validate_only writes nothing
    real = await create(admin, "explicit", 0, 0, assignment)
    assert as_dict(real.assignments) == assignment
    stored = await admin.assignment("explicit")
    assert {p: list(r.replicas) for p, r in stored.partitions.items()} == assignment


async def test_trace_context_of_the_caller_is_stored(admin):
    await admin.register_brokers({1: ""})
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    await admin.stub.CreateTopics(
        a.CreateTopicsRequest(topics=[a.CreatableTopic(name="traced", num_partitions=1,
                                                       replication_factor=1)]),
        metadata=(("traceparent", traceparent),),
    )  # fmt: skip
    stored = await admin.assignment("traced")
    assert dict(stored.trace_context.carrier) == {"traceparent": traceparent}


async def test_losing_a_creation_race_reports_topic_already_exists(admin):
    await admin.register_brokers({1: ""})
    topics = admin.app.domain.topics
    plan = TopicResult(name="race", topic_id="x", num_partitions=1, replication_factor=1,
                       assignments=frozen_assignment({0: [1]}))  # fmt: skip
    trace = trace_context(CallContext())
    first = await topics.write_new_topic(plan, {}, trace)
    before = await admin.revision()
    second = await topics.write_new_topic(plan, {"retention.ms": "1"}, trace)
    assert first is not None and second is None
    assert await admin.revision() == before
    assert await admin.etcd.get(admin.ks.topic_config("race")) is None


async def test_create_waits_for_leaders_or_reports_timeout(admin):
    await admin.register_brokers({1: "", 2: ""})

    async def controller_stand_in():
        await admin.eventually(lambda: admin.assignment("waited"))
        for p in range(3):
            await admin.set_state("waited", p, leader=1, isr=[1, 2])

    helper = asyncio.create_task(controller_stand_in())
    result = await create(admin, "waited", 3, 2, timeout_ms=10_000)
    await helper
    assert result.error_code == c.ERROR_CODE_NONE
    slow = await create(admin, "slow", 2, 1, timeout_ms=300)
    assert slow.error_code == c.ERROR_CODE_REQUEST_TIMED_OUT
    assert "2 partition(s) had no leader after 300 ms" in slow.error_message
    assert await admin.assignment("slow") is not None  # created all the same


async def test_describe_and_list_read_one_revision(admin):
    await admin.register_brokers({1: "", 2: "", 3: ""})
    await create(
        admin, "desc", 0, 0, {0: [1, 2, 3], 1: [2, 3, 1]}, configs={"min.insync.replicas": "2"}
    )
    epoch0 = await admin.set_state("desc", 0, leader=1, isr=[1, 2, 3], leader_epoch=4,
                                   controller_epoch=7)  # fmt: skip
    await admin.etcd.delete(admin.ks.broker(3))  # broker 3 goes away
    (desc,) = (await admin.stub.DescribeTopics(a.DescribeTopicsRequest(topics=["desc"]))).topics
    p0, p1 = desc.partitions
    assert (p0.leader, p0.leader_epoch, list(p0.isr)) == (1, 4, [1, 2, 3])
    assert (p0.partition_epoch, p0.controller_epoch) == (epoch0, 7)
    assert list(p0.offline_replicas) == [3]
    assert (p1.leader, p1.partition_epoch, list(p1.replicas)) == (-1, 0, [2, 3, 1])
    assert dict(desc.configs) == {"min.insync.replicas": "2"}
    listed = (await admin.stub.ListTopics(a.ListTopicsRequest())).topics
    assert [(t.name, t.partition_count, t.replication_factor) for t in listed] == [("desc", 2, 3)]
    everything = (await admin.stub.DescribeTopics(a.DescribeTopicsRequest())).topics
    assert [t.name for t in everything] == ["desc"]


async def test_partitions_added_like_kafka_and_cas_on_the_assignment(admin):
    await admin.register_brokers({1: "", 2: "", 3: "", 4: ""})
    await create(admin, "grow", 0, 0, {0: [2, 3], 1: [3, 4]})
    before = await admin.etcd.get(admin.ks.topic("grow"))
    resp = await admin.stub.CreatePartitions(
        a.CreatePartitionsRequest(topics=[a.CreatePartitionsTopic(name="grow", count=5)])
    )
    (result,) = resp.topics
    # Kafka's createNewPartitionsAssignment: start at the first broker with id >= partition 0's
    # leader (2 -> index 1), fixed shift 1, partition ids from 2.
    brokers = [BrokerMetadata(b) for b in (1, 2, 3, 4)]
    expected = assign_replicas_to_brokers(brokers, 3, 2, 1, 2)
    assert as_dict(result.assignments) == expected
    stored = await admin.assignment("grow")
    assert {p: list(r.replicas) for p, r in stored.partitions.items()} == {
        0: [2, 3], 1: [3, 4], **expected
    }  # fmt: skip
    after = await admin.etcd.get(admin.ks.topic("grow"))
    assert after.create_revision == before.create_revision
    assert stored.topic_id == metadata_pb2.TopicAssignment.FromString(before.value).topic_id

    explicit = await admin.stub.CreatePartitions(
        a.CreatePartitionsRequest(
            topics=[a.CreatePartitionsTopic(
                name="grow", count=6, assignments=[a.ReplicaAssignment(broker_ids=[4, 1])]
            )],
            timeout_ms=200,
        )
    )  # fmt: skip
    assert as_dict(explicit.topics[0].assignments) == {5: [4, 1]}
    assert explicit.topics[0].error_code == c.ERROR_CODE_REQUEST_TIMED_OUT


async def test_growth_retries_after_a_concurrent_change(admin):
    await admin.register_brokers({1: "", 2: ""})
    await create(admin, "busy", 0, 0, {0: [1]})
    store = admin.app.domain.topics.store
    real_snapshot = store.snapshot
    calls = 0

    async def snapshot_then_interfere(want):
        nonlocal calls
        snap = await real_snapshot(want)
        calls += 1
        if calls == 1:  # someone rewrites the assignment after our read
            kv = await admin.etcd.get(admin.ks.topic("busy"))
            await admin.etcd.put(admin.ks.topic("busy"), kv.value)
        return snap

    store.snapshot = snapshot_then_interfere
    try:
        resp = await admin.stub.CreatePartitions(
            a.CreatePartitionsRequest(topics=[a.CreatePartitionsTopic(name="busy", count=2)])
        )
    finally:
        store.snapshot = real_snapshot
    assert calls == 2
    assert resp.topics[0].error_code == c.ERROR_CODE_NONE
    assert len((await admin.assignment("busy")).partitions) == 2


async def test_describe_cluster_without_a_controller(admin):
    await admin.register_brokers({2: "r1", 1: "r2"})
    resp = await admin.stub.DescribeCluster(a.DescribeClusterRequest())
    assert [(b.broker_id, b.rack) for b in resp.brokers] == [(1, "r2"), (2, "r1")]
    assert not resp.HasField("active_controller")
    assert resp.cluster_id == admin.ks.cluster_id
    with pytest.raises(grpc.aio.AioRpcError):
        await admin.stub.DescribeTopics(a.DescribeTopicsRequest(topics=["none"]))
