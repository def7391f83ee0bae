"""Deletion, reassignment and election intents: what is written, waiting, and GetOperation.

The test plays the controller: it reads the intent, then writes ``/admin/results/<id>`` and
deletes the intent in one transaction, as contract 6 says the controller does.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from leasehold.admin.v1 import admin_pb2 as a
from leasehold.assignment import BrokerMetadata, propose_reassignment
from leasehold.common.v1 import common_pb2 as c
from leasehold.metadata.v1 import metadata_pb2

SEED = 20240601
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
META = (("traceparent", TRACEPARENT), ("tracestate", "vendor=x"))
CARRIER = {"traceparent": TRACEPARENT, "tracestate": "vendor=x"}


async def setup_topic(admin, name="t", assignment=None):
    assignment = assignment or {0: [1, 2], 1: [2, 3]}
    await admin.stub.CreateTopics(
        a.CreateTopicsRequest(
            topics=[
                a.CreatableTopic(
                    name=name,
                    assignments=[
                        a.ReplicaAssignment(partition=p, broker_ids=r)
                        for p, r in assignment.items()
                    ],
                )
            ]
        )
    )


@pytest.fixture
async def cluster(admin):
    await admin.register_brokers({1: "", 2: "", 3: "", 4: ""})
    await setup_topic(admin)
    return admin


async def intent(admin, key, cls):
    kv = await admin.eventually(lambda: admin.etcd.get(key))
    return cls.FromString(kv.value)


async def test_delete_writes_intent_and_waits_for_the_result(cluster):
    admin = cluster
    topic_id = (await admin.assignment("t")).topic_id
    key = admin.ks.delete_topic("t")

    async def controller():
        found = await intent(admin, key, metadata_pb2.TopicDeletion)
        assert found.topic_id == topic_id
        assert dict(found.trace_context.carrier) == CARRIER
        await admin.etcd.delete(admin.ks.topic("t"))
        await admin.finish(found.request_id, [key], [("t", -1, 0, "")])
        return found.request_id

    helper = asyncio.create_task(controller())
    resp = await admin.stub.DeleteTopics(
        a.DeleteTopicsRequest(topic_names=["t"], timeout_ms=10_000), metadata=META
    )
    request_id = await helper
    assert resp.request_id == request_id
    assert [(t.name, t.topic_id, t.error_code) for t in resp.topics] == [
        ("t", topic_id, c.ERROR_CODE_NONE)
    ]
    op = await admin.stub.GetOperation(a.GetOperationRequest(request_id=request_id))
    assert op.completed and op.completed_at_ms == 1234


async def test_delete_without_wait_returns_the_id_to_poll(cluster):
    admin = cluster
    resp = await admin.stub.DeleteTopics(a.DeleteTopicsRequest(topic_names=["t"]))
    assert resp.topics[0].error_code == c.ERROR_CODE_NONE
    stored = await intent(admin, admin.ks.delete_topic("t"), metadata_pb2.TopicDeletion)
    assert stored.request_id == resp.request_id
    pending = await admin.stub.GetOperation(a.GetOperationRequest(request_id=resp.request_id))
    assert not pending.completed and not pending.results
    listed = (await admin.stub.ListTopics(a.ListTopicsRequest())).topics
    assert [(t.name, t.marked_for_deletion) for t in listed] == [("t", True)]
    error = resp.request_id and ("t", -1, c.ERROR_CODE_UNKNOWN_SERVER_ERROR, "disk on fire")
    await admin.finish(resp.request_id, [admin.ks.delete_topic("t")], [error])
    done = await admin.stub.GetOperation(a.GetOperationRequest(request_id=resp.request_id))
    assert done.completed
    assert [(r.topic, r.error_code, r.error_message) for r in done.results] == [
        ("t", c.ERROR_CODE_UNKNOWN_SERVER_ERROR, "disk on fire")
    ]


async def test_delete_times_out_while_the_controller_is_away(cluster):
    resp = await cluster.stub.DeleteTopics(a.DeleteTopicsRequest(topic_names=["t"], timeout_ms=300))
    assert resp.topics[0].error_code == c.ERROR_CODE_REQUEST_TIMED_OUT
    assert resp.request_id in resp.topics[0].error_message


async def test_reassignment_intents_throttles_and_completion(cluster):
    admin = cluster
    request = a.AlterPartitionReassignmentsRequest(
        reassignments=[
            a.ReassignableReplicas(topic="t", partition=0, replicas=[3, 4]),
            a.ReassignableReplicas(topic="t", partition=1, replicas=[2, 4]),
        ],
        throttle_bytes_per_sec=1_000_000,
    )
    resp = await admin.stub.AlterPartitionReassignments(request, metadata=META)
    assert not resp.completed
    assert [(r.topic, r.partition, r.error_code) for r in resp.results] == [
        ("t", 0, 0), ("t", 1, 0)
    ]  # fmt: skip
    keys = [admin.ks.reassignment("t", p) for p in (0, 1)]
    stored = [await intent(admin, k, metadata_pb2.ReassignmentIntent) for k in keys]
    assert [list(s.target_replicas) for s in stored] == [[3, 4], [2, 4]]
    assert {s.request_id for s in stored} == {resp.request_id}
    assert all(dict(s.trace_context.carrier) == CARRIER for s in stored)
    # KIP-73: sources throttled as leaders, new replicas as followers, rate on every broker moved.
    kv = await admin.etcd.get(admin.ks.topic_config("t"))
    assert dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries) == {
        "leader.replication.throttled.replicas": "0:1,0:2,1:2,1:3",
        "follower.replication.throttled.replicas": "0:3,0:4,1:4",
    }
    for broker in (1, 2, 3, 4):
        kv = await admin.etcd.get(admin.ks.broker_config(broker))
        assert dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries) == {
            "leader.replication.throttled.rate": "1000000",
            "follower.replication.throttled.rate": "1000000",
        }
    ongoing = (
        await admin.stub.ListPartitionReassignments(a.ListPartitionReassignmentsRequest())
    ).reassignments
    assert [
        (o.partition, list(o.replicas), list(o.adding_replicas), list(o.removing_replicas),
         list(o.target_replicas))
        for o in ongoing
    ] == [(0, [1, 2], [3, 4], [1, 2], [3, 4]), (1, [2, 3], [4], [3], [2, 4])]  # fmt: skip
    # The controller completes partition 0 and reports partition 1 failed.
    await admin.etcd.put(
        admin.ks.topic("t"),
        metadata_pb2.TopicAssignment(
            topic_id=(await admin.assignment("t")).topic_id,
            partitions={0: metadata_pb2.ReplicaList(replicas=[3, 4]),
                        1: metadata_pb2.ReplicaList(replicas=[2, 3])},
        ).SerializeToString(),
    )  # fmt: skip
    await admin.finish(
        resp.request_id, keys, [("t", 1, c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT, "no")]
    )
    op = await admin.stub.GetOperation(a.GetOperationRequest(request_id=resp.request_id))
    assert op.completed
    assert [(r.partition, r.error_code) for r in op.results] == [
        (1, c.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT)
    ]


async def test_reassignment_waits_and_infers_outcomes(cluster):
    admin = cluster
    key = admin.ks.reassignment("t", 0)

    async def controller():
        found = await intent(admin, key, metadata_pb2.ReassignmentIntent)
        assignment = await admin.assignment("t")
        assignment.partitions[0].replicas[:] = [4, 1]
        await admin.etcd.put(admin.ks.topic("t"), assignment.SerializeToString())
        await admin.finish(found.request_id, [key])  # a result without per-partition entries

    helper = asyncio.create_task(controller())
    resp = await admin.stub.AlterPartitionReassignments(
        a.AlterPartitionReassignmentsRequest(
            reassignments=[a.ReassignableReplicas(topic="t", partition=0, replicas=[4, 1])],
            timeout_ms=10_000,
        )
    )
    await helper
    assert resp.completed
    assert [(r.partition, r.error_code) for r in resp.results] == [(0, c.ERROR_CODE_NONE)]


async def test_cancel_and_redirect_a_reassignment_in_progress(cluster):
    admin = cluster
    await admin.set_state("t", 0, leader=1, isr=[1, 2], adding_replicas=[3], removing_replicas=[2])
    first = await admin.stub.AlterPartitionReassignments(
        a.AlterPartitionReassignmentsRequest(
            reassignments=[a.ReassignableReplicas(topic="t", partition=0, replicas=[1, 4])]
        )
    )
    second = await admin.stub.AlterPartitionReassignments(
        a.AlterPartitionReassignmentsRequest(
            reassignments=[a.ReassignableReplicas(topic="t", partition=0, cancel=True)]
        )
    )
    stored = await intent(admin, admin.ks.reassignment("t", 0), metadata_pb2.ReassignmentIntent)
    assert stored.cancel and not stored.target_replicas and stored.request_id == second.request_id
    assert first.request_id != second.request_id
    # The first request's intent was overwritten: it is no longer pending, and has no result.
    with pytest.raises(Exception, match="No operation"):
        await admin.stub.GetOperation(a.GetOperationRequest(request_id=first.request_id))


async def test_election_intent_and_result(cluster):
    admin = cluster

    async def controller():
        kvs, _ = await admin.eventually(lambda: _elections(admin))
        found = metadata_pb2.ElectionIntent.FromString(kvs[0].value)
        assert found.election_type == c.ELECTION_TYPE_PREFERRED
        assert [(p.topic, p.partition) for p in found.partitions] == [("t", 0), ("t", 1)]
        assert dict(found.trace_context.carrier) == CARRIER
        await admin.finish(
            found.request_id,
            [kvs[0].key],
            [("t", 0, 0, ""), ("t", 1, c.ERROR_CODE_ELECTION_NOT_NEEDED, "")],
        )

    helper = asyncio.create_task(controller())
    resp = await admin.stub.ElectLeaders(
        a.ElectLeadersRequest(
            election_type=c.ELECTION_TYPE_PREFERRED,
            partitions=[c.TopicPartition(topic="t", partition=p) for p in (0, 1)],
            timeout_ms=10_000,
        ),
        metadata=META,
    )
    await helper
    assert resp.completed
    assert [(r.partition, r.error_code) for r in resp.results] == [
        (0, c.ERROR_CODE_NONE), (1, c.ERROR_CODE_ELECTION_NOT_NEEDED)
    ]  # fmt: skip


async def _elections(admin):
    kvs, rev = await admin.etcd.range_prefix(admin.ks.elections_prefix)
    return (kvs, rev) if kvs else None


async def test_election_for_every_partition_returns_at_once(cluster):
    admin = cluster
    resp = await admin.stub.ElectLeaders(
        a.ElectLeadersRequest(election_type=c.ELECTION_TYPE_UNCLEAN)
    )
    assert not resp.completed and not resp.results
    stored = await intent(admin, admin.ks.election(resp.request_id), metadata_pb2.ElectionIntent)
    assert stored.election_type == c.ELECTION_TYPE_UNCLEAN and not stored.partitions


async def test_generate_is_kafkas_proposal(cluster):
    admin = cluster
    resp = await admin.stub.GenerateReassignment(
        a.GenerateReassignmentRequest(topics=["t"], broker_ids=[3, 4])
    )
    expected = propose_reassignment(
        {"t": {0: [1, 2], 1: [2, 3]}},
        [BrokerMetadata(3), BrokerMetadata(4)],
        random.Random(SEED),
    )
    assert [(p.partition, list(p.replicas)) for p in resp.current] == [(0, [1, 2]), (1, [2, 3])]
    assert {p.partition: list(p.replicas) for p in resp.proposed} == expected["t"]
