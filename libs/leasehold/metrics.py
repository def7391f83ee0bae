"""Prometheus metrics: one registry per service process, served on ``--metrics-port``.

Services create their metrics on a ``CollectorRegistry`` they own (no module globals) and pass it
here. Names follow Kafka's JMX names adapted to Prometheus conventions, e.g. Kafka's
``kafka.controller:type=KafkaController,name=OfflinePartitionsCount`` becomes
``leasehold_controller_offline_partitions_count``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

log = logging.getLogger(__name__)


def serve(registry: CollectorRegistry, host: str, port: int) -> int:
    """Expose ``registry`` at ``http://host:port/metrics``; returns the port (0 disables)."""
    if port <= 0:
        return 0
    server, _thread = start_http_server(port, addr=host, registry=registry)
    bound = server.server_address[1]
    log.info("metrics endpoint", extra={"address": f"{host}:{bound}"})
    return bound


# Latency buckets in milliseconds, from a fast local call to a long-poll Fetch or a slow commit.
_UNTRACKED = ("/grpc.health.", "/grpc.reflection.")
MS_BUCKETS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


class RequestMetrics(grpc.aio.ServerInterceptor):
    """Kafka's per-request ``RequestsPerSec`` and ``TotalTimeMs`` for every gRPC method served.

    ``leasehold_<service>_requests_total{request,code}`` counts calls by method name and status
    (rate() of it is Kafka's RequestsPerSec); ``leasehold_<service>_request_total_time_ms{request}``
    is a histogram of the time from the call reaching the server to its answer. Health checks and
    reflection are not counted.
    """

    def __init__(self, registry: CollectorRegistry, service: str) -> None:
        prefix = f"leasehold_{service}_"
        self.requests = Counter(
            prefix + "requests",
            "gRPC requests served, by method and status code",
            ["request", "code"],
            registry=registry,
        )
        self.total_time = Histogram(
            prefix + "request_total_time_ms",
            "Time from receiving a gRPC request to answering it, milliseconds",
            ["request"],
            buckets=MS_BUCKETS,
            registry=registry,
        )

    def observe(self, request: str, code: str, started: float) -> None:
        self.requests.labels(request, code).inc()
        self.total_time.labels(request).observe((time.monotonic() - started) * 1000)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or handler.unary_unary is None or method.startswith(_UNTRACKED):
            return handler
        inner = handler.unary_unary
        name = method.rsplit("/", 1)[-1]

        async def measured(request, context: grpc.aio.ServicerContext):
            started = time.monotonic()
            code = "UNKNOWN"
            try:
                response = await inner(request, context)
                # A refusal may set the status and return (``grpc_errors``) instead of aborting.
                code = _status_name(context.code(), "OK")
                return response
            except grpc.aio.AbortError:
                code = _status_name(context.code(), "UNKNOWN")
                raise
            finally:
                self.observe(name, code, started)

        return grpc.unary_unary_rpc_method_handler(
            measured,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _status_name(status: object, otherwise: str) -> str:
    """The name of the status a handler set (``otherwise`` when it set none)."""
    return status.name if isinstance(status, grpc.StatusCode) else otherwise
