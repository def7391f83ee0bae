"""The control stream (``BrokerControlService.Control``) between the controller's channel
manager and the broker's control servicer, over real gRPC on loopback.

The stream must answer every request as the unary call does (the same answers for the parity
sequence of ``test_control_simulated_parity``), carry the unary call's limits and errors per
request without ending, end on an envelope it cannot read, time out on the manager's clock and
reopen, and give way to unary calls for a broker that does not serve it. The envelopes are
written by hand on both ends; they must be the generated classes' bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
from collections.abc import AsyncIterator

import grpc
import pytest

from leasehold import control_stream
from leasehold.broker.v1 import control_pb2
from leasehold.clock import ManualClock
from leasehold.common.v1 import common_pb2
from leasehold.request_bounds import RequestBoundsInterceptor
from leasehold.testing.wait import until
from services.broker_agent.bounds import counters
from services.broker_agent.control_servicer import BrokerControlServicer, control_handlers
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.simulation.replicas import SimulatedReplicas
from services.controller.core import BrokerInfo
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    CLOSE_WAIT_S,
    LATE_DEADLINE_S,
    ChannelSettings,
    ControllerChannelManager,
    _ControlStream,
    _hand_over,
    _NotWritten,
)

SERVICE = "leasehold.broker.v1.BrokerControlService"
KIND_OF = {
    control_pb2.LeaderAndIsrRequest: control_stream.LEADER_AND_ISR,
    control_pb2.StopReplicaRequest: control_stream.STOP_REPLICA,
    control_pb2.UpdateMetadataRequest: control_stream.UPDATE_METADATA,
}
KIND_OF_REQUEST = {kind: request for request, kind in KIND_OF.items()}
LIMIT = 4  # control partitions a request may name on the test broker


# ---------------------------------------------------------------- the envelopes, byte for byte


def test_a_request_envelope_is_the_generated_message_and_reads_back() -> None:
    inner = control_pb2.UpdateMetadataRequest(controller_epoch=3, broker_epoch=9)
    body = inner.SerializeToString()
    trace = {"traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}
    data = control_stream.encode_request(300, control_stream.UPDATE_METADATA, body, trace)
    expected = control_pb2.ControlRequest(sequence=300, update_metadata=inner, trace_context=trace)
    assert data == expected.SerializeToString()
    envelope = control_stream.decode_request(expected.SerializeToString())
    assert (envelope.sequence, envelope.kind, envelope.body, envelope.trace) == (
        300,
        control_stream.UPDATE_METADATA,
        body,
        trace,
    )


def test_a_request_envelope_built_from_parts_is_the_envelope_of_their_join() -> None:
    inner = control_pb2.UpdateMetadataRequest(controller_epoch=3, broker_epoch=9)
    body = inner.SerializeToString()
    parts = (body[:2], body[2:], b"", b"x" * 200)  # a 200-byte tail: a two-byte length
    for pieces in (parts, list(parts), ()):
        joined = b"".join(pieces)
        assert control_stream.encode_request(7, "UpdateMetadata", pieces) == (
            control_stream.encode_request(7, "UpdateMetadata", joined)
        )
        assert (
            control_stream.decode_request(
                control_stream.encode_request(7, "UpdateMetadata", pieces)
            ).body
            == joined
        )


@pytest.mark.parametrize("kind", list(control_stream.FIELDS))
def test_every_kind_travels_in_its_own_field(kind: str) -> None:
    data = control_stream.encode_request(1, kind, b"")
    field = control_pb2.ControlRequest.FromString(data).WhichOneof("request")
    assert (
        control_stream.FIELDS[kind]
        == control_pb2.ControlRequest.DESCRIPTOR.fields_by_name[field].number
    )
    assert control_stream.decode_request(data).kind == kind


def test_a_response_envelope_is_the_generated_message() -> None:
    answer = control_pb2.LeaderAndIsrResponse(error_code=common_pb2.ERROR_CODE_NONE)
    data = control_stream.encode_response(
        7, control_stream.LEADER_AND_ISR, answer.SerializeToString()
    )
    assert (
        data == control_pb2.ControlResponse(sequence=7, leader_and_isr=answer).SerializeToString()
    )
    failed = control_stream.encode_response(8, control_stream.STOP_REPLICA, None, 3, "too many")
    reply = control_pb2.ControlResponse.FromString(failed)
    assert (reply.sequence, reply.WhichOneof("response"), reply.status_code) == (8, None, 3)
    assert reply.status_message == "too many"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (control_pb2.ControlRequest(sequence=1).SerializeToString(), "no request"),
        (control_stream.encode_request(1, "LeaderAndIsr", b"x" * 10)[:-3], "past the end"),
        (b"\x08\xff\xff", "varint"),
        (b"\x0b", "wire type"),
        (
            control_pb2.ControlRequest(
                sequence=1, stop_replica={}, trace_context={"k": "v" * 5000}
            ).SerializeToString(),
            "over 4096 bytes",
        ),
    ],
)
def test_an_unreadable_envelope_says_why(data: bytes, problem: str) -> None:
    with pytest.raises(control_stream.EnvelopeError, match=problem):
        control_stream.decode_request(data)


# ---------------------------------------------------------------- over gRPC


@contextlib.asynccontextmanager
async def serving_control(handler) -> AsyncIterator[int]:
    """A server whose BrokerControlService has only ``handler`` as its Control stream; its port."""
    server = grpc.aio.server()
    handlers = {"Control": grpc.stream_stream_rpc_method_handler(handler)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port
    finally:
        await server.stop(0)


class Broker:
    """A simulated broker's control servicer served on loopback, recording the methods called."""

    def __init__(self, stream: bool = True, block: asyncio.Event | None = None) -> None:
        self.methods: list[str] = []
        self.replicas = SimulatedReplicas(1, MetadataCache())
        self.replicas.broker_epoch = 7
        self.servicer = BrokerControlServicer(self.replicas, bounds=counters(LIMIT, LIMIT))
        self.stream = stream
        self.block = block  # LeaderAndIsr waits for it
        self.received = asyncio.Event()
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self) -> Broker:
        broker = self

        class Recorder(grpc.aio.ServerInterceptor):
            async def intercept_service(self, continuation, details):
                broker.methods.append(details.method.rsplit("/", 1)[-1])
                return await continuation(details)

        server = grpc.aio.server(
            interceptors=[Recorder(), RequestBoundsInterceptor(counters(LIMIT, LIMIT))]
        )
        if self.stream:
            server.add_generic_rpc_handlers((control_handlers(self.servicer),))
        else:  # a broker from before the stream: the unary methods alone (gRPC itself answers
            # UNIMPLEMENTED for Control, as to any method a server does not have)
            server.add_generic_rpc_handlers((_unary_only(self.servicer),))
        if self.block is not None:
            inner = self.servicer.LeaderAndIsr

            async def blocked(request, context):
                self.received.set()
                await self.block.wait()
                return await inner(request, context)

            self.servicer.LeaderAndIsr = blocked  # type: ignore[method-assign]
        self.port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self.server = server
        return self

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(0)


