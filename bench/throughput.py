"""Data-plane throughput in bytes: producer and consumer MB/s, and single-record latency.

A cluster of 1 controller, 3 broker agents and admin (logs on disk, fsynced before acks=all
answers and after every follower append) gets one topic of 6 partitions, replication factor 3,
``min.insync.replicas=2``. Load generators run in spawned processes (their own event loop and
GIL, as real clients), with the SDK at its defaults (``batch_size`` 64 KiB, ``linger_ms`` 5,
5 batches in flight per partition, idempotence on with acks=all):

- **producers**: records of 100 B, 1 KiB and 16 KiB values, acks=1 and acks=all, one producer;
  eight producers (two processes of four) with 1 KiB records. Each producer keeps up to
  ``WINDOW_BYTES`` of records outstanding (Kafka's ``buffer.memory`` plays that part) and
  sends to partitions round robin. MB/s counts record values acknowledged in the window;
  latency is per record, send to acknowledgement (sampled);
- **consumer**: the SDK Consumer reading every partition of the 1 KiB rows' topic from the
  earliest offset: MB/s of record values (each record size has its own topic);
- **latency**: one acks=all record at a time (``linger_ms=0``), p50/p99.

CPU per MB (the brokers together; the load generators) is counted from ``/proc`` over each
row: on a shared machine it moves much less than MB/s does, and it bounds what the 2 cores
could do (2,000 CPU ms per second over brokers plus clients).

The baseline is a bare gRPC aio unary echo of 64 KiB payloads at 16 in flight, server in a
spawned process (``bench.raw_grpc``): how fast Python gRPC alone moves bytes between two
processes here. The 1-minute load average at the start and end of the run is in the notes: the
machine is shared, and every figure moves with it.
"""

from __future__ import annotations

import asyncio
import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import grpc

from bench.framework import (
    NS_PER_S,
    BenchSuite,
    Column,
    Result,
    Row,
    RunContext,
    child_process,
)
from bench.raw_grpc import measure_unary, serve_echo
from bench.scenario import Scenario
from bench.throughput_load import Job, run_job
from leasehold.client import AdminClient
from leasehold.common.v1 import common_pb2

TOPIC = "throughput"  # one topic per record size: throughput-100, -1024, -16384
PARTITIONS = 6
MIN_ISR = "2"
SIZES = (100, 1024, 16 * 1024)
ECHO_PAYLOAD = 64 * 1024
ECHO_IN_FLIGHT = 16
BASELINE = f"gRPC echo unary, {ECHO_PAYLOAD // 1024} KiB payloads, {ECHO_IN_FLIGHT} in flight"


@dataclass(frozen=True)
class Knobs:
    duration_s: float
    warmup_s: float
    sizes: tuple[int, ...]
    many: int  # producers in the "many producers" rows

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(
            duration_s=ctx.pick(5.0, 0.5),
            warmup_s=ctx.pick(1.0, 0.2),
            sizes=ctx.pick(SIZES, (1024,)),
            many=ctx.pick(8, 2),
        )


def load_generator(conn: Connection) -> None:
    """Child-process entry point: run each Job the parent sends; answer with its figures."""
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if not isinstance(job, Job):
            return
        try:
            conn.send(asyncio.run(run_job(job)))
        except Exception:  # the parent reports it: a dead child would only say EOFError
            conn.send({"error": traceback.format_exc()})


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _jobs(children: Sequence, jobs: Sequence[Job], brokers: Sequence[int]) -> list[dict]:
    """Give ``jobs[i]`` to ``children[i]`` at once; wait for all their figures. The brokers'
    and the generators' CPU over the jobs is added to the first answer."""
    before = [cpu_seconds(pid) for pid in brokers], [cpu_seconds(c.pid) for c in children]
    for child, job in zip(children, jobs, strict=True):
        child.conn.send(job)
    answers = await asyncio.gather(*(asyncio.to_thread(c.conn.recv) for c in children))
    for answer in answers:
        if "error" in answer:
            raise RuntimeError(f"load generator failed:\n{answer['error']}")
    answers[0]["broker_cpu_s"] = sum(cpu_seconds(p) for p in brokers) - sum(before[0])
    answers[0]["client_cpu_s"] = sum(cpu_seconds(c.pid) for c in children) - sum(before[1])
    return list(answers)


def _merge(parts: list[dict]) -> dict[str, float]:
    """Figures of concurrent generators: throughputs add up, latencies pool; CPU per MB of
    record values, for the brokers together and for the load generators."""
    records = sum(p["records"] for p in parts)
    megabytes = sum(p["bytes"] for p in parts) / 1e6
    worked = sum(p.get("bytes_total", p["bytes"]) for p in parts) / 1e6  # over the CPU counted
    elapsed = max(p["elapsed_ns"] for p in parts) / NS_PER_S
    latencies = sorted(x for p in parts for x in p["latencies_ms"])

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q / 100 * len(latencies)))] if latencies else 0

    return {
        "mb_per_s": megabytes / elapsed if elapsed else 0.0,
        "records_per_s": records / elapsed if elapsed else 0.0,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "broker_cpu_ms_per_mb": 1000 * parts[0].get("broker_cpu_s", 0) / worked if worked else 0,
        "client_cpu_ms_per_mb": 1000 * parts[0].get("client_cpu_s", 0) / worked if worked else 0,
    }


