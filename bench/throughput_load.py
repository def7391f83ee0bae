"""The load a ``bench.throughput`` generator process runs: produce, consume, or one at a time.

Everything here runs inside a spawned child process with its own event loop; ``run_job``
returns plain figures (counts, elapsed nanoseconds, sampled latencies in milliseconds) that the
parent merges across processes.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from dataclasses import dataclass

from bench.framework import NS_PER_MS, now_ns
from leasehold.client import Consumer, Producer

WINDOW_BYTES = 4 * 1024 * 1024  # records outstanding per producer, in value bytes
WINDOW_RECORDS = 20_000  # and at most this many (small records would queue for seconds)
SAMPLE_EVERY = 64  # one record in this many has its latency kept


@dataclass(frozen=True)
class Job:
    kind: str  # "produce", "consume" or "latency"
    admin: str
    topic: str
    duration_s: float
    warmup_s: float
    size: int = 1024
    acks: str = "all"
    producers: int = 1

    def but(self, **changes: object) -> Job:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


async def run_job(job: Job) -> dict:
    if job.kind == "produce":
        parts = await asyncio.gather(*(_produce(job) for _ in range(job.producers)))
        return {
            "records": sum(p["records"] for p in parts),
            "bytes": sum(p["bytes"] for p in parts),
            "elapsed_ns": max(p["elapsed_ns"] for p in parts),
            "latencies_ms": [x for p in parts for x in p["latencies_ms"]],
            "bytes_total": sum(p["bytes_total"] for p in parts),
        }
    if job.kind == "consume":
        return await _consume(job)
    if job.kind == "latency":
        return await _one_at_a_time(job)
    raise ValueError(f"unknown job {job.kind!r}")


async def _produce(job: Job) -> dict:
    """A closed loop with up to ``window`` records outstanding. Only one record in
    ``SAMPLE_EVERY`` carries a callback (its latency): the loop itself should cost the
    generator little next to the producer. Records sent after the warm-up count; the window
    ends when the last of them is acknowledged (the final flush)."""
    value = b"x" * job.size
    window = max(1, min(WINDOW_RECORDS, WINDOW_BYTES // job.size))
    latencies: list[float] = []
    async with Producer(admin=job.admin, acks=job.acks) as producer:
        await producer.send_and_wait(job.topic, value)  # metadata and producer id in hand
        measure_from = now_ns() + int(job.warmup_s * 1e9)
        stop_at = measure_from + int(job.duration_s * 1e9)
        outstanding: collections.deque[asyncio.Future] = collections.deque()

        def sampled(sent_at: int):
            def callback(future: asyncio.Future) -> None:
                if not future.cancelled() and future.exception() is None:
                    latencies.append((now_ns() - sent_at) / NS_PER_MS)

            return callback

        sent = counted = 0
        while (sent_at := now_ns()) < stop_at:
            future = await producer.send(job.topic, value)
            if sent % SAMPLE_EVERY == 0 and sent_at >= measure_from:
                future.add_done_callback(sampled(sent_at))
            outstanding.append(future)
            sent += 1
            counted += sent_at >= measure_from
            if len(outstanding) >= window:
                await outstanding.popleft()  # raises if the record failed: the job fails
        await producer.flush()
        for future in outstanding:
            future.result()
        ended = now_ns()
    return {
        "records": counted,
        "bytes": counted * job.size,
        "elapsed_ns": max(ended - measure_from, 1),
        "latencies_ms": latencies,
        "bytes_total": sent * job.size,  # warm-up included: what the CPU was for
    }


async def _consume(job: Job) -> dict:
    records = values = 0
    async with Consumer(admin=job.admin) as consumer:
        await consumer.assign_topic(job.topic, "earliest")
        await consumer.poll(timeout_ms=1000)  # connections and first answers
        start = now_ns()
        stop_at = start + int(job.duration_s * 1e9)
        while now_ns() < stop_at:
            batch = await consumer.poll(timeout_ms=500)
            if not batch:
                break  # caught up with everything produced
            records += len(batch)
            values += sum(len(r.value or b"") for r in batch)
        elapsed = now_ns() - start
    return {"records": records, "bytes": values, "elapsed_ns": elapsed, "latencies_ms": []}


async def _one_at_a_time(job: Job) -> dict:
    value = b"x" * job.size
    latencies: list[float] = []
    async with Producer(admin=job.admin, acks=job.acks, linger_ms=0) as producer:
        await producer.send_and_wait(job.topic, value)
        measure_from = time.perf_counter_ns() + int(job.warmup_s * 1e9)
        stop_at = measure_from + int(job.duration_s * 1e9)
        first = 0
        while (start := now_ns()) < stop_at:
            await (await producer.send(job.topic, value, partition=0))
            if start >= measure_from:
                first = first or start
                latencies.append((now_ns() - start) / NS_PER_MS)
    elapsed = max(now_ns() - first, 1) if first else 1
    return {
        "records": len(latencies),
        "bytes": len(latencies) * job.size,
        "elapsed_ns": elapsed,
        "latencies_ms": latencies,
    }