def _unary_only(servicer: BrokerControlServicer) -> grpc.GenericRpcHandler:
    """The three unary methods of BrokerControlService, and no Control; each looked up on the
    servicer as it is called (a test may wrap one after the server started)."""

    def method(kind: str):
        async def call(request, context):
            return await getattr(servicer, kind)(request, context)

        return call

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            kind: grpc.unary_unary_rpc_method_handler(
                method(kind),
                request_deserializer=request.FromString,
                response_serializer=lambda response: response.SerializeToString(),
            )
            for kind, request in KIND_OF_REQUEST.items()
        },
    )


@pytest.fixture
async def served():
    started: list[Broker] = []

    async def make(**kw) -> Broker:
        broker = await Broker(**kw).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        await broker.stop()


async def _answers(port: int, stream: bool, requests) -> tuple[list, ControllerChannelManager]:
    answers: list = []
    settings = ChannelSettings("127.0.0.1", 1, control_stream=stream)
    manager = ControllerChannelManager(settings, lambda b, k, req, resp: answers.append(resp))
    manager.add_broker(BrokerInfo(1, "127.0.0.1", port))
    stream = manager._brokers[1].stream
    if stream is not None:  # open before the first request, which would otherwise go unary
        stream.prepare()
        assert stream._opening is not None
        await stream._opening
        if not stream.ready and stream._ending is not None:  # a broker without it said so
            await stream._ending
        assert stream.ready or stream.unsupported
    for request in requests:
        manager.send(1, KIND_OF[type(request)], request)
    assert await manager.wait_answered(30.0)
    return answers, manager


