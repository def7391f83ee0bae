"""Producer and Consumer against two scripted BrokerService servers on loopback.

The scripted brokers move a partition's leadership mid-stream, answer NOT_LEADER_OR_FOLLOWER with
a leader hint, LEADER_NOT_AVAILABLE, OFFSET_OUT_OF_RANGE and fatal errors, so the SDK's retry,
metadata refresh and leader-following paths are exercised deterministically. (The real broker
agent is used in tests/e2e; no etcd is involved here.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
import pytest

from leasehold.broker.v1 import broker_pb2 as b
from leasehold.broker.v1 import broker_pb2_grpc
from leasehold.client import ClusterMetadata, Consumer, Producer
from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import LeaseholdError
from leasehold.records import Record, build_batch, decode_records

NOT_LEADER = c.ERROR_CODE_NOT_LEADER_OR_FOLLOWER


@dataclass
class World:
    """What both scripted brokers agree on: who leads t-0, the log, and queued faults."""

    leader: int = 1
    epoch: int = 5
    log: list[b.Record] = field(default_factory=list)
    addresses: dict[int, str] = field(default_factory=dict)
    produce_faults: list[int] = field(default_factory=list)  # error codes to answer first
    move_after_fetches: int | None = None  # the leader moves to broker 2 after this many fetches
    fetches: int = 0
    calls: list[tuple[int, str]] = field(default_factory=list)

    def endpoints(self):
        return [
            c.BrokerEndpoint(broker_id=i, host=a.split(":")[0], port=int(a.split(":")[1]))
            for i, a in self.addresses.items()
        ]

    def hint(self):
        return c.LeaderIdAndEpoch(leader_id=self.leader, leader_epoch=self.epoch)


class ScriptedBroker(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(self, broker_id: int, world: World) -> None:
        self.id = broker_id
        self.w = world

    async def Metadata(self, request, context):
        self.w.calls.append((self.id, "Metadata"))
        part = b.MetadataPartition(partition=0, leader=self.w.leader, leader_epoch=self.w.epoch,
                                   replicas=[1, 2], isr=[1, 2])  # fmt: skip
        return b.MetadataResponse(
            brokers=self.w.endpoints(), topics=[b.MetadataTopic(name="t", partitions=[part])]
        )

    async def Produce(self, request, context):
        self.w.calls.append((self.id, "Produce"))
        data = request.topics[0].partitions[0]
        answer = b.PartitionProduceResponse(partition=0)
        if self.id != self.w.leader:
            answer.error_code = NOT_LEADER
            answer.current_leader.CopyFrom(self.w.hint())
        elif self.w.produce_faults:
            answer.error_code = self.w.produce_faults.pop(0)
        else:
            answer.base_offset = len(self.w.log)
            for r in decode_records(data.record_batch):
                self.w.log.append(b.Record(offset=len(self.w.log), value=r.value, key=r.key))
        return b.ProduceResponse(
            topics=[b.TopicProduceResponse(topic="t", partitions=[answer])],
            node_endpoints=self.w.endpoints(),
        )

    async def InitProducerId(self, request, context):
        self.w.calls.append((self.id, "InitProducerId"))
        return b.InitProducerIdResponse(producer_id=7, producer_epoch=0)

    async def ListOffsets(self, request, context):
        self.w.calls.append((self.id, "ListOffsets"))
        p = request.topics[0].partitions[0]
        offset = 0 if p.timestamp == -2 else len(self.w.log)
        return b.ListOffsetsResponse(
            topics=[b.ListOffsetsTopicResponse(
                topic="t", partitions=[b.ListOffsetsPartitionResponse(partition=0, offset=offset)]
            )]
        )  # fmt: skip

    async def Fetch(self, request, context):
        self.w.calls.append((self.id, "Fetch"))
        p = request.topics[0].partitions[0]
        answer = b.FetchPartitionResponse(partition=0, high_watermark=len(self.w.log))
        if self.w.move_after_fetches is not None and self.w.fetches >= self.w.move_after_fetches:
            self.w.leader, self.w.epoch, self.w.move_after_fetches = 2, self.w.epoch + 1, None
        if self.id != self.w.leader:
            answer.error_code = NOT_LEADER
            answer.current_leader.CopyFrom(self.w.hint())
        elif p.fetch_offset > len(self.w.log):
            answer.error_code = c.ERROR_CODE_OFFSET_OUT_OF_RANGE
        else:
            self.w.fetches += 1
            # Two records per fetch, starting one before the position (a batch boundary).
            start = max(0, p.fetch_offset - 1)
            rows = self.w.log[start : p.fetch_offset + 2]
            if rows:
                records = [Record(r.value, key=r.key if r.HasField("key") else None) for r in rows]
                answer.records = build_batch(start, self.w.epoch, records, 1_000)
        return b.FetchResponse(topics=[b.FetchTopicResponse(topic="t", partitions=[answer])])


@pytest.fixture
async def world():
    w = World()
    servers = []
    for broker_id in (1, 2):
        server = grpc.aio.server()
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(ScriptedBroker(broker_id, w), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        w.addresses[broker_id] = f"127.0.0.1:{port}"
    yield w
    for server in servers:
        await server.stop(0)


def metadata(w: World) -> ClusterMetadata:
    return ClusterMetadata(bootstrap=[w.addresses[1]])


async def test_producer_follows_the_leader_hint_and_retries(world):
    async with Producer(metadata(world), linger_ms=1, retry_backoff_ms=10) as producer:
        first = await producer.send("t", b"v0")
        await producer.flush()
        assert (await first).offset == 0
        world.leader, world.epoch = 2, 6  # leadership moves; broker 1 now answers NOT_LEADER
        world.produce_faults = [c.ERROR_CODE_LEADER_NOT_AVAILABLE]
        futures = [await producer.send("t", f"v{i}".encode()) for i in range(1, 4)]
        await producer.flush()
        assert [(await f).offset for f in futures] == [1, 2, 3]
    produces = [broker for broker, method in world.calls if method == "Produce"]
    assert produces == [1, 1, 2, 2]  # old leader, hint, LEADER_NOT_AVAILABLE, success
    assert [r.value for r in world.log] == [b"v0", b"v1", b"v2", b"v3"]


async def test_producer_fails_fatal_errors_and_gives_up_after_retries(world):
    async with Producer(metadata(world), linger_ms=1, retries=2, retry_backoff_ms=5) as producer:
        world.produce_faults = [c.ERROR_CODE_MESSAGE_TOO_LARGE]
        fatal = await producer.send("t", b"big")
        await producer.flush()
        with pytest.raises(LeaseholdError) as err:
            await fatal
        assert err.value.code == c.ERROR_CODE_MESSAGE_TOO_LARGE
        world.produce_faults = [c.ERROR_CODE_NOT_ENOUGH_REPLICAS] * 3
        tired = await producer.send("t", b"x")
        await producer.flush()
        with pytest.raises(LeaseholdError) as err:
            await tired
        assert err.value.code == c.ERROR_CODE_NOT_ENOUGH_REPLICAS
    assert world.log == []


async def test_producer_refuses_unknown_partitions_and_bad_acks(world):
    with pytest.raises(LeaseholdError, match="partition 3 does not exist"):
        async with Producer(metadata(world)) as producer:
            await producer.send("t", b"x", partition=3)
    with pytest.raises(LeaseholdError, match="acks must be"):
        Producer(metadata(world), acks=2)


async def test_consumer_reads_in_order_across_a_leader_move(world):
    world.log = [b.Record(offset=i, value=f"r{i}".encode()) for i in range(7)]
    world.move_after_fetches = 2
    async with Consumer(metadata(world), max_wait_ms=50, retry_backoff_ms=10) as consumer:
        await consumer.assign([("t", 0)], "earliest")
        seen = []
        for _ in range(20):
            seen += [r.offset for r in await consumer.poll(timeout_ms=500)]
            if len(seen) >= 7:
                break
    assert seen == list(range(7))
    fetch_brokers = [broker for broker, method in world.calls if method == "Fetch"]
    assert fetch_brokers[:2] == [1, 1] and fetch_brokers[-1] == 2
    assert consumer.position("t", 0) == 7


async def test_consumer_resets_an_out_of_range_position(world):
    world.log = [b.Record(offset=i, value=b"x") for i in range(3)]
    async with Consumer(metadata(world), max_wait_ms=50, auto_offset_reset="earliest") as consumer:
        await consumer.assign([("t", 0)], 10)
        records = await consumer.poll(timeout_ms=2000)
    assert [r.offset for r in records] == [0, 1]  # reset to earliest, then two per fetch
    with pytest.raises(LeaseholdError, match="partition 4 does not exist"):
        async with Consumer(metadata(world)) as consumer:
            await consumer.assign([("t", 4)])
