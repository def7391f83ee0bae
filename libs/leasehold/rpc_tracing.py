"""gRPC client and server spans with OpenTelemetry's current semantic conventions.

OpenTelemetry's gRPC instrumentation names spans ``/package.Service/Method`` and describes
peers with the deprecated ``net.peer.*`` attributes (ports as strings). These interceptors
(unary calls: every Leasehold RPC is one) write what the conventions say today:

- span name ``leasehold.admin.v1.AdminService/CreateTopics`` (``$rpc.service/$rpc.method``);
- ``rpc.system`` ``grpc``, ``rpc.service``, ``rpc.method``, ``rpc.grpc.status_code`` (an int);
- clients: ``server.address`` and ``server.port`` (an int); servers: ``client.address`` and
  ``client.port`` from the peer gRPC reports;
- W3C trace context in the call metadata, both ways.

Health checks and reflection are never traced. An idle long poll is not traced either: a
``Fetch`` whose answer carries no records (a follower or consumer waiting for data, several
times a second per broker pair) leaves no span unless ``LEASEHOLD_TRACE_EMPTY_FETCHES`` is
true; the request metrics still count every one (``leasehold_broker_requests_total``). A
Fetch's spans are started as any call's (so the server's is the client's child) and, when the
answer has no records, never ended, which is what keeps them from being exported; a Fetch that
moved a high watermark is kept (:func:`keep_current_call`).

A request on the controller's control stream (``BrokerControlService.Control``) gets the spans
its unary call would have (:func:`client_span`, :func:`server_span`), named after the unary
method, its trace context carried in the request's envelope instead of the call metadata.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import grpc
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

_UNTRACED = ("/grpc.health.", "/grpc.reflection.")
_FETCH = "/leasehold.broker.v1.BrokerService/Fetch"


def trace_empty_fetches(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("LEASEHOLD_TRACE_EMPTY_FETCHES", "").strip().lower() in ("1", "true", "yes")


def split_method(full: str) -> tuple[str, str]:
    """``/pkg.Service/Method`` -> (``pkg.Service``, ``Method``)."""
    service, _, method = full.lstrip("/").partition("/")
    return service, method


def span_name(full: str) -> str:
    service, method = split_method(full)
    return f"{service}/{method}"


def rpc_attributes(full: str) -> dict[str, Any]:
    service, method = split_method(full)
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}


def server_address(target: str) -> dict[str, Any]:
    """``server.address`` / ``server.port`` of a channel target (``host:port``, ``[v6]:port``,
    ``dns:///host:port``)."""
    t = target.split("///", 1)[-1]
    host, sep, port = t.rpartition(":")
    if not sep or not port.isdigit():
        return {"server.address": t}
    return {"server.address": host.strip("[]"), "server.port": int(port)}


def client_address(peer: str | None) -> dict[str, Any]:
    """``client.address`` / ``client.port`` of gRPC's peer string (``ipv4:1.2.3.4:5``,
    ``ipv6:[::1]:5``, ``unix:...``)."""
    if not peer:
        return {}
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return {"client.address": peer}
    host, _, port = rest.rpartition(":")
    out: dict[str, Any] = {"client.address": host.strip("[]")}
    if port.isdigit():
        out["client.port"] = int(port)
    return out


def fetch_is_empty(response: Any) -> bool:
    """Whether a FetchResponse carries no records at all (an idle long poll's answer)."""
    topics = getattr(response, "topics", None)
    if topics is None:
        return False
    return not any(p.records or p.decoded_records for t in topics for p in t.partitions)


def _tracer() -> trace.Tracer:
    return trace.get_tracer("leasehold.rpc")


def _finish(span: trace.Span, code: grpc.StatusCode) -> None:
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code is not grpc.StatusCode.OK:
        span.set_status(Status(StatusCode.ERROR, code.name))
    span.end()


class StreamedSpan:
    """A span of one request on a stream, finished with the status it ended with."""

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.code = grpc.StatusCode.UNKNOWN  # until the holder says otherwise


@contextlib.contextmanager
def client_span(method: str, target: str, carrier: dict[str, str]) -> Iterator[StreamedSpan]:
    """The CLIENT span of one request sent on a stream, its W3C context put in ``carrier``."""
    span = _tracer().start_span(
        span_name(method), kind=SpanKind.CLIENT, attributes={**rpc_attributes(method),
                                                             **server_address(target)})  # fmt: skip
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    held = StreamedSpan(span)
    try:
        yield held
    finally:
        _finish(span, held.code)


@contextlib.contextmanager
def server_span(
    method: str, carrier: Mapping[str, str], peer: str | None
) -> Iterator[StreamedSpan]:
    """The SERVER span of one request taken from a stream, continuing the trace in
    ``carrier``, current while the request is handled."""
    span = _tracer().start_span(
        span_name(method), context=propagate.extract(dict(carrier)), kind=SpanKind.SERVER,
        attributes={**rpc_attributes(method), **client_address(peer)})  # fmt: skip
    held = StreamedSpan(span)
    try:
        with trace.use_span(span, end_on_exit=False):
            yield held
    finally:
        _finish(span, held.code)


class ClientInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, target: str, trace_empty: bool | None = None) -> None:
        self.peer = server_address(target)
        self.trace_empty = trace_empty_fetches() if trace_empty is None else trace_empty

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        method = client_call_details.method
        method = method.decode() if isinstance(method, bytes) else method
        if method.startswith(_UNTRACED):
            return await continuation(client_call_details, request)
        droppable = method == _FETCH and not self.trace_empty
        span = _tracer().start_span(
            span_name(method), kind=SpanKind.CLIENT, attributes={**rpc_attributes(method),
                                                                 **self.peer})  # fmt: skip
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        metadata = list(client_call_details.metadata or ()) + list(carrier.items())
        call = await continuation(client_call_details._replace(metadata=metadata), request)
        try:
            response = await call
        except grpc.aio.AioRpcError as e:
            _finish(span, e.code())
            raise
        except BaseException:
            span.end()
            raise
        # An idle long poll's span is never ended, so never exported.
        if not (droppable and fetch_is_empty(response)):
            _finish(span, grpc.StatusCode.OK)
        return call