async def test_the_stream_answers_the_parity_sequence_as_unary_calls_do(served) -> None:
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    on_stream, unary = await served(), await served()
    streamed, manager = await _answers(on_stream.port, True, SEQUENCE)
    called, unary_manager = await _answers(unary.port, False, SEQUENCE)
    try:
        assert streamed == called and len(streamed) == len(SEQUENCE)
        assert on_stream.methods == ["Control"]  # one stream carried every request
        assert unary.methods == [KIND_OF[type(r)] for r in SEQUENCE]
        assert on_stream.replicas.metadata.digest() == unary.replicas.metadata.digest()
        assert manager.failures == 0
    finally:
        await manager.close()
        await unary_manager.close()


async def test_a_broker_without_the_stream_is_sent_unary_calls(served) -> None:
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    old = await served(stream=False)
    answers, manager = await _answers(old.port, True, SEQUENCE[:3])
    try:
        assert len(answers) == 3 and manager.failures == 0
        unary = [m for m in old.methods if m != "Control"]
        assert sorted(unary) == sorted(KIND_OF[type(r)] for r in SEQUENCE[:3])
        # Asked once, and not again once the answer is known (the stream is then dropped).
        # Twice when a request was written to the first stream as the broker's UNIMPLEMENTED
        # was on its way: gRPC then ends the stream as INTERNAL, which hides what the broker
        # said, and the next stream asks again.
        assert 1 <= old.methods.count("Control") <= 2
        stream = manager._brokers[1].stream
        assert stream is None or not stream.ready
    finally:
        await manager.close()


def _lai(partitions: int) -> control_pb2.LeaderAndIsrRequest:
    return control_pb2.LeaderAndIsrRequest(
        controller_id=100,
        controller_epoch=1,
        broker_epoch=7,
        partition_states=[
            control_pb2.LeaderAndIsrPartitionState(
                topic="t", partition=p, leader=1, leader_epoch=1, isr=[1], replicas=[1]
            )
            for p in range(partitions)
        ],
    )


async def test_a_request_over_a_limit_fails_alone_and_the_stream_goes_on(served) -> None:
    broker = await served()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{broker.port}") as channel:
        call = channel.stream_stream(f"/{SERVICE}/Control")()
        over = _lai(LIMIT + 1).SerializeToString()
        await call.write(control_stream.encode_request(1, "LeaderAndIsr", over))
        refused = control_pb2.ControlResponse.FromString(await call.read())
        assert refused.status_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert "--max-control-partitions-per-request" in refused.status_message
        assert refused.WhichOneof("response") is None and broker.replicas.partitions == {}

        await call.write(control_stream.encode_request(2, "LeaderAndIsr", b"\xff"))
        garbled = control_pb2.ControlResponse.FromString(await call.read())
        assert garbled.status_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        assert garbled.status_message == "LeaderAndIsr could not be decoded"

        fits = _lai(LIMIT).SerializeToString()
        await call.write(control_stream.encode_request(3, "LeaderAndIsr", fits))
        answer = control_pb2.ControlResponse.FromString(await call.read())
        assert (answer.sequence, answer.status_code) == (3, 0)
        assert answer.leader_and_isr.error_code == common_pb2.ERROR_CODE_NONE
        assert len(broker.replicas.partitions) == LIMIT

        await call.write(b"\x0b")  # not an envelope: the stream ends
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await call.read()
        assert ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "wire type" in (ended.value.details() or "")


async def test_an_unanswered_request_times_out_on_the_clock_and_the_retry_reopens(served) -> None:
    release = asyncio.Event()
    broker = await served(block=release)
    clock = ManualClock()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{broker.port}") as channel:
        stream = _ControlStream(channel, f"127.0.0.1:{broker.port}", clock)
        body = _lai(1).SerializeToString()
        asked = asyncio.ensure_future(stream.ask("LeaderAndIsr", body, 10.0))
        await asyncio.wait_for(broker.received.wait(), 10)
        clock.advance(9.9)
        await asyncio.sleep(0)
        assert not asked.done()
        clock.advance(0.2)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await asked
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

        release.set()
        answer = await stream.ask("LeaderAndIsr", body, 10.0)
        assert answer.error_code == common_pb2.ERROR_CODE_NONE
        assert broker.methods == ["Control", "Control"]  # the retry opened a new stream
        assert clock.pending == 0
        stream.close()


