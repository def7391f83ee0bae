"""The BrokerControlService servicer: the controller's LeaderAndIsr, StopReplica and
UpdateMetadata, translated to the domain (``control_convert``) and handed to a
``control_state.ControlState`` — the real broker's ``ReplicaManager`` or a simulated broker's
replicas, through the same code. The controller's requests are checked whole: any malformed
partition fails them with INVALID_ARGUMENT and changes nothing.

The three requests arrive as unary calls or on the controller's control stream
(``BrokerControlService.Control``, one per controller and broker), which carries the same
requests and answers in envelopes (``leasehold.control_stream``). Each request on the stream
goes through what the unary call's interceptors do (the request bounds, the error mapping, a
server span continuing the controller's trace, the request metrics), answered in order; the
peer's role is checked once, when the stream opens (``peer_auth``). ``control_handlers``
registers both ways with the same deserializers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from leasehold import (
    control_stream,
    grpc_errors,
    metadata_digest,
    peer_auth,
    rpc_tracing,
    telemetry,
)
from leasehold.broker.v1 import control_pb2, control_pb2_grpc
from leasehold.errors import InvalidRequestError
from leasehold.heap import BULK_PARTITIONS, HeapFreezer
from leasehold.request_bounds import Counter, Counts, OverLimit
from leasehold.validation import topic_name_problem
from services.broker_agent import control_convert
from services.broker_agent.control_state import ControlState
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
)

log = logging.getLogger(__name__)

# (full method, request, context) -> why the peer may not make this request, or None.
Authorize = Callable[[str, Any, grpc.aio.ServicerContext], "peer_auth.Refusal | None"]

T = TypeVar("T")
Request = TypeVar("Request", LeaderAndIsr, StopReplica, UpdateMetadata)
ControlRequestPb = (
    control_pb2.LeaderAndIsrRequest
    | control_pb2.StopReplicaRequest
    | control_pb2.UpdateMetadataRequest
)
# Control requests naming more partitions than this are decoded and validated on a worker
# thread: 100,000 partitions take most of a CPU-second, which must not stall the event loop
# (gRPC, fetchers, the etcd lease keep-alive). The thread still shares the GIL, handing it
# back to the loop every few milliseconds, which makes the decode itself 2-3 times slower
# while fetchers run: 10,000 partitions (about 50 ms inline) are decoded on the loop.
DECODE_OFF_LOOP_ABOVE = 20_000


async def _decode(size: int, decode: Callable[[], T]) -> T:
    if size > DECODE_OFF_LOOP_ABOVE:
        return await asyncio.to_thread(decode)
    return decode()


@contextlib.contextmanager
def _collector_paused(heap: HeapFreezer, partitions: int) -> Iterator[None]:
    """No automatic cyclic collection while a bulk control request is decoded and applied.

    A 10,000-partition LeaderAndIsr allocates a few hundred thousand containers, most of which
    live on (partition states, fetch states): each time the allocations cross the collector's
    thresholds it walks them again (tens of milliseconds, ``bench.broker_micro``), on the
    loop the controller's next request waits for. The request's garbage is freed by reference
    counting anyway, and ``HeapFreezer.settle``, before the collector is back, walks what is
    young once and freezes the survivors. Only when the freezer runs (the agent's main enables
    it), for requests it settles after, and never re-enabling a collector someone else
    disabled: a request that overlaps another's pause leaves it to that one.
    """
    if not heap.enabled or partitions < BULK_PARTITIONS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _result_fields(result: ControlResult) -> dict[str, Any]:
    """The response fields of a LeaderAndIsr / StopReplica result (encoded as ``_decode``)."""
    return await _decode(
        len(result.partition_errors), lambda: control_convert.control_result_fields(result)
    )


def _check_digest_only(request: UpdateMetadata) -> None:
    """A digest-only UpdateMetadata stands for the states the broker holds: it cannot also
    carry changes (their effect on the digest would be the broker's guess). Live brokers named
    as a change need the digest of the set they change."""
    base = request.live_brokers_base
    if base is not None and len(base) != metadata_digest.DIGEST_SIZE:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            f"live_brokers_base must be {metadata_digest.DIGEST_SIZE} bytes, got {len(base)}",
        )
    if base is None and request.removed_brokers:
        raise InvalidRequestError(
            Code.INVALID_REQUEST, "removed_brokers needs live_brokers_base (the set it changes)"
        )
    if not request.metadata_digest:
        return
    if len(request.metadata_digest) != metadata_digest.DIGEST_SIZE:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            f"metadata_digest must be {metadata_digest.DIGEST_SIZE} bytes, "
            f"got {len(request.metadata_digest)}",
        )
    if request.partitions or request.deleted_topics:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            "an UpdateMetadata with metadata_digest must not carry partition states or "
            "deleted topics",
        )


def _check_partitions(pairs: Iterable[tuple[str, int]]) -> None:
    seen: set[tuple[str, int]] = set()
    names: set[str] = set()  # each topic name is checked once, not once per partition
    for topic, partition in pairs:
        if topic not in names:
            problem = topic_name_problem(topic)
            if problem is not None:
                # Names reach file paths (<data-dir>/<topic>-<p>): refuse anything illegal.
                raise InvalidRequestError(Code.INVALID_REQUEST, f"invalid topic: {problem}")
            names.add(topic)
        if partition < 0:
            raise InvalidRequestError(
                Code.INVALID_REQUEST, f"partition must be >= 0, got {topic}-{partition}"
            )
        if (topic, partition) in seen:
            raise InvalidRequestError(
                Code.INVALID_REQUEST, f"partition {topic}-{partition} is listed twice"
            )
        seen.add((topic, partition))


def decode_update_metadata(request: control_pb2.UpdateMetadataRequest) -> UpdateMetadata:
    """An UpdateMetadata in the domain, checked whole (INVALID_ARGUMENT for any malformed
    part). What it yields depends on nothing but the request."""
    domain = control_convert.update_metadata_from_pb(request)
    _check_partitions((s.topic, s.partition) for s in domain.partitions)
    _check_digest_only(domain)
    return domain


class BrokerControlServicer(control_pb2_grpc.BrokerControlServiceServicer):
    """The controller's requests. After one touching thousands of partitions the surviving
    objects are frozen (``leasehold.heap``), so the next big request does not pay a full
    collection of the whole heap.

    ``decode_update_metadata`` turns an UpdateMetadata into the domain: by default
    :func:`decode_update_metadata`; simulated brokers sharing a process give one that decodes
    each request body once for all of them (``simulation.sharing``)."""

    def __init__(
        self,
        replicas: ControlState,
        heap: HeapFreezer | None = None,
        *,
        decode_update_metadata: Callable[
            [control_pb2.UpdateMetadataRequest], UpdateMetadata
        ] = decode_update_metadata,
        bounds: Mapping[str, Counter] | None = None,
        observe: Callable[[str, str, float], None] | None = None,
        authorize: Authorize | None = None,
    ) -> None:
        self._replicas = replicas
        self._heap = heap or HeapFreezer(enabled=False)
        self._decode_update_metadata = decode_update_metadata
        # For requests on the control stream, which the unary interceptors do not see: the
        # server's per-request limits (``RequestBoundsInterceptor``'s counters) and its
        # request metrics (``RequestMetrics.observe``).
        self._bounds = bounds or {}
        self._observe = observe
        # Under TLS, the peer check of each request's claim (its controller id must be the
        # certificate's: ``peer_auth.refusal_for``), which the interceptor makes only as the
        # stream opens.
        self._authorize = authorize

    async def LeaderAndIsr(
        self, request: control_pb2.LeaderAndIsrRequest, context
    ) -> control_pb2.LeaderAndIsrResponse:
        def decode() -> LeaderAndIsr:
            domain = control_convert.leader_and_isr_from_pb(request)
            _check_partitions((s.topic, s.partition) for s in domain.partitions)
            return domain

        fields = await self._handle(
            request, decode, self._replicas.become_leader_or_follower, _result_fields
        )
        return control_pb2.LeaderAndIsrResponse(**fields)

    async def StopReplica(
        self, request: control_pb2.StopReplicaRequest, context
    ) -> control_pb2.StopReplicaResponse:
        def decode() -> StopReplica:
            domain = control_convert.stop_replica_from_pb(request)
            _check_partitions((s.topic, s.partition) for s in domain.partitions)
            return domain

        fields = await self._handle(request, decode, self._replicas.stop_replicas, _result_fields)
        return control_pb2.StopReplicaResponse(**fields)

    async def UpdateMetadata(
        self, request: control_pb2.UpdateMetadataRequest, context
    ) -> control_pb2.UpdateMetadataResponse:
        def decode() -> UpdateMetadata:
            return self._decode_update_metadata(request)

        async def answer(result: ControlResult) -> control_pb2.UpdateMetadataResponse:
            return control_pb2.UpdateMetadataResponse(
                error_code=int(result.error), error_message=result.message
            )

        return await self._handle(request, decode, self._replicas.update_metadata, answer)

    async def _handle(
        self,
        request: ControlRequestPb,
        decode: Callable[[], Request],
        apply: Callable[[Request], Awaitable[ControlResult]],
        answer: Callable[[ControlResult], Awaitable[T]],
    ) -> T:
        """One control request: ahead of the data plane (``control_priority``), decoded
        (off the loop when large) and applied without the cyclic collector, the survivors
        frozen, and its answer built, all before the data plane may run again (at once if the
        controller has nothing else queued for this broker: ``nothing_queued``)."""
        size = len(request.partition_states)
        with self._replicas.priority.control(linger=not request.nothing_queued):
            with _collector_paused(self._heap, size):
                domain = await _decode(size, decode)
                result = await apply(domain)
                # Before the collector is back: re-enabled first, it would walk the request's
                # new objects once on its own, and the settle walk them again.
                self._heap.settle_after(len(domain.partitions))
            return await answer(result)

    async def Control(
        self,
        request_iterator: AsyncIterator[bytes | control_pb2.ControlRequest],
        context: grpc.aio.ServicerContext,
        deserializers: Mapping[str, Callable[[bytes], Message]] | None = None,
    ) -> AsyncIterator[bytes]:
        """The control stream: each request handled as its unary call would be, in order, and
        answered in an envelope (module docstring). An envelope that cannot be read ends the
        stream with INVALID_ARGUMENT; a request that fails gets its status in its answer."""
        deserializers = deserializers or DESERIALIZERS
        async for data in request_iterator:
            if isinstance(data, control_pb2.ControlRequest):  # registered by the generated code
                data = data.SerializeToString()
            try:
                envelope = control_stream.decode_request(data)
            except control_stream.EnvelopeError as exc:
                log.warning("ending the control stream from %s: %s", context.peer(), exc)
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            yield await self._streamed(envelope, deserializers[envelope.kind], context)

    async def _streamed(
        self,
        envelope: control_stream.Envelope,
        deserialize: Callable[[bytes], Message],
        context: grpc.aio.ServicerContext,
    ) -> bytes:
        kind = envelope.kind
        method = f"/{SERVICE}/{kind}"
        started = time.monotonic()
        code, message, body = grpc.StatusCode.OK, "", None
        traced = (
            rpc_tracing.server_span(method, envelope.trace, context.peer())
            if telemetry.enabled()
            else contextlib.nullcontext()
        )
        with traced as span:
            try:
                request = deserialize(envelope.body)
                refusal = self._authorize(method, request, context) if self._authorize else None
                if refusal is not None:
                    raise _Refused(refusal.code, refusal.message)
                counter = self._bounds.get(method)
                if counter is not None:
                    counter(request, Counts(method))
                response = await getattr(self, kind)(request, context)
                body = response.SerializeToString()
            except _Refused as refused:
                code, message = refused.code, refused.message
            except DecodeError:
                code, message = grpc.StatusCode.INVALID_ARGUMENT, f"{kind} could not be decoded"
            except OverLimit as exc:
                log.warning("refused %s from %s: %s", method, context.peer(), exc)
                code, message = grpc.StatusCode.INVALID_ARGUMENT, str(exc)
            except Exception as exc:  # mapped as the unary call's ErrorInterceptor maps it
                code, message, _ = grpc_errors.status_for(exc, method)
            if span is not None:
                span.code = code
        if self._observe is not None:
            self._observe(kind, code.name, started)
        return control_stream.encode_response(envelope.sequence, kind, body, code.value[0], message)


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        self.code, self.message = code, message


SERVICE = control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name
DESERIALIZERS: Mapping[str, Callable[[bytes], Message]] = {
    control_stream.LEADER_AND_ISR: control_pb2.LeaderAndIsrRequest.FromString,
    control_stream.UPDATE_METADATA: control_pb2.UpdateMetadataRequest.FromString,
    control_stream.STOP_REPLICA: control_pb2.StopReplicaRequest.FromString,
}


def control_handlers(
    servicer: BrokerControlServicer,
    update_metadata_deserializer: Callable[[bytes], Message] = (
        control_pb2.UpdateMetadataRequest.FromString
    ),
) -> grpc.GenericRpcHandler:
    """BrokerControlService: the three unary methods and the control stream, with one set of
    request deserializers (a process of simulated brokers gives its own for UpdateMetadata,
    ``simulation.sharing``). The stream's envelopes pass as bytes (``leasehold.control_stream``)."""
    pb = control_pb2
    deserializers = {**DESERIALIZERS, control_stream.UPDATE_METADATA: update_metadata_deserializer}

    methods = {
        "LeaderAndIsr": grpc.unary_unary_rpc_method_handler(
            servicer.LeaderAndIsr,
            request_deserializer=deserializers[control_stream.LEADER_AND_ISR],
            response_serializer=pb.LeaderAndIsrResponse.SerializeToString,
        ),
        "StopReplica": grpc.unary_unary_rpc_method_handler(
            servicer.StopReplica,
            request_deserializer=deserializers[control_stream.STOP_REPLICA],
            response_serializer=pb.StopReplicaResponse.SerializeToString,
        ),
        "UpdateMetadata": grpc.unary_unary_rpc_method_handler(
            servicer.UpdateMetadata,
            request_deserializer=update_metadata_deserializer,
            response_serializer=pb.UpdateMetadataResponse.SerializeToString,
        ),
        "Control": grpc.stream_stream_rpc_method_handler(
            functools.partial(servicer.Control, deserializers=deserializers)
        ),
    }
    return grpc.method_handlers_generic_handler(SERVICE, methods)