async def _baseline(knobs: Knobs) -> Row:
    with child_process(serve_echo, name="grpc-echo-server") as echo:
        options = [("grpc.max_receive_message_length", 4 * ECHO_PAYLOAD)]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{echo.ready}", options=options) as ch:
            await asyncio.wait_for(ch.channel_ready(), timeout=30)
            load = await measure_unary(
                ch,
                in_flight=ECHO_IN_FLIGHT,
                duration_s=knobs.duration_s,
                warmup_s=knobs.warmup_s,
                payload=b"x" * ECHO_PAYLOAD,
            )
    figures = load.figures()
    return Row(
        BASELINE,
        {
            "mb_per_s": load.calls_per_s * ECHO_PAYLOAD / 1e6,
            "records_per_s": load.calls_per_s,
            "p50_ms": figures["p50_ms"],
            "p99_ms": figures["p99_ms"],
            "broker_cpu_ms_per_mb": 0.0,
            "client_cpu_ms_per_mb": 0.0,
        },
        note="calls/s",
    )


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    load_before = os.getloadavg()[0]
    rows = [await _baseline(knobs)]
    async with Scenario(controllers=1, brokers=3, admin=True) as sc:
        await sc.start_services()
        admin = sc.cluster.admin_address
        async with AdminClient(admin, timeout=60) as client:
            for size in sorted({*knobs.sizes, 1024}):
                created = await client.create_topic(
                    _topic(size),
                    PARTITIONS,
                    3,
                    configs={"min.insync.replicas": MIN_ISR},
                    timeout_ms=60_000,
                )
                if created.error_code != common_pb2.ERROR_CODE_NONE:
                    raise RuntimeError(f"cannot create {_topic(size)}: {created.error_message}")
        await sc.settle()
        timing = {"duration_s": knobs.duration_s, "warmup_s": knobs.warmup_s}
        brokers = [proc.pid for proc in sc.cluster.brokers.values() if proc.pid is not None]
        base = Job("produce", admin, _topic(1024), **timing)
        with (
            child_process(load_generator, name="load-1") as one,
            child_process(load_generator, name="load-2") as two,
        ):
            for size in knobs.sizes:
                for acks in ("1", "all"):
                    job = base.but(topic=_topic(size), size=size, acks=acks)
                    figures = _merge(await _jobs([one], [job], brokers))
                    rows.append(Row(f"1 producer, {_size(size)} records, acks={acks}", figures))
            half = knobs.many // 2
            for acks in ("1", "all"):
                job = base.but(size=1024, acks=acks, producers=half)
                figures = _merge(await _jobs([one, two], [job, job], brokers))
                rows.append(Row(f"{knobs.many} producers, 1 KiB records, acks={acks}", figures))
            consume = Job("consume", admin, _topic(1024), **timing)
            rows.append(
                Row(
                    "consumer, from the earliest offset",
                    _merge(await _jobs([one], [consume], brokers)),
                )
            )
            latency = Job("latency", admin, _topic(1024), **timing).but(size=1024, acks="all")
            figures = _merge(await _jobs([one], [latency], brokers))
            figures.update(broker_cpu_ms_per_mb=0.0, client_cpu_ms_per_mb=0.0)  # too few MB
            rows.append(Row("1 record at a time, acks=all, 1 KiB", figures))
        losses = sc.lease_losses()
    load_after = os.getloadavg()[0]
    return [
        Result(
            f"data plane, RF 3, min ISR {MIN_ISR}, {PARTITIONS} partitions, SDK defaults",
            COLUMNS,
            tuple(rows),
            baseline=BASELINE,
            ratio_of="mb_per_s",
            notes=(
                f"{knobs.duration_s:g}s per row after {knobs.warmup_s:g}s warm-up; MB/s counts "
                "record values (10^6 bytes); latency per record, send to acknowledgement",
                "broker agents: logs on disk, fsynced before acks=all answers and after every "
                f"follower append; etcd sessions lost: {losses}",
                f"1-minute load average {load_before:.1f} at the start, {load_after:.1f} at the "
                f"end, on {os.cpu_count()} CPUs",
            ),
        )
    ]


def _topic(size: int) -> str:
    return f"{TOPIC}-{size}"


def _size(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


COLUMNS = (
    Column("mb_per_s", "MB/s", ",.1f"),
    Column("records_per_s", "records/s"),
    Column("p50_ms", "p50 ms", ",.2f"),
    Column("p99_ms", "p99 ms", ",.2f"),
    Column("broker_cpu_ms_per_mb", "brokers CPU ms/MB", ",.1f"),
    Column("client_cpu_ms_per_mb", "client CPU ms/MB", ",.1f"),
)

SUITE = BenchSuite(
    "throughput",
    "producer and consumer MB/s by record size, acks and producers; single-record latency",
    run,
)