@contextlib.asynccontextmanager
async def ended_by_the_broker() -> AsyncIterator[tuple[_ControlStream, grpc.aio.Call, list[int]]]:
    """A stream that answered one request, which the broker then ended (restarting its server,
    say), once its end has reached us; the call, and a count of the streams the broker was
    opened."""
    opened = [0]
    answer = control_pb2.StopReplicaResponse().SerializeToString()

    async def one_then_end(requests, _context):
        opened[0] += 1
        async for data in requests:
            envelope = control_stream.decode_request(data)
            yield control_stream.encode_response(envelope.sequence, envelope.kind, answer)
            return

    async with serving_control(one_then_end) as port:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stream = _ControlStream(channel, f"127.0.0.1:{port}", ManualClock())
            await stream.ask("StopReplica", b"", 10.0)
            call = stream._call
            assert call is not None and stream.ready

            async def ended_here() -> bool:
                return call.done()

            await until(ended_here, timeout=10, what="the stream's end")
            try:
                yield stream, call, opened
            finally:
                stream.close()


async def test_a_stream_the_broker_ended_is_forgotten_and_the_next_request_opens_another() -> None:
    """The stream is forgotten as its end arrives (the manager's next request then goes unary
    while another opens), and a request asked of it directly opens a new one, rather than
    failing on the old."""
    async with ended_by_the_broker() as (stream, _call, opened):
        assert stream._call is None and not stream.ready
        await stream.ask("StopReplica", b"", 10.0)
        assert opened == [2]


async def test_a_request_for_a_stream_that_ended_unseen_is_not_written() -> None:
    """A stream whose end has not been seen yet when the next request is written to it (it
    ended between the two): the request never left, and says so (``_NotWritten``), for the
    sender to send it as a unary call at once."""
    async with ended_by_the_broker() as (stream, call, _opened):
        stream._call, stream._exchanged = call, 1  # as if its end were still on its way
        with pytest.raises(_NotWritten):
            await stream.ask("StopReplica", b"", 10.0)
        assert stream._call is None


async def test_a_request_not_written_to_its_stream_goes_unary_at_once(served) -> None:
    """The sender sends a request its stream could not take as a unary call, at once and not
    counted as a failure (no back-off): the request had not left."""
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    broker = await served()
    answers, manager = await _answers(broker.port, True, SEQUENCE[:1])
    try:
        stream = manager._brokers[1].stream
        assert stream is not None
        call = stream._call
        assert call is not None
        call.cancel()

        async def ended() -> bool:
            return call.done() and not stream.ready

        await until(ended, timeout=10, what="the stream's end")
        stream._call, stream._connected = call, True  # as if its end were still on its way
        manager.send(1, KIND_OF[type(SEQUENCE[1])], SEQUENCE[1])
        assert await manager.wait_answered(30.0)
        assert manager.failures == 0 and len(answers) == 2
        assert KIND_OF[type(SEQUENCE[1])] in broker.methods  # as a unary call
    finally:
        await manager.close()


@pytest.mark.parametrize(
    ("reply", "details"),
    [
        (b"\x0b", "unreadable control stream answer"),
        (control_stream.encode_response(99, "StopReplica", b""), "answer 99 to request 1"),
        (control_stream.encode_response(1, "LeaderAndIsr", b""), "answer to StopReplica has none"),
    ],
)
async def test_a_wrong_answer_fails_the_request_and_ends_the_stream(reply, details) -> None:
    """What the broker answers is read defensively: garbage, another request's sequence or
    another kind's answer fail the request as INTERNAL (the sender retries) and end the stream."""

    async def wrong(requests, _context):
        async for _data in requests:
            yield reply

    async with serving_control(wrong) as port:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stream = _ControlStream(channel, f"127.0.0.1:{port}", ManualClock())
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await stream.ask("StopReplica", b"", 10.0)
            assert failed.value.code() == grpc.StatusCode.INTERNAL
            assert details in (failed.value.details() or "")
            assert stream._call is None


