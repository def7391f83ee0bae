"""Produce with acks=all, RF 3: throughput and latency, against a bare gRPC unary echo.

A cluster of 2 controllers, 3 broker agents and admin (broker logs on disk, flushed before an
acks=all answer) gets one topic of 6 partitions, replication factor 3,
``min.insync.replicas=2``, created through admin. With the cluster settled, in one process,
closed loops of ``bench.framework.closed_loop`` measure, each for the same duration after a
warm-up, with 128-byte values:

- **gRPC echo unary** at 1 (the baseline) and 16 in flight: ``bench.raw_grpc.measure_unary``
  against its echo server in a spawned process — what one Python unary call costs here;
- **Produce RPC**: raw ``BrokerService.Produce`` calls to the partition leaders, one record per
  call, ``acks=-1``, at 1 in flight (partition 0) and 16 in flight (spread over partitions);
- **SDK Producer** (``leasehold.client.Producer``, ``acks="all"``): one record awaited at a
  time with ``linger_ms=0`` (latency), and many records outstanding with the default
  ``linger_ms=5`` (throughput: the producer batches per partition, one request per leader).

Latency is per call for the RPC rows and per record (send to acknowledgement) for the SDK rows.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import grpc

from bench.framework import (
    BenchSuite,
    Column,
    Load,
    Result,
    Row,
    RunContext,
    child_process,
    closed_loop,
)
from bench.raw_grpc import PAYLOAD_BYTES, measure_unary, serve_echo
from bench.scenario import Scenario
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.client import AdminClient, Producer
from leasehold.common.v1 import common_pb2

TOPIC = "produce-bench"
PARTITIONS = 6
MIN_ISR = "2"
PAYLOAD = b"x" * PAYLOAD_BYTES
RPC_IN_FLIGHT = 16
BASELINE = "gRPC echo unary, 1 in flight"


@dataclass(frozen=True)
class Knobs:
    duration_s: float
    warmup_s: float
    outstanding: int

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(
            duration_s=ctx.pick(5.0, 0.3),
            warmup_s=ctx.pick(1.0, 0.1),
            outstanding=ctx.pick(256, 32),
        )


async def leader_stubs(
    address: str, channels: dict[str, grpc.aio.Channel]
) -> dict[int, broker_pb2_grpc.BrokerServiceStub]:
    """Partition -> a stub on its leader (from a broker's Metadata), one channel per leader
    kept in ``channels`` for the caller to close."""
    async with grpc.aio.insecure_channel(address) as channel:
        answer = await broker_pb2_grpc.BrokerServiceStub(channel).Metadata(
            broker_pb2.MetadataRequest(topics=[TOPIC]), timeout=10
        )
    hosts = {b.broker_id: f"{b.host}:{b.port}" for b in answer.brokers}
    stubs: dict[int, broker_pb2_grpc.BrokerServiceStub] = {}
    for part in answer.topics[0].partitions:
        host = hosts[part.leader]
        if host not in channels:
            channels[host] = grpc.aio.insecure_channel(host)
        stubs[part.partition] = broker_pb2_grpc.BrokerServiceStub(channels[host])
    return stubs


async def measure_produce_rpc(
    stubs: dict[int, broker_pb2_grpc.BrokerServiceStub], *, in_flight: int, timing: dict
) -> Load:
    """One-record acks=all Produce calls; worker ``w`` writes partition ``w % partitions``."""

    async def op(worker: int) -> int:
        partition = worker % len(stubs)
        request = broker_pb2.ProduceRequest(
            acks=-1,
            timeout_ms=30_000,
            topics=[
                broker_pb2.TopicProduceData(
                    topic=TOPIC,
                    partitions=[
                        broker_pb2.PartitionProduceData(
                            partition=partition,
                            records=[broker_pb2.Record(value=PAYLOAD)],
                            current_leader_epoch=-1,
                        )
                    ],
                )
            ],
        )
        answer = await stubs[partition].Produce(request, timeout=35)
        code = answer.topics[0].partitions[0].error_code
        if code != common_pb2.ERROR_CODE_NONE:
            raise RuntimeError(f"Produce failed: {common_pb2.ErrorCode.Name(code)}")
        return 1

    return await closed_loop(op, concurrency=in_flight, **timing)


async def measure_producer(admin: str, *, in_flight: int, linger_ms: int, timing: dict) -> Load:
    """Records sent through the SDK Producer and awaited; ``in_flight`` records outstanding."""
    async with Producer(admin=admin, acks="all", linger_ms=linger_ms) as producer:
        await producer.send_and_wait(TOPIC, PAYLOAD, partition=0)  # metadata loaded

        async def op(worker: int) -> int:
            future = await producer.send(TOPIC, PAYLOAD, partition=worker % PARTITIONS)
            await future
            return 1

        return await closed_loop(op, concurrency=in_flight, **timing)


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    timing = {"duration_s": knobs.duration_s, "warmup_s": knobs.warmup_s}
    rows: list[Row] = []
    async with Scenario(controllers=2, brokers=3, admin=True) as sc:
        await sc.start_services()
        async with AdminClient(sc.cluster.admin_address, timeout=60) as admin:
            created = await admin.create_topic(
                TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": MIN_ISR}, timeout_ms=60_000
            )
            if created.error_code != common_pb2.ERROR_CODE_NONE:
                raise RuntimeError(f"cannot create {TOPIC}: {created.error_message}")
        await sc.settle()
        with child_process(serve_echo, name="grpc-echo-server") as echo:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{echo.ready}") as channel:
                await asyncio.wait_for(channel.channel_ready(), timeout=30)
                for n in (1, RPC_IN_FLIGHT):
                    load = await measure_unary(channel, in_flight=n, **timing)
                    rows.append(Row(f"gRPC echo unary, {n} in flight", load.figures()))
        channels: dict[str, grpc.aio.Channel] = {}
        try:
            stubs = await leader_stubs(sc.broker_addresses()[1], channels)
            for n in (1, RPC_IN_FLIGHT):
                load = await measure_produce_rpc(stubs, in_flight=n, timing=timing)
                rows.append(Row(f"Produce RPC, 1 record, {n} in flight", load.figures()))
        finally:
            for channel in channels.values():
                await channel.close()
        address = sc.cluster.admin_address
        load = await measure_producer(address, in_flight=1, linger_ms=0, timing=timing)
        rows.append(Row("SDK Producer, linger 0, 1 record in flight", load.figures()))
        n = knobs.outstanding
        load = await measure_producer(address, in_flight=n, linger_ms=5, timing=timing)
        rows.append(Row(f"SDK Producer, linger 5 ms, {n} records in flight", load.figures()))
        losses = sc.lease_losses()
    return [
        Result(
            f"produce acks=all, RF 3, min ISR {MIN_ISR}, {PARTITIONS} partitions",
            COLUMNS,
            tuple(rows),
            baseline=BASELINE,
            ratio_of="ops_per_s",
            notes=(
                f"{PAYLOAD_BYTES}-byte values; {knobs.duration_s:g}s per row after "
                f"{knobs.warmup_s:g}s warm-up; latency per call (RPC rows) or per record from "
                "send to acknowledgement (SDK rows); RPC rows go straight to partition leaders",
                "broker agents: the normal agent, logs on disk, flushed before acks=all "
                f"answers; services at log level warning; etcd sessions lost: {losses}",
            ),
        )
    ]


COLUMNS = (
    Column("ops_per_s", "records or calls/s"),
    Column("p50_ms", "p50 ms", ",.2f"),
    Column("p99_ms", "p99 ms", ",.2f"),
)

SUITE = BenchSuite(
    "produce", "acks=all RF 3 produce through the SDK and raw Produce vs gRPC echo", run
)
