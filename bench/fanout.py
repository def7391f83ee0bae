"""A change told to many brokers: what one request to each costs the controller's process.

Every change a controller decides reaches brokers as one control request each (Kafka's
ControllerChannelManager does the same), so at a thousand brokers a failover, a broker failure
or a shutdown costs the controller a thousand gRPC calls. This suite times that fan-out alone:
a server in another process answers every BrokerControlService call at once (no broker work),
and this process sends one small UpdateMetadata to each of B "brokers", until all have
answered; repeated. The server listens on B ports, one a broker, so each broker's channel has
a TCP connection of its own, as it has to a real broker on its own host (gRPC's channels to one
address share one connection, which makes a call ~40% cheaper than to B hosts).

- **raw gRPC aio** (the baseline): B pre-built calls gathered, no queue, no retry;
- **the controller's channel manager** (``ControllerChannelManager``): the request queued to
  each broker's sender task, as a controller batch is, sent and answered through the same path
  a controller uses (its queue, retry loop, response callback and progress marks), until
  ``wait_answered``; once with a unary call a request (``--no-control-stream``), and once as
  the controller sends by default, on its control stream to each broker
  (``BrokerControlService.Control``, envelopes and all; ``ChannelSettings.control_stream``);
- **raw gRPC aio on open streams** (the floor of the control stream): one bidi stream a broker
  opened beforehand, one message written and its answer read on each, gathered.

Figures: a round's wall time (the server's share of the 2 cores included) and this process's
CPU per broker a round (``process_time``: gRPC's own threads included). The difference between
the manager's unary row and the baseline is the delivery layer's own cost; the baseline is what
a unary gRPC call in Python costs by itself, the floor a fan-out of unary calls from one process
pays; the same holds for the stream rows.

A request the manager had to send again (it failed, and was retried after the manager's
back-off, as a controller retries) is counted in its row rather than failing the suite: the
control-stream row sees a few while its streams open (``bench/README.md``, Walls), and a
controller would pay them as retries too.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection

import grpc

from bench.framework import (
    BenchSuite,
    Column,
    Result,
    Row,
    RunContext,
    child_process,
)
from bench.raw_grpc import STREAM, echo_handler, serve_generic
from leasehold import control_stream
from leasehold.broker.v1 import control_pb2
from services.controller.core import BrokerInfo
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
)

SERVICE = control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name
_ANSWERS = {
    "LeaderAndIsr": control_pb2.LeaderAndIsrResponse(),
    "UpdateMetadata": control_pb2.UpdateMetadataResponse(),
    "StopReplica": control_pb2.StopReplicaResponse(),
}
WARMUP_ROUNDS = 2  # the first connects every channel


def _answer(response: bytes) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[bytes]]:
    async def handle(_request: bytes, _context: grpc.aio.ServicerContext) -> bytes:
        return response

    return handle


async def _control(requests, _context: grpc.aio.ServicerContext):
    """The control stream: each envelope answered at once with its kind's answer."""
    answers = {kind: answer.SerializeToString() for kind, answer in _ANSWERS.items()}
    async for data in requests:
        envelope = control_stream.decode_request(data)
        yield control_stream.encode_response(
            envelope.sequence, envelope.kind, answers[envelope.kind]
        )


def serve_brokers(conn: Connection, brokers: int) -> None:
    """Child-process entry point: answer every control call and control stream (and echo on a
    stream), on one port a broker, until told to stop."""
    handlers = {
        kind: grpc.unary_unary_rpc_method_handler(_answer(answer.SerializeToString()))
        for kind, answer in _ANSWERS.items()
    }
    handlers["Control"] = grpc.stream_stream_rpc_method_handler(_control)
    handler = grpc.method_handlers_generic_handler(SERVICE, handlers)
    asyncio.run(serve_generic(conn, handler, echo_handler(), ports=brokers))


def _request() -> wire.EncodedRequest:
    """A small UpdateMetadata in the controller's pre-encoded form (one partition's change)."""
    body = control_pb2.UpdateMetadataRequest(controller_id=1, controller_epoch=2)
    return wire.EncodedRequest((body.SerializeToString(),), 1, 2, 0, 1)


async def _rounds(
    one_round: Callable[[], Awaitable[None]], rounds: int
) -> tuple[list[float], float]:
    """Each measured round's wall seconds, and this process's CPU seconds over all of them."""
    for _ in range(WARMUP_ROUNDS):
        await one_round()
    walls = []
    cpu_before = time.process_time()
    for _ in range(rounds):
        started = time.perf_counter()
        await one_round()
        walls.append(time.perf_counter() - started)
    return walls, time.process_time() - cpu_before


async def raw_fanout(ports: list[int], rounds: int) -> tuple[list[float], float]:
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for port in ports]
    payload = _request().payload
    calls = [
        c.unary_unary(
            f"/{SERVICE}/{UPDATE_METADATA}",
            response_deserializer=control_pb2.UpdateMetadataResponse.FromString,
        )
        for c in channels
    ]

    async def one_round() -> None:
        await asyncio.gather(*(call(payload, timeout=30) for call in calls))

    try:
        return await _rounds(one_round, rounds)
    finally:
        for c in channels:
            await c.close()