async def test_a_request_is_issued_only_as_grpc_takes_its_write() -> None:
    """``wait_issued`` means "in gRPC's hands": a caller then holds the event loop for long (a
    failover's state machines). A new stream's first write waits for the loop (its headers go
    first), so the request must not count as issued before gRPC takes the write; marked
    earlier, a failover's UpdateMetadata sat unsent behind the state machines."""
    clock = ManualClock()
    settings = ChannelSettings("127.0.0.1", 1, control_stream=True)
    manager = ControllerChannelManager(settings, lambda *a: None, clock=clock)
    manager.add_broker(BrokerInfo(1, "127.0.0.1", 1))
    broker = manager._brokers[1]
    headers_sent = asyncio.Event()
    answer = control_stream.encode_response(1, "StopReplica", b"")

    class HeldCall:  # a stream whose first write waits for its headers
        async def write(self, outgoing) -> None:
            await headers_sent.wait()
            _hand_over(outgoing)

        async def read(self) -> bytes:
            return answer

        def cancel(self) -> None:
            pass

    assert broker.stream is not None
    broker.stream._call = HeldCall()  # type: ignore[assignment]
    broker.stream._connected = True
    manager.send(1, "StopReplica", control_pb2.StopReplicaRequest(controller_epoch=1))
    waiting = asyncio.ensure_future(manager.wait_issued(5.0))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done() and broker.issued == 0
    headers_sent.set()
    assert await waiting and broker.issued == 1
    assert await manager.wait_answered(5.0)
    await manager.close()


async def test_a_request_on_the_stream_is_not_kept_once_grpc_has_written_it() -> None:
    """The envelope is the one copy of a request the brokers do not share: a creation step's
    1.6 MB UpdateMetadata copied to each of 1,000 brokers. Once gRPC has written it, nothing
    of the manager's may keep it while the broker works on the request."""
    clock = ManualClock()
    manager = ControllerChannelManager(
        ChannelSettings("127.0.0.1", 1), lambda *a: None, clock=clock
    )
    manager.add_broker(BrokerInfo(1, "127.0.0.1", 1))
    broker = manager._brokers[1]
    written: list[bytes] = []
    taken, answer = asyncio.Event(), asyncio.Event()

    class WrittenCall:  # a stream whose broker answers when the test says
        async def write(self, outgoing) -> None:
            written.append(_hand_over(outgoing))
            taken.set()

        async def read(self) -> bytes:
            await answer.wait()
            return control_stream.encode_response(1, "UpdateMetadata", b"")

        def cancel(self) -> None:
            pass

    assert broker.stream is not None
    broker.stream._call = WrittenCall()  # type: ignore[assignment]
    broker.stream._connected = True
    shared = control_pb2.UpdateMetadataRequest(
        partition_states=[control_pb2.UpdateMetadataPartitionState(partition=p) for p in range(3)]
    ).SerializeToString()
    header = control_pb2.UpdateMetadataRequest(controller_epoch=1).SerializeToString()
    manager.send(1, "UpdateMetadata", wire.EncodedRequest((header, shared), 0, 1, 1, 3))
    await asyncio.wait_for(taken.wait(), 5.0)
    assert shared in written[0]
    gc.collect()
    assert [r for r in gc.get_referrers(written[0]) if r is not written] == []
    answer.set()
    assert await manager.wait_answered(5.0)
    await manager.close()


class HeldLoopClock(ManualClock):
    """A clock whose due callbacks run only once the whole stretch has passed, late: what an
    event loop held by a long computation does to its timers."""

    def advance(self, seconds: float) -> None:
        self._now += seconds
        while self._due and self._due[0][0] <= self._now:
            _, _, timer, callback, args = heapq.heappop(self._due)
            if not timer.cancelled:
                callback(*args)