_KEEP: ContextVar[bool] = ContextVar("leasehold_rpc_keep", default=False)


def keep_current_call() -> trace.SpanContext | None:
    """Export the current RPC's span even if it would be dropped as an idle long poll (a Fetch
    that moved a high watermark: the replication an acks=all produce waited for), and return
    its span context for a link (None when nothing is traced)."""
    sc = trace.get_current_span().get_span_context()
    if not sc.is_valid:
        return None
    _KEEP.set(True)
    return sc


class ServerInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, trace_empty: bool | None = None) -> None:
        self.trace_empty = trace_empty_fetches() if trace_empty is None else trace_empty

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        method = details.method
        if handler is None or handler.unary_unary is None or method.startswith(_UNTRACED):
            return handler
        inner = handler.unary_unary
        droppable = method == _FETCH and not self.trace_empty
        base = rpc_attributes(method)

        async def traced(request, context: grpc.aio.ServicerContext):
            parent = propagate.extract(dict(context.invocation_metadata() or ()))
            attributes = {**base, **client_address(context.peer())}
            span = _tracer().start_span(span_name(method), context=parent,
                                        kind=SpanKind.SERVER, attributes=attributes)  # fmt: skip
            keep = _KEEP.set(False)
            try:
                with trace.use_span(span, end_on_exit=False):
                    try:
                        response = await inner(request, context)
                    except BaseException:
                        _finish(span, _code_of(context))
                        raise
                # An idle long poll's span is never ended, so never exported.
                if not (droppable and fetch_is_empty(response) and not _KEEP.get()):
                    _finish(span, grpc.StatusCode.OK)
                return response
            finally:
                _KEEP.reset(keep)

        return grpc.unary_unary_rpc_method_handler(
            traced,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _code_of(context: grpc.aio.ServicerContext) -> grpc.StatusCode:
    code = context.code()
    if isinstance(code, grpc.StatusCode) and code is not grpc.StatusCode.OK:
        return code
    return grpc.StatusCode.UNKNOWN
