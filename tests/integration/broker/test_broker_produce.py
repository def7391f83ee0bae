"""Produce on a single leader: acks, min.insync.replicas, epochs, leadership, sizes."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from broker_harness import AcceptingController, leader_and_isr, partition_state, update_metadata

from leasehold.broker.v1 import broker_pb2
from leasehold.client.errors import details_of
from leasehold.common.v1 import common_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.model import Code


def produce_req(values, acks=-1, topic="t", partition=0, epoch=-1, timeout_ms=5000):
    return broker_pb2.ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topics=[
            broker_pb2.TopicProduceData(
                topic=topic,
                partitions=[
                    broker_pb2.PartitionProduceData(
                        partition=partition,
                        current_leader_epoch=epoch,
                        records=[broker_pb2.Record(value=v) for v in values],
                    )
                ],
            )
        ],
    )


async def produce_one(b, values, **kw) -> broker_pb2.PartitionProduceResponse:
    return (await b.broker.Produce(produce_req(values, **kw))).topics[0].partitions[0]


async def lead(b, topic="t", epoch=1, replicas=(1,), isr=None):
    state = partition_state(
        topic, 0, leader=1, leader_epoch=epoch, replicas=list(replicas), isr=isr
    )
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, [state]))
    assert resp.partition_errors[0].error_code == Code.NONE


async def set_config(etcd, keyspace, topic, entries):
    await etcd.put(
        keyspace.topic_config(topic),
        metadata_pb2.ConfigEntries(entries=entries).SerializeToString(),
    )


async def eventually(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_acks_zero_one_and_all_assign_consecutive_offsets(brokers):
    b = await brokers(1)
    await lead(b)
    got = [
        ((r := await produce_one(b, vals, acks=acks)).error_code, r.base_offset)
        for acks, vals in ((0, [b"a"]), (1, [b"b", b"c"]), (-1, [b"d"]))
    ]
    assert got == [(Code.NONE, 0), (Code.NONE, 1), (Code.NONE, 3)]
    # acks is a field of the request as a whole: a bad one fails the call, naming it.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await produce_one(b, [b"e"], acks=2)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = details_of(caught.value)
    assert details.reason == "INVALID_REQUIRED_ACKS"
    assert [v.field for v in details.violations] == ["acks"]
    # Absent acks is -1 (all), absent epoch is not checked: the producer that says nothing
    # gets Kafka's safe default.
    request = produce_req([b"f"])
    request.ClearField("acks")
    request.topics[0].partitions[0].ClearField("current_leader_epoch")
    answer = (await b.broker.Produce(request)).topics[0].partitions[0]
    assert (answer.error_code, answer.base_offset) == (Code.NONE, 4)


async def test_an_epoch_of_zero_is_checked(brokers):
    b = await brokers(1)
    await lead(b, epoch=1)
    assert (await produce_one(b, [b"a"], epoch=0)).error_code == Code.FENCED_LEADER_EPOCH
    assert (await produce_one(b, [b"a"], epoch=1)).error_code == Code.NONE


async def test_min_insync_replicas(brokers, etcd, keyspace):
    b = await brokers(1)
    await lead(b, topic="mi")
    await set_config(etcd, keyspace, "mi", {"min.insync.replicas": "2"})

    async def refused():
        r = await produce_one(b, [b"x"], topic="mi")
        return r.error_code == Code.NOT_ENOUGH_REPLICAS

    await eventually(refused)
    # Nothing was appended by the refused requests; acks=1 does not need the ISR.
    before = b.agent.replicas.partitions
    leo = next(iter(before.values())).log.log_end_offset
    result = await produce_one(b, [b"y"], topic="mi", acks=1)
    assert (result.error_code, result.base_offset) == (Code.NONE, leo)


async def test_isr_shrink_while_waiting_is_not_enough_replicas_after_append(
    brokers, etcd, keyspace
):
    controller = await AcceptingController().start()
    try:
        b = await brokers(1, replica_lag_time_max_ms=400)
        peers = [b.endpoint, common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=1)]
        await b.control.UpdateMetadata(update_metadata(b, peers, controller.port))
        await set_config(etcd, keyspace, "sh", {"min.insync.replicas": "2"})
        await lead(b, topic="sh", replicas=(1, 2))
        # Broker 2 never fetches: the leader waits, then shrinks the ISR to [1] through the
        # controller, and the waiting produce learns the ISR is now too small.
        result = await produce_one(b, [b"x"], topic="sh", timeout_ms=8000)
        assert result.error_code == Code.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        (request,) = controller.requests
        assert request.broker_id == 1 and request.broker_epoch == b.epoch
        (partition,) = request.topics[0].partitions
        assert [s.broker_id for s in partition.new_isr_with_epochs] == [1]
        assert (partition.leader_epoch, partition.partition_epoch) == (1, 1)
        assert (await produce_one(b, [b"y"], topic="sh")).error_code == Code.NOT_ENOUGH_REPLICAS
    finally:
        await controller.stop()


async def test_acks_all_times_out_while_a_follower_lags(brokers):
    b = await brokers(1)
    await lead(b, replicas=(1, 2))
    started = time.monotonic()
    result = await produce_one(b, [b"x"], timeout_ms=300)
    assert result.error_code == Code.REQUEST_TIMED_OUT
    assert 0.25 < time.monotonic() - started < 5


async def test_leader_epoch_checks_and_not_leader_answers(brokers):
    b = await brokers(1)
    await lead(b, epoch=4)
    assert (await produce_one(b, [b"a"], epoch=4)).error_code == Code.NONE
    fenced = await produce_one(b, [b"a"], epoch=3)
    assert fenced.error_code == Code.FENCED_LEADER_EPOCH
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (1, 4)
    assert (await produce_one(b, [b"a"], epoch=5)).error_code == Code.UNKNOWN_LEADER_EPOCH

    other = common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=4242)
    await b.control.UpdateMetadata(update_metadata(b, [b.endpoint, other]))
    state = partition_state("t", 0, leader=2, leader_epoch=5, replicas=[1, 2])
    await b.control.LeaderAndIsr(leader_and_isr(b, [state], live_leaders=[other]))
    resp = await b.broker.Produce(produce_req([b"b"]))
    result = resp.topics[0].partitions[0]
    assert result.error_code == Code.NOT_LEADER_OR_FOLLOWER
    assert (result.current_leader.leader_id, result.current_leader.leader_epoch) == (2, 5)
    assert [(e.broker_id, e.port) for e in resp.node_endpoints] == [(2, 4242)]
    unknown = await produce_one(b, [b"c"], topic="nope")
    assert unknown.error_code == Code.UNKNOWN_TOPIC_OR_PARTITION


async def test_size_limit_and_empty_batches(brokers, etcd, keyspace):
    b = await brokers(1)
    await lead(b, topic="big")
    await set_config(etcd, keyspace, "big", {"max.message.bytes": "200"})

    async def too_large():
        r = await produce_one(b, [b"x" * 500], topic="big", acks=1)
        return r.error_code == Code.MESSAGE_TOO_LARGE

    await eventually(too_large)
    assert (await produce_one(b, [b"x" * 50], topic="big", acks=1)).error_code == Code.NONE
    assert (await produce_one(b, [], topic="big", acks=1)).error_code == Code.INVALID_RECORD


async def test_partitions_that_cannot_exist_are_refused_alone(brokers):
    b = await brokers(1)
    await lead(b)
    request = produce_req([b"x"])
    request.topics.add(topic="", partitions=[broker_pb2.PartitionProduceData(partition=0)])
    request.topics[0].partitions.add(partition=-3)
    answers = {
        (t.topic, p.partition): (p.error_code, p.error_message)
        for t in (await b.broker.Produce(request)).topics
        for p in t.partitions
    }
    assert answers[("t", 0)] == (Code.NONE, "")
    assert answers[("t", -3)] == (Code.UNKNOWN_TOPIC_OR_PARTITION, "partition must be >= 0, got -3")
    assert answers[("", 0)][0] == Code.INVALID_TOPIC_EXCEPTION


async def test_a_partition_listed_twice_fails_the_call(brokers):
    b = await brokers(1)
    request = produce_req([b"x"])
    request.topics[0].partitions.add(partition=0)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await b.broker.Produce(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in details_of(caught.value).violations] == ["topics"]