async def test_a_deadline_that_fires_late_lets_an_answer_already_come_be_read(served) -> None:
    """A unary call's deadline is gRPC's: an answer that arrives in time counts even if the
    event loop was busy then. The stream's deadline is a timer on the loop, so after a long
    hold it fires with the answer waiting to be read: it gives that answer a moment first."""
    release = asyncio.Event()
    broker = await served(block=release)
    clock = HeldLoopClock()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{broker.port}") as channel:
        stream = _ControlStream(channel, f"127.0.0.1:{broker.port}", clock)
        asked = asyncio.ensure_future(stream.ask("LeaderAndIsr", _lai(1).SerializeToString(), 10))
        await asyncio.wait_for(broker.received.wait(), 10)
        release.set()  # the broker answers in time...
        clock.advance(15.0)  # ...while the loop is held past the deadline
        answer = await asked
        assert answer.error_code == common_pb2.ERROR_CODE_NONE
        assert broker.methods == ["Control"]  # not cancelled and retried

        # Late with no answer coming: the deadline holds, a moment later.
        blocked = asyncio.Event()
        broker.block = blocked
        broker.received.clear()
        asked = asyncio.ensure_future(stream.ask("LeaderAndIsr", _lai(1).SerializeToString(), 10))
        await asyncio.wait_for(broker.received.wait(), 10)
        clock.advance(15.0)
        await asyncio.sleep(0)
        assert not asked.done()
        clock.advance(LATE_DEADLINE_S)
        with pytest.raises(grpc.aio.AioRpcError) as late:
            await asked
        assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        blocked.set()
        stream.close()


async def test_a_brokers_first_request_goes_unary_while_its_stream_opens(served) -> None:
    """A new controller opens a stream to every broker at once while its failover holds the
    event loop; a new stream's first request takes more turns of it than a unary call. So the
    first request to a broker is a unary call, its stream opening meanwhile, and the next go
    on the stream."""
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    broker = await served()
    answers: list = []
    settings = ChannelSettings("127.0.0.1", 1, control_stream=True)
    manager = ControllerChannelManager(settings, lambda b, k, req, resp: answers.append(resp))
    manager.add_broker(BrokerInfo(1, "127.0.0.1", broker.port))
    try:
        first = SEQUENCE[0]
        manager.send(1, KIND_OF[type(first)], first)
        assert await manager.wait_answered(30.0)
        stream = manager._brokers[1].stream
        assert stream is not None and stream._opening is not None
        await stream._opening

        async def both_reached_the_broker() -> bool:  # the stream's headers may still be on the way
            return len(broker.methods) == 2

        await until(both_reached_the_broker, timeout=10, what="the stream at the broker")
        assert sorted(broker.methods) == sorted(["Control", KIND_OF[type(first)]])
        for request in SEQUENCE[1:]:
            manager.send(1, KIND_OF[type(request)], request)
        assert await manager.wait_answered(30.0)
        assert len(answers) == len(SEQUENCE) and manager.failures == 0
        assert len(broker.methods) == 2  # the rest on the stream
    finally:
        await manager.close()


async def test_tracked_brokers_are_connected_and_their_streams_open_before_any_request(
    served,
) -> None:
    """A standby's channels (``track``): every broker's stream opens with nothing sent, so the
    term's first request to each goes on it; a broker no longer tracked is closed."""
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    first, second = await served(), await served()
    answers: list = []
    settings = ChannelSettings("127.0.0.1", 1, control_stream=True)
    manager = ControllerChannelManager(settings, lambda b, k, req, resp: answers.append(resp))
    manager.hold()
    manager.track([BrokerInfo(1, "127.0.0.1", first.port), BrokerInfo(2, "127.0.0.1", second.port)])
    try:

        async def open_to_both() -> bool:
            ready = all(b.stream is not None and b.stream.ready for b in manager._brokers.values())
            return ready and bool(first.methods) and bool(second.methods)

        await until(open_to_both, timeout=10, what="both streams open at both brokers")
        assert first.methods == second.methods == ["Control"]
        assert first.replicas.metadata.digest() == MetadataCache().digest()  # nothing sent
        manager.track([BrokerInfo(1, "127.0.0.1", first.port)])
        assert manager.broker_ids == {1}
        manager.release()
        for request in SEQUENCE[:3]:
            manager.send(1, KIND_OF[type(request)], request)
        assert await manager.wait_answered(30.0)
        assert len(answers) == 3 and manager.failures == 0
        assert first.methods == ["Control"]  # the first request too went on the stream
    finally:
        await manager.close()