async def stream_fanout(ports: list[int], rounds: int) -> tuple[list[float], float]:
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for port in ports]
    streams = [c.stream_stream(STREAM)() for c in channels]
    payload = _request().payload

    async def one(stream: grpc.aio.StreamStreamCall) -> None:
        await stream.write(payload)
        if len(await stream.read()) != len(payload):
            raise RuntimeError("the stream echoed a different payload")

    async def one_round() -> None:
        await asyncio.wait_for(asyncio.gather(*(one(s) for s in streams)), 30)

    try:
        return await _rounds(one_round, rounds)
    finally:
        for stream in streams:
            stream.cancel()
        for c in channels:
            await c.close()


async def manager_fanout(
    ports: list[int], rounds: int, *, streams: bool
) -> tuple[list[float], float, int]:
    """The rounds' walls and CPU (``_rounds``), and the requests that failed and were sent
    again (each a retry after the manager's back-off, as a controller's)."""
    brokers = len(ports)
    answered = 0

    def on_response(*_args: object) -> None:
        nonlocal answered
        answered += 1

    settings = ChannelSettings("127.0.0.1", 1, control_stream=streams)
    manager = ControllerChannelManager(settings, on_response)
    for broker_id, port in enumerate(ports, start=1):
        manager.add_broker(BrokerInfo(broker_id, "127.0.0.1", port))
    request = _request()

    async def one_round() -> None:
        for broker_id in range(1, brokers + 1):
            manager.queue(broker_id, ((UPDATE_METADATA, request),))
        if not await manager.wait_answered(60):
            raise TimeoutError("brokers did not answer within 60 s")

    try:
        walls, cpu = await _rounds(one_round, rounds)
        on_streams = sum(b.stream is not None for b in manager._brokers.values())
    finally:
        await manager.close()
    if on_streams != (brokers if streams else 0):
        raise RuntimeError(f"{on_streams} of {brokers} brokers on a control stream")
    if answered != brokers * (rounds + WARMUP_ROUNDS):
        raise RuntimeError(f"{answered} answers for {brokers} brokers x {rounds} rounds")
    return walls, cpu, manager.failures


def _figures(brokers: int, walls: list[float], cpu_s: float, failed: int = 0) -> dict[str, float]:
    """A row's figures; the requests retried only when there were any."""
    median = statistics.median(walls)
    figures = {
        "round_ms": median * 1e3,
        "brokers_per_s": brokers / median,
        "cpu_us_per_broker": cpu_s / (len(walls) * brokers) * 1e6,
    }
    if failed:
        figures["failed"] = failed
    return figures


COLUMNS = (
    Column("round_ms", "round ms (median)", ",.1f"),
    Column("brokers_per_s", "brokers told/s"),
    Column("cpu_us_per_broker", "CPU us a broker"),
    Column("failed", "requests retried", ",.0f"),
)


async def run(ctx: RunContext) -> list[Result]:
    brokers = ctx.pick(1_000, 50)
    rounds = ctx.pick(20, 3)
    baseline = f"raw gRPC aio, {brokers:,} channels, calls gathered"
    serve = functools.partial(serve_brokers, brokers=brokers)
    with child_process(serve, name="control-answerer") as server:
        ports = server.ready
        if len(set(ports)) != brokers:
            raise RuntimeError(f"the answerer listens on {len(set(ports))} ports, not {brokers}")
        raw = await raw_fanout(ports, rounds)
        unary = await manager_fanout(ports, rounds, streams=False)
        managed = await manager_fanout(ports, rounds, streams=True)
        streamed = await stream_fanout(ports, rounds)
    rows = (
        Row(baseline, _figures(brokers, *raw)),
        Row(
            f"controller channel manager, {brokers:,} brokers, a unary call each",
            _figures(brokers, *unary),
        ),
        Row(
            f"controller channel manager, {brokers:,} brokers, control streams (default)",
            _figures(brokers, *managed),
        ),
        Row(
            f"raw gRPC aio, {brokers:,} open streams, a message each",
            _figures(brokers, *streamed),
        ),
    )
    return [
        Result(
            f"one request to each of {brokers:,} brokers, until all answered",
            COLUMNS,
            rows,
            baseline=baseline,
            ratio_of="brokers_per_s",
            notes=(
                f"{rounds} rounds after {WARMUP_ROUNDS} warm-up; a small pre-encoded "
                "UpdateMetadata; every answer from one server process on loopback, on a port "
                "(and so a connection) a broker, which shares the 2 cores (the round's wall "
                "includes its work)",
                "open streams: the control stream's floor (no envelope, queue or retry)",
                "CPU: this process's, gRPC's threads included, per broker per round; tracing off "
                "(the default)",
                "requests retried: requests that failed and were sent again after the "
                "manager's back-off, warm-up rounds included (shown when there were any)",
            ),
        )
    ]


SUITE = BenchSuite("fanout", "a change told to many brokers: raw gRPC vs the controller", run)
