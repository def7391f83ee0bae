"""Fetch (consumers and a follower played by the test), long polling, ListOffsets and
OffsetsForLeaderEpoch on one leader."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from broker_harness import leader_and_isr, partition_state

from leasehold.broker.v1 import broker_pb2
from leasehold.client.errors import details_of
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.log import decode_records
from services.broker_agent.model import Code

T = "f"


async def lead(b, epoch, replicas=(1,), isr=None):
    state = partition_state(T, 0, leader=1, leader_epoch=epoch, replicas=list(replicas), isr=isr)
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, [state]))
    assert resp.partition_errors[0].error_code == Code.NONE


async def produce(b, values, acks=1, timestamps=None):
    records = [
        broker_pb2.Record(value=v, timestamp_ms=(timestamps[i] if timestamps else 0))
        for i, v in enumerate(values)
    ]
    resp = await b.broker.Produce(
        broker_pb2.ProduceRequest(
            acks=acks,
            timeout_ms=5000,
            topics=[
                broker_pb2.TopicProduceData(
                    topic=T,
                    partitions=[
                        broker_pb2.PartitionProduceData(
                            partition=0, current_leader_epoch=-1, records=records
                        )
                    ],
                )
            ],
        )
    )
    result = resp.topics[0].partitions[0]
    assert result.error_code == Code.NONE, result
    return result.base_offset


def fetch_req(offset, *, replica_id=-1, epoch=-1, last_epoch=-1, wait=0, min_bytes=0,
              fmt=broker_pb2.RECORD_FORMAT_RECORDS):  # fmt: skip
    return broker_pb2.FetchRequest(
        replica_id=replica_id,
        replica_broker_epoch=77 if replica_id >= 0 else -1,
        max_wait_ms=wait,
        min_bytes=min_bytes,
        record_format=fmt,
        topics=[
            broker_pb2.FetchTopic(
                topic=T,
                partitions=[
                    broker_pb2.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_epoch,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )


async def fetch(b, offset, **kw) -> broker_pb2.FetchPartitionResponse:
    return (await b.broker.Fetch(fetch_req(offset, **kw))).topics[0].partitions[0]


async def list_offset(b, timestamp, replica_id=-1):
    resp = await b.broker.ListOffsets(
        broker_pb2.ListOffsetsRequest(
            replica_id=replica_id,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=T,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=0, current_leader_epoch=-1, timestamp=timestamp
                        )
                    ],
                )
            ],
        )
    )
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset


async def epoch_end(b, epoch, current=-1):
    resp = await b.broker.OffsetsForLeaderEpoch(
        broker_pb2.OffsetsForLeaderEpochRequest(
            replica_id=2,
            topics=[
                broker_pb2.OffsetForLeaderTopic(
                    topic=T,
                    partitions=[
                        broker_pb2.OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=current, leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
    )
    p = resp.topics[0].partitions[0]
    return p.error_code, p.leader_epoch, p.end_offset


async def test_consumers_read_up_to_the_high_watermark_and_followers_move_it(brokers):
    b = await brokers(1)
    await lead(b, 1, replicas=(1, 2))
    await produce(b, [b"a", b"b"])
    await produce(b, [b"c"])
    consumer = await fetch(b, 0)
    assert (consumer.error_code, consumer.high_watermark, consumer.log_end_offset) == (
        Code.NONE,
        0,
        3,
    )
    assert list(consumer.decoded_records) == []  # nothing committed yet

    # The test acts as follower 2: it gets raw batches up to the log end ...
    follower = await fetch(b, 0, replica_id=2, epoch=1, fmt=broker_pb2.RECORD_FORMAT_BATCHES)
    assert [r.value for r in decode_records(follower.records)] == [b"a", b"b", b"c"]
    # ... and fetching from offset 3 tells the leader it holds everything: HW moves to 3.
    follower = await fetch(b, 3, replica_id=2, epoch=1, last_epoch=1)
    assert (follower.error_code, follower.high_watermark) == (Code.NONE, 3)
    consumer = await fetch(b, 1)
    assert [(r.offset, r.value) for r in consumer.decoded_records] == [(1, b"b"), (2, b"c")]
    # Out of range, and a stale epoch from the follower.
    assert (await fetch(b, 9)).error_code == Code.OFFSET_OUT_OF_RANGE
    stale = await fetch(b, 3, replica_id=2, epoch=0)
    assert stale.error_code == Code.FENCED_LEADER_EPOCH
    assert (await fetch(b, 3, replica_id=2, epoch=2)).error_code == Code.UNKNOWN_LEADER_EPOCH
    assert (await fetch(b, 3, replica_id=3, epoch=1)).error_code == Code.NOT_LEADER_OR_FOLLOWER


async def test_a_client_that_leaves_out_replica_id_and_epoch_is_a_consumer(brokers):
    b = await brokers(1)
    await lead(b, 1, replicas=(1, 2))
    await produce(b, [b"a"])
    request = fetch_req(0)
    request.ClearField("replica_id")
    request.ClearField("replica_broker_epoch")
    request.topics[0].partitions[0].ClearField("current_leader_epoch")
    request.topics[0].partitions[0].ClearField("last_fetched_epoch")
    consumer = (await b.broker.Fetch(request)).topics[0].partitions[0]
    # A consumer: nothing is committed yet (a follower would get the record), no epoch checked.
    assert (consumer.error_code, consumer.high_watermark, consumer.log_end_offset) == (
        Code.NONE,
        0,
        1,
    )
    assert list(consumer.decoded_records) == []
    # Replica id 0 given is broker 0, not a consumer: not a replica of this partition.
    request.replica_id = 0
    assert (await b.broker.Fetch(request)).topics[0].partitions[0].error_code == (
        Code.NOT_LEADER_OR_FOLLOWER
    )


async def test_an_unknown_record_format_fails_the_call(brokers):
    b = await brokers(1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await b.broker.Fetch(fetch_req(0, fmt=99))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = details_of(caught.value)
    assert details.reason == "INVALID_REQUEST"
    assert [v.field for v in details.violations] == ["record_format"]


async def test_long_poll_waits_for_data_and_for_max_wait(brokers):
    b = await brokers(1)
    await lead(b, 1)
    await produce(b, [b"a"])
    started = time.monotonic()
    empty = await fetch(b, 1, wait=300, min_bytes=1)
    assert list(empty.decoded_records) == []
    assert 0.25 < time.monotonic() - started < 3

    waiting = asyncio.create_task(fetch(b, 1, wait=10_000, min_bytes=1))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    started = time.monotonic()
    await produce(b, [b"b"])
    woken = await asyncio.wait_for(waiting, 5)
    assert [(r.offset, r.value) for r in woken.decoded_records] == [(1, b"b")]
    assert time.monotonic() - started < 2


async def test_diverging_epoch_and_offsets_for_leader_epoch(brokers):
    b = await brokers(1)
    await lead(b, 1, replicas=(1, 2))
    await produce(b, [b"a", b"b"])  # epoch 1: offsets 0-1
    await lead(b, 3, replicas=(1, 2))
    await produce(b, [b"c"])  # epoch 3: offset 2
    assert await epoch_end(b, 1) == (Code.NONE, 1, 2)
    assert await epoch_end(b, 2) == (Code.NONE, 1, 2)
    assert await epoch_end(b, 3) == (Code.NONE, 3, 3)
    assert await epoch_end(b, 4) == (Code.NONE, -1, -1)
    assert (await epoch_end(b, 1, current=2))[0] == Code.FENCED_LEADER_EPOCH
    # A follower whose last batch is from epoch 2 (unknown here) at offset 3 has diverged:
    # it is told where the leader's history differs instead of getting data.
    diverged = await fetch(b, 3, replica_id=2, epoch=-1, last_epoch=2)
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (1, 2)
    assert diverged.records == b""
    fine = await fetch(
        b, 2, replica_id=2, epoch=-1, last_epoch=1, fmt=broker_pb2.RECORD_FORMAT_BATCHES
    )
    assert fine.error_code == Code.NONE
    assert not fine.HasField("diverging_epoch")
    assert [r.value for r in decode_records(fine.records)] == [b"c"]


async def test_list_offsets(brokers):
    b = await brokers(1)
    await lead(b, 1, replicas=(1, 2))
    await produce(b, [b"a", b"b", b"c"], timestamps=[1_000, 2_000, 3_000])
    await fetch(b, 3, replica_id=2, epoch=1)  # follower caught up: HW 3
    await produce(b, [b"d"], timestamps=[4_000])  # above the HW
    assert await list_offset(b, -2) == (Code.NONE, 0)
    assert await list_offset(b, -1) == (Code.NONE, 3)  # consumers: the high watermark
    assert await list_offset(b, -1, replica_id=2) == (Code.NONE, 4)  # followers: log end
    assert await list_offset(b, 1_500) == (Code.NONE, 1)
    assert await list_offset(b, 3_000) == (Code.NONE, 2)
    assert await list_offset(b, 3_500) == (Code.NONE, -1)  # only uncommitted data is newer
    assert await list_offset(b, 9_000) == (Code.NONE, -1)


async def test_leader_throttles_listed_out_of_sync_followers(brokers, etcd, keyspace):
    b = await brokers(1)
    await etcd.put(
        keyspace.topic_config(T),
        metadata_pb2.ConfigEntries(
            entries={"leader.replication.throttled.replicas": "0:1"}
        ).SerializeToString(),
    )
    await etcd.put(  # the rate is a dynamic broker config, as --throttle writes it
        keyspace.broker_config(1),
        metadata_pb2.ConfigEntries(
            entries={"leader.replication.throttled.rate": "100"}
        ).SerializeToString(),
    )
    state = partition_state(T, 0, leader=1, leader_epoch=1, replicas=[1, 2, 3], isr=[1, 3])
    await b.control.LeaderAndIsr(leader_and_isr(b, [state]))
    await produce(b, [b"x" * 300])

    async def throttled():
        settings = b.agent.replicas.settings(T)
        return 0 in settings.leader_throttled and b.agent.replicas.leader_quota.bound == 100

    deadline = time.monotonic() + 10
    while not await throttled():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    batches = broker_pb2.RECORD_FORMAT_BATCHES
    first = await fetch(b, 0, replica_id=2, epoch=1, fmt=batches)
    assert len(first.records) > 300  # the quota was not yet used up
    second = await fetch(b, 0, replica_id=2, epoch=1, fmt=batches)
    assert (second.error_code, second.records) == (Code.NONE, b"")  # over 100 bytes/s
    # An in-sync follower is never throttled.
    in_sync = await fetch(b, 0, replica_id=3, epoch=1, fmt=batches)
    assert in_sync.records == first.records