async def test_a_stream_that_ends_while_idle_sends_the_next_request_unary(served) -> None:
    """A broker restarting between requests ends its stream: the manager's next request goes
    as a unary call at once (no failed attempt), and a new stream opens behind it."""
    from tests.unit.broker.test_control_simulated_parity import SEQUENCE

    broker = await served()
    answers, manager = await _answers(broker.port, True, SEQUENCE[:1])
    try:
        stream = manager._brokers[1].stream
        assert stream is not None and stream._call is not None
        stream._call.cancel()  # as the connection's loss ends it

        async def forgotten() -> bool:
            return not stream.ready

        await until(forgotten, timeout=10, what="the stream forgotten")
        manager.send(1, KIND_OF[type(SEQUENCE[1])], SEQUENCE[1])
        assert await manager.wait_answered(30.0)
        assert manager.failures == 0 and len(answers) == 2
        assert stream._opening is not None
        await stream._opening
        assert stream.ready  # the new stream, opened beside the unary call

        async def reached_the_broker() -> bool:
            return len(broker.methods) == 3

        await until(reached_the_broker, timeout=10, what="the new stream at the broker")
        assert broker.methods[0] == "Control"
        assert sorted(broker.methods[1:]) == sorted(["Control", KIND_OF[type(SEQUENCE[1])]])
    finally:
        await manager.close()


async def test_a_sender_cancelled_as_its_deadline_passes_stops_and_close_returns(served) -> None:
    """The controller's deactivation (its session lost) cancels every sender and waits for
    them. On a loop held past the requests' deadlines, a deadline fires in the turn that
    cancels its sender, before the sender runs: the cancellation must stop the sender, not
    count as a timeout that is retried. Counted as one, the sender went on sending with the
    old epoch, the deactivation waited for it for ever, and the controller, first in the
    election again, never took office: the cluster had no controller."""
    release = asyncio.Event()
    broker = await served(block=release)
    clock = ManualClock()
    # A deadline shorter than close()'s own bound, so the clock can pass the one alone.
    settings = ChannelSettings("127.0.0.1", 1, request_timeout_s=1.0, control_stream=True)
    assert settings.timeout_for(1) + 1.0 < CLOSE_WAIT_S
    manager = ControllerChannelManager(settings, lambda *a: None, clock=clock)
    manager.add_broker(BrokerInfo(1, "127.0.0.1", broker.port))
    sender = manager._brokers[1]
    assert sender.stream is not None and sender.task is not None
    sender.stream.prepare()
    assert sender.stream._opening is not None
    await sender.stream._opening
    manager.send(1, "LeaderAndIsr", _lai(1))
    await asyncio.wait_for(broker.received.wait(), 10)  # the request is on the stream, unanswered
    closing = asyncio.ensure_future(manager.close())
    await asyncio.sleep(0)  # close() has cancelled the sender, which has not run since
    assert not sender.task.done()
    clock.advance(settings.timeout_for(1) + 1.0)  # its deadline fires first
    await asyncio.wait_for(closing, 10)
    assert sender.task.cancelled()
    assert manager.failures == 0  # not a timeout
    release.set()


async def test_close_returns_even_if_a_sender_ignores_its_cancellation() -> None:
    """Whatever a sender does with its cancellation, closing the manager (a controller's
    deactivation) waits for it at most ``CLOSE_WAIT_S`` on the manager's clock."""
    clock = ManualClock()
    settings = ChannelSettings("127.0.0.1", 1, control_stream=True)
    manager = ControllerChannelManager(settings, lambda *a: None, clock=clock)
    manager.add_broker(BrokerInfo(1, "127.0.0.1", 1))
    broker = manager._brokers[1]
    assert broker.task is not None
    broker.task.cancel()
    stubborn_release = asyncio.Event()

    async def stubborn() -> None:
        while True:
            try:
                await stubborn_release.wait()
                return
            except asyncio.CancelledError:
                continue

    broker.task = asyncio.ensure_future(stubborn())
    closing = asyncio.ensure_future(manager.close())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not closing.done()
    clock.advance(CLOSE_WAIT_S)
    await asyncio.wait_for(closing, 10)
    stubborn_release.set()
    await broker.task
