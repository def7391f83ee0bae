"""Topic deletion with the TopicDeletionManager rules of seed 000 §6."""

from __future__ import annotations

import grpc
from ctlharness import eventually

from leasehold.broker.v1 import control_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.controller.core import PartitionReplica, ReplicaState, TopicPartition


async def _setup(cluster, brokers=(1, 2, 3)):
    for b in brokers:
        await cluster.add_broker(b)
    node = await cluster.add_controller(1)
    await cluster.active()
    return node


async def _request_deletion(cluster, topic: str, topic_id: str, request_id: str) -> None:
    intent = metadata_pb2.TopicDeletion(topic_id=topic_id, request_id=request_id)
    await cluster.etcd.put(cluster.ks.delete_topic(topic), intent.SerializeToString())


async def _gone(cluster, topic: str) -> bool:
    kvs, _ = await cluster.etcd.range_prefix(cluster.ks.topic(topic))
    intent = await cluster.etcd.get(cluster.ks.delete_topic(topic))
    return not kvs and intent is None


def _deleted_on(broker, topic: str) -> set[int]:
    return {
        s.partition
        for c in broker.of_kind("StopReplica")
        for s in c.request.partition_states
        if s.topic == topic and s.delete_partition
    }


async def test_delete_topic_removes_every_key_and_reports(cluster):
    node = await _setup(cluster)
    topic_id = await cluster.create_topic("doomed", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    await cluster.etcd.put(
        cluster.ks.topic_config("doomed"),
        metadata_pb2.ConfigEntries(entries={"retention.ms": "1000"}).SerializeToString(),
    )
    await cluster.wait_states("doomed", 3, lambda s: True)
    await _request_deletion(cluster, "doomed", topic_id, "req-1")
    result = await cluster.wait_result("req-1")
    assert [(r.topic, r.partition, r.error_code) for r in result.results] == [("doomed", -1, 0)]
    assert await _gone(cluster, "doomed")
    assert await cluster.etcd.get(cluster.ks.topic_config("doomed")) is None
    assert _deleted_on(cluster.brokers[1], "doomed") == {0, 2}
    assert _deleted_on(cluster.brokers[2], "doomed") == {0, 1}
    assert _deleted_on(cluster.brokers[3], "doomed") == {1, 2}
    um = cluster.brokers[1].of_kind("UpdateMetadata")
    assert any(
        s.leader == -2 for c in um for s in c.request.partition_states if s.topic == "doomed"
    )
    await eventually(
        lambda: any(
            "doomed" in c.request.deleted_topics
            for c in cluster.brokers[2].of_kind("UpdateMetadata")
        ),
        5,
        "deleted_topics announcement",
    )
    assert "doomed" not in node.controller.ctx.all_topics


async def test_deletion_with_a_broker_down_completes_when_it_returns(cluster):
    await _setup(cluster)
    topic_id = await cluster.create_topic("d", {0: [1, 3], 1: [2, 3]})
    await cluster.wait_states("d", 2, lambda s: True)
    b3 = cluster.brokers[3]
    await b3.deregister()
    await cluster.wait_states("d", 2, lambda s: 3 not in s.leader_and_isr.isr)
    await _request_deletion(cluster, "d", topic_id, "req-2")
    await eventually(
        lambda: _deleted_on(cluster.brokers[1], "d") == {0}, 10, "replica deletion on 1"
    )
    await eventually(
        lambda: _deleted_on(cluster.brokers[2], "d") == {1}, 10, "replica deletion on 2"
    )
    assert await cluster.result("req-2") is None
    assert not await _gone(cluster, "d")
    await b3.register(cluster.etcd, cluster.ks)
    await cluster.wait_result("req-2")
    assert await _gone(cluster, "d")
    assert _deleted_on(b3, "d") == {0, 1}


async def test_broker_dying_mid_deletion_does_not_leave_it_stuck(cluster):
    node = await _setup(cluster, brokers=(1, 2))
    topic_id = await cluster.create_topic("m", {0: [1, 2]})
    await cluster.wait_states("m", 1, lambda s: True)
    b2 = cluster.brokers[2]
    port = b2.port
    await b2.server.stop(0)  # registered but unreachable: StopReplica is retried, unanswered
    await _request_deletion(cluster, "m", topic_id, "req-3")
    r2 = PartitionReplica(TopicPartition("m", 0), 2)
    await eventually(
        lambda: node.controller.ctx.replica_state(r2) is ReplicaState.REPLICA_DELETION_STARTED,
        10,
        "deletion started on the unreachable broker",
    )
    await b2.deregister()  # it dies
    # Its replica leaves DeletionStarted (Ineligible, then Offline awaiting a retry) and the
    # topic is ineligible for deletion until the broker returns.
    await eventually(
        lambda: node.controller.ctx.is_topic_ineligible_for_deletion("m"), 10, "ineligible topic"
    )
    assert node.controller.ctx.replica_state(r2) is ReplicaState.OFFLINE
    assert await cluster.result("req-3") is None
    # It comes back on the same port; the deletion resumes and completes.
    b2.server = grpc.aio.server()
    control_pb2_grpc.add_BrokerControlServiceServicer_to_server(b2, b2.server)
    assert b2.server.add_insecure_port(f"127.0.0.1:{port}") == port
    await b2.server.start()
    await b2.register(cluster.etcd, cluster.ks)
    await cluster.wait_result("req-3")
    assert await _gone(cluster, "m")


async def test_failed_replica_deletion_is_retried(cluster):
    await _setup(cluster, brokers=(1, 2))
    topic_id = await cluster.create_topic("f", {0: [1, 2]})
    await cluster.wait_states("f", 1, lambda s: True)
    cluster.brokers[2].failing_topics.add("f")
    await _request_deletion(cluster, "f", topic_id, "req-4")
    await eventually(
        lambda: (
            len(
                [
                    c
                    for c in cluster.brokers[2].of_kind("StopReplica")
                    if any(s.delete_partition for s in c.request.partition_states)
                ]
            )
            >= 2
        ),
        10,
        "a retried StopReplica(delete)",
    )
    assert not await _gone(cluster, "f")
    cluster.brokers[2].failing_topics.clear()
    await cluster.wait_result("req-4")
    assert await _gone(cluster, "f")


async def test_deletion_disabled_answers_and_keeps_the_topic(cluster):
    await cluster.etcd.put(
        cluster.ks.broker_config(None),
        metadata_pb2.ConfigEntries(entries={"delete.topic.enable": "false"}).SerializeToString(),
    )
    await _setup(cluster, brokers=(1,))
    topic_id = await cluster.create_topic("keep", {0: [1]})
    await cluster.wait_states("keep", 1, lambda s: True)
    await _request_deletion(cluster, "keep", topic_id, "req-5")
    result = await cluster.wait_result("req-5")
    assert [(r.topic, r.error_code) for r in result.results] == [
        ("keep", common_pb2.ERROR_CODE_TOPIC_DELETION_DISABLED)
    ]
    assert await cluster.etcd.get(cluster.ks.delete_topic("keep")) is None
    assert await cluster.etcd.get(cluster.ks.topic("keep")) is not None
    assert not cluster.brokers[1].of_kind("StopReplica")
