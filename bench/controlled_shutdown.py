"""Controlled shutdown of a broker leading 10,000 partitions: request to "nothing left to move".

A cluster of 2 controllers and 3 broker agents holds 10,000 partitions (RF 3), every one with
broker 1 as its preferred leader and the followers rotating over brokers 2 and 3, all online
with a full ISR and settled. The benchmark then does what broker 1's agent does on SIGTERM,
from outside so the clock is exact: it sends ``ControllerService.ControlledShutdown`` (broker 1,
its current broker epoch from its registration key) to the active controller and repeats the
call at once while the answer still lists partitions broker 1 leads. Figures, from the first
request:

- **answer ms**: the answer with nothing left to move (the figure; target under 1 s);
- **first answer ms** and the number of calls it took;
- **etcd ms**: when an etcd watch saw the last partition-state write moving a leader off
  broker 1 (the controller commits before it answers);
- **brokers ms**: when brokers 2 and 3 both answered Metadata with no partition led by
  broker 1 (they have applied the new leaders from UpdateMetadata; polled after the answer).

Baseline, same run, same etcd (separate prefix): one ``fenced.commit`` creating as many
partition-state keys, 8 transactions in flight (``bench.raw_etcd.bulk_create``) — the least
etcd work of moving that many leaders.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import grpc

from bench.framework import BenchSuite, Column, Result, Row, RunContext
from bench.observe import broker_epoch, partition_states, poll_brokers, watch_states
from bench.raw_etcd import BULK_CONCURRENCY
from bench.scenario import Layout, Scenario, Sizing, raw_state_writes
from leasehold.broker.v1 import broker_pb2
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.election import leader_of
from leasehold.metadata.v1 import metadata_pb2

LEADER = 1
TARGET_MS = 1000.0
MAX_CALLS = 100
BASELINE = "raw etcd: fenced writes of as many states"


@dataclass(frozen=True)
class Knobs:
    partitions: int
    per_topic: int

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(partitions=ctx.pick(10_000, 300), per_topic=ctx.pick(1_000, 100))


async def controller_stub(
    client: EtcdClient, keyspace: Keyspace
) -> tuple[grpc.aio.Channel, controller_pb2_grpc.ControllerServiceStub]:
    """A channel to the active controller, found as brokers find it (contract 8)."""
    kv = await leader_of(client, keyspace.controller_election_prefix)
    if kv is None:
        raise RuntimeError("no active controller")
    reg = metadata_pb2.ControllerRegistration.FromString(kv.value)
    channel = grpc.aio.insecure_channel(f"{reg.host}:{reg.port}")
    return channel, controller_pb2_grpc.ControllerServiceStub(channel)


@dataclass(frozen=True)
class Shutdown:
    first_answer_s: float
    answer_s: float
    calls: int
    remaining_first: int


async def shut_down(
    stub: controller_pb2_grpc.ControllerServiceStub, broker: int, epoch: int, started: float
) -> Shutdown:
    """Call ControlledShutdown until nothing is left to move; instants relative to ``started``."""
    request = controller_pb2.ControlledShutdownRequest(broker_id=broker, broker_epoch=epoch)
    first: tuple[float, int] | None = None
    for calls in range(1, MAX_CALLS + 1):
        answer = await stub.ControlledShutdown(request, timeout=300)
        now = time.time()
        if answer.error_code != common_pb2.ERROR_CODE_NONE:
            name = common_pb2.ErrorCode.Name(answer.error_code)
            raise RuntimeError(f"ControlledShutdown failed: {name} {answer.error_message}")
        left = len(answer.remaining_partitions)
        first = first or (now - started, left)
        if not left:
            return Shutdown(first[0], now - started, calls, first[1])
    raise RuntimeError(f"broker {broker} still leads partitions after {MAX_CALLS} calls")


def no_partition_led_by(broker: int, count: int):
    """A Metadata predicate: ``count`` partitions, each with a live leader other than ``broker``."""

    def ready(answer: broker_pb2.MetadataResponse) -> bool:
        parts = [p for t in answer.topics for p in t.partitions]
        return len(parts) == count and all(
            p.error_code == common_pb2.ERROR_CODE_NONE and p.leader not in (broker, -1)
            for p in parts
        )

    return ready


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    n = knobs.partitions
    layout = Layout(n, knobs.per_topic, brokers=(1, 2, 3), leader=LEADER)
    sizing = Sizing.of(n)
    async with Scenario(controllers=2, brokers=3, sizing=sizing) as sc:
        raw_ms, txns = await raw_state_writes(sc.client, n)
        setup = await sc.bring_up(layout)
        client, ks = sc.client, sc.keyspace
        epoch = await broker_epoch(client, ks, LEADER)
        states, revision = await partition_states(client, ks)
        moved = {k for k, s in states.items() if s.leader != LEADER}
        watch = asyncio.create_task(
            watch_states(client, ks, start_revision=revision + 1, target=n, good=moved,
                         ok=lambda s: s.leader not in (LEADER, -1))
        )  # fmt: skip
        channel, stub = await controller_stub(client, ks)
        try:
            started = time.time()
            result = await shut_down(stub, LEADER, epoch, started)
            etcd_done = await asyncio.wait_for(watch, timeout=120)
            told = await poll_brokers(
                sc.broker_addresses(exclude=(LEADER,)),
                no_partition_led_by(LEADER, n),
                request=broker_pb2.MetadataRequest(topics=sorted(layout.topics())),
                interval=0.05,
                timeout=300,
            )
        finally:
            watch.cancel()
            await channel.close()
        losses = sc.lease_losses()
    values = {
        "answer_ms": result.answer_s * 1000,
        "first_answer_ms": result.first_answer_s * 1000,
        "calls": float(result.calls),
        "etcd_ms": (etcd_done - started) * 1000,
        "brokers_ms": (max(told.values()) - started) * 1000,
    }
    verdict = "<1 s met" if values["answer_ms"] < TARGET_MS else "<1 s MISSED"
    return [
        Result(
            f"controlled shutdown of a broker leading {n:,} partitions (RF 3, 3 brokers)",
            COLUMNS,
            (
                Row(
                    BASELINE,
                    {"answer_ms": raw_ms},
                    note=f"{txns} txns, {BULK_CONCURRENCY} in flight",
                ),
                Row(
                    "ControlledShutdown",
                    values,
                    note=f"{result.remaining_first:,} left after the 1st answer; {verdict}",
                ),
            ),  # fmt: skip
            baseline=BASELINE,
            ratio_of="answer_ms",
            notes=(
                "answer ms: first ControlledShutdown request -> the answer listing nothing "
                "left to move (calls repeated at once while partitions remain)",
                "etcd ms: last leader moved off the broker, seen by a watch; brokers ms: "
                "brokers 2 and 3 answer Metadata with no partition led by it (polled every "
                "50 ms after the answer)",
                f"broker {LEADER} is every partition's preferred leader; topics written "
                f"straight into etcd ({knobs.per_topic:,} per topic); {setup}",
                f"{sizing.describe()}; services at log level warning; etcd sessions lost "
                f"during the run: {losses}",
            ),
        )
    ]


COLUMNS = (
    Column("answer_ms", "answer ms", ",.0f"),
    Column("first_answer_ms", "1st answer ms", ",.0f"),
    Column("calls", "calls", ",.0f"),
    Column("etcd_ms", "etcd ms", ",.0f"),
    Column("brokers_ms", "brokers ms", ",.0f"),
)

SUITE = BenchSuite(
    "controlled_shutdown",
    "ControlledShutdown of a broker leading 10,000 partitions",
    run,
    time_limit_s=1800.0,
)
