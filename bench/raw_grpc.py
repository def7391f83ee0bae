"""Raw gRPC aio limits in Python on this machine: a bare echo, server in another process.

The echo service is defined here with grpc's generic handlers on raw bytes (no protos, no
interceptors, no health or reflection), so the figures are what grpcio's asyncio stack costs by
itself between two processes over loopback. The server runs in a spawned process so it and the
load generator each have their own event loop and GIL, as a client and a broker would. Figures:

- unary calls with 1 in flight (the baseline) and 16 in flight on one channel;
- a bidirectional stream used ping-pong (one message in flight: per-message latency);
- a bidirectional stream used pipelined (the client writes as fast as flow control allows while
  it reads the echoes: messages per second).

The measuring functions are public so the produce benchmark can measure the same raw figure in
its own run as its baseline.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from multiprocessing.connection import Connection

import grpc

from bench.framework import (
    NS_PER_S,
    BenchSuite,
    Column,
    Load,
    Result,
    Row,
    RunContext,
    child_process,
    closed_loop,
    now_ns,
    wait_for_stop,
)

SERVICE = "leasehold.bench.Echo"
UNARY = f"/{SERVICE}/Unary"
STREAM = f"/{SERVICE}/Stream"
PAYLOAD_BYTES = 128
UNARY_IN_FLIGHT = (1, 16)


@dataclass(frozen=True)
class Knobs:
    duration_s: float
    warmup_s: float

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(duration_s=ctx.pick(5.0, 0.3), warmup_s=ctx.pick(1.0, 0.1))


# --- the server (runs in the child process) -------------------------------------------------------


async def _echo(request: bytes, _context: grpc.aio.ServicerContext) -> bytes:
    return request


async def _echo_stream(
    requests: AsyncIterator[bytes], _context: grpc.aio.ServicerContext
) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message


def echo_handler() -> grpc.GenericRpcHandler:
    """Unary and bidi-stream echo on bytes (no serializers: grpc passes bytes through)."""
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Unary": grpc.unary_unary_rpc_method_handler(_echo),
            "Stream": grpc.stream_stream_rpc_method_handler(_echo_stream),
        },
    )


async def serve_generic(
    conn: Connection, *handlers: grpc.GenericRpcHandler, ports: int | None = None
) -> None:
    """In a child process: serve ``handlers`` on a free loopback port, send the port, and serve
    until the parent says stop or goes away. With ``ports``, on that many ports, sent as a list:
    a client dialling each gets a connection each, as it would to that many hosts (channels to
    one target share one connection)."""
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(handlers)
    bound = [server.add_insecure_port("127.0.0.1:0") for _ in range(ports or 1)]
    await server.start()
    conn.send(bound[0] if ports is None else bound)
    try:
        await asyncio.to_thread(wait_for_stop, conn)
    finally:
        await server.stop(0)


def serve_echo(conn: Connection) -> None:
    """Child-process entry point: serve the echo until the parent says stop or goes away."""
    asyncio.run(serve_generic(conn, echo_handler()))


# --- the client -----------------------------------------------------------------------------------


async def measure_unary(
    channel: grpc.aio.Channel,
    *,
    in_flight: int,
    duration_s: float,
    warmup_s: float,
    payload: bytes = b"x" * PAYLOAD_BYTES,
) -> Load:
    """Unary echo calls, ``in_flight`` at a time on one channel."""
    call = channel.unary_unary(UNARY)

    async def op(_worker: int) -> int:
        if len(await call(payload)) != len(payload):
            raise RuntimeError("echo returned a different payload")
        return 1

    return await closed_loop(op, concurrency=in_flight, duration_s=duration_s, warmup_s=warmup_s)


async def measure_stream_ping_pong(
    channel: grpc.aio.Channel,
    *,
    duration_s: float,
    warmup_s: float,
    payload: bytes = b"x" * PAYLOAD_BYTES,
) -> Load:
    """One bidi stream, one message in flight: write, read the echo, repeat."""
    stream = channel.stream_stream(STREAM)()

    async def op(_worker: int) -> int:
        await stream.write(payload)
        if len(await stream.read()) != len(payload):
            raise RuntimeError("echo returned a different payload")
        return 1

    try:
        return await closed_loop(op, concurrency=1, duration_s=duration_s, warmup_s=warmup_s)
    finally:
        await stream.done_writing()
        while await stream.read() is not grpc.aio.EOF:  # drain so the call ends cleanly
            pass


async def measure_stream_pipelined(
    channel: grpc.aio.Channel,
    *,
    duration_s: float,
    warmup_s: float,
    payload: bytes = b"x" * PAYLOAD_BYTES,
) -> Load:
    """One bidi stream, writes as fast as flow control allows; echoes counted as they arrive.

    Latency samples are the gaps between consecutive echoes (messages/s is the figure here).
    """
    stream = channel.stream_stream(STREAM)()
    measure_from = now_ns() + int(warmup_s * NS_PER_S)
    stop_at = measure_from + int(duration_s * NS_PER_S)

    async def writer() -> None:
        while now_ns() < stop_at:
            await stream.write(payload)
        await stream.done_writing()

    gaps: list[int] = []
    last = measure_from
    async with asyncio.TaskGroup() as tg:
        tg.create_task(writer())
        async for message in stream:
            arrived = now_ns()
            if len(message) != len(payload):
                raise RuntimeError("echo returned a different payload")
            if arrived >= measure_from:
                gaps.append(arrived - last)
                last = arrived
    return Load(len(gaps), last - measure_from, tuple(gaps))


COLUMNS = (
    Column("calls_per_s", "calls or msgs/s"),
    Column("p50_ms", "p50 ms", ",.3f"),
    Column("p99_ms", "p99 ms", ",.3f"),
)
BASELINE = "unary, 1 in flight"


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    timing = {"duration_s": knobs.duration_s, "warmup_s": knobs.warmup_s}
    rows: list[Row] = []
    with child_process(serve_echo, name="grpc-echo-server") as server:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.ready}") as channel:
            await asyncio.wait_for(channel.channel_ready(), timeout=30)
            for n in UNARY_IN_FLIGHT:
                load = await measure_unary(channel, in_flight=n, **timing)
                rows.append(Row(f"unary, {n} in flight", load.figures()))
            load = await measure_stream_ping_pong(channel, **timing)
            rows.append(Row("bidi stream, ping-pong", load.figures()))
            load = await measure_stream_pipelined(channel, **timing)
            rows.append(Row("bidi stream, pipelined", load.figures()))
    return [
        Result(
            "gRPC aio echo, server in a separate process",
            COLUMNS,
            tuple(rows),
            baseline=BASELINE,
            ratio_of="calls_per_s",
            notes=(
                f"{PAYLOAD_BYTES}-byte payloads, generic bytes handlers, one insecure loopback "
                f"channel; {knobs.duration_s:g}s per row after {knobs.warmup_s:g}s warm-up",
                "pipelined stream: latency columns are gaps between consecutive echoes",
            ),
        )
    ]


SUITE = BenchSuite("raw_grpc", "bare gRPC aio unary and streaming echo in Python", run)
