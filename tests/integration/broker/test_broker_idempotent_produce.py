"""Producer batches on a real broker: sent as bytes, deduplicated, gaps and fenced epochs
refused, producer ids unique across brokers, and acks=all waits that outlive a new epoch."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from broker_harness import leader_and_isr, partition_state

from leasehold.broker.v1 import broker_pb2
from leasehold.records import BatchBuilder, decode_records
from services.broker_agent.model import Code

T = "idem"


def batch(seq: int, values: list[bytes], epoch: int = 0, pid: int = 9) -> bytes:
    builder = BatchBuilder()
    for v in values:
        builder.append(v, 1_000)
    return builder.build(0, -1, pid, epoch, seq)


def produce_req(data: bytes, acks: int = 1, timeout_ms: int = 5000, **fields):
    part = broker_pb2.PartitionProduceData(partition=0, current_leader_epoch=-1, **fields)
    if data:
        part.record_batch = data
    return broker_pb2.ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topics=[broker_pb2.TopicProduceData(topic=T, partitions=[part])],
    )


async def produce(b, data: bytes, **kw) -> broker_pb2.PartitionProduceResponse:
    return (await b.broker.Produce(produce_req(data, **kw))).topics[0].partitions[0]


async def lead(b, epoch=1, leader=1, replicas=(1,), isr=None):
    state = partition_state(T, 0, leader=leader, leader_epoch=epoch, replicas=list(replicas),
                            isr=isr)  # fmt: skip
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, [state]))
    assert resp.partition_errors[0].error_code == Code.NONE


async def fetch(b, offset: int, epoch: int, replica_id: int = 2):
    """A fetch as follower ``replica_id`` (-1: a consumer) makes it."""
    request = broker_pb2.FetchRequest(
        replica_id=replica_id,
        replica_broker_epoch=-1,
        record_format=broker_pb2.RECORD_FORMAT_BATCHES,
        topics=[
            broker_pb2.FetchTopic(
                topic=T,
                partitions=[
                    broker_pb2.FetchPartition(
                        partition=0,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )
    return (await b.broker.Fetch(request)).topics[0].partitions[0]


async def test_a_resent_batch_is_stored_once_and_gaps_and_old_epochs_are_refused(brokers):
    b = await brokers(1)
    await lead(b)
    first = await produce(b, batch(0, [b"a", b"b"]))
    again = await produce(b, batch(0, [b"a", b"b"]))
    assert (first.error_code, first.base_offset) == (Code.NONE, 0)
    assert (again.error_code, again.base_offset) == (Code.NONE, 0)  # the original's offset
    assert (await produce(b, batch(2, [b"c"]))).base_offset == 2

    gap = await produce(b, batch(9, [b"z"]))
    assert gap.error_code == Code.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert (
        await produce(b, batch(3, [b"d"], epoch=1))
    ).error_code == Code.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert (await produce(b, batch(0, [b"d"], epoch=1))).base_offset == 3  # a new epoch
    fenced = await produce(b, batch(1, [b"e"], epoch=0))
    assert fenced.error_code == Code.INVALID_PRODUCER_EPOCH

    overtaken = await produce(b, batch(5, [b"y"], pid=10))  # its batch at 0 not yet seen
    assert overtaken.error_code == Code.UNKNOWN_PRODUCER_ID

    fetched = await fetch(b, 0, 1, replica_id=-1)
    assert [r.value for r in decode_records(fetched.records)] == [b"a", b"b", b"c", b"d"]


async def test_bad_batches_and_contradicting_fields(brokers):
    b = await brokers(1)
    await lead(b)
    corrupt = bytearray(batch(0, [b"a"]))
    corrupt[-1] ^= 0xFF
    assert (await produce(b, bytes(corrupt))).error_code == Code.CORRUPT_MESSAGE
    two = batch(0, [b"a"]) + batch(1, [b"b"])
    assert (await produce(b, two)).error_code == Code.CORRUPT_MESSAGE
    for request in (
        produce_req(batch(0, [b"a"]), records=[broker_pb2.Record(value=b"x")]),
        produce_req(b"", records=[broker_pb2.Record(value=b"x")], producer_id=4),
        produce_req(batch(0, [b"a"]), producer_id=4, producer_epoch=0, base_sequence=0),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await b.broker.Produce(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Records with producer fields are an idempotent producer's too.
    fields = {"producer_id": 4, "producer_epoch": 0, "base_sequence": 0}
    records = [broker_pb2.Record(value=b"r")]
    assert (await produce(b, b"", records=records, **fields)).base_offset == 0
    assert (await produce(b, b"", records=records, **fields)).base_offset == 0  # deduplicated


async def test_producer_ids_are_unique_across_brokers(brokers):
    one, two = await brokers(1), await brokers(2)
    ids = []
    for b in (one, two, one, two):
        answer = await b.broker.InitProducerId(broker_pb2.InitProducerIdRequest())
        assert (answer.error_code, answer.producer_epoch) == (Code.NONE, 0)
        ids.append(answer.producer_id)
    assert len(set(ids)) == 4
    assert ids[2] == ids[0] + 1 and ids[3] == ids[1] + 1  # each broker hands out its block


async def test_a_pending_acks_all_write_outlives_a_new_epoch_without_a_leader_change(brokers):
    b = await brokers(1)
    await lead(b, replicas=(1, 2), isr=[1, 2])
    waiting = asyncio.create_task(produce(b, batch(0, [b"x"]), acks=-1, timeout_ms=10_000))
    await asyncio.sleep(0.3)
    assert not waiting.done()  # follower 2 has not fetched it
    await lead(b, epoch=2, replicas=(1, 2), isr=[1, 2])  # same leader, new epoch
    await fetch(b, 0, 2)
    await fetch(b, 1, 2)  # follower 2 holds offset 0: the high watermark passes it
    answer = await asyncio.wait_for(waiting, 10)
    assert (answer.error_code, answer.base_offset) == (Code.NONE, 0)


async def test_a_pending_acks_all_write_fails_when_leadership_moves(brokers):
    b = await brokers(1)
    await lead(b, replicas=(1, 2), isr=[1, 2])
    waiting = asyncio.create_task(produce(b, batch(0, [b"x"]), acks=-1, timeout_ms=10_000))
    await asyncio.sleep(0.3)
    await lead(b, epoch=2, leader=2, replicas=(1, 2), isr=[1, 2])
    answer = await asyncio.wait_for(waiting, 10)
    assert answer.error_code == Code.NOT_LEADER_OR_FOLLOWER
