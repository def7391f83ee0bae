"""Tracing for every Leasehold service, configured only by the standard ``OTEL_*`` variables.

When neither ``OTEL_EXPORTER_OTLP_ENDPOINT`` nor ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (or
``OTEL_SDK_DISABLED=true`` / ``OTEL_TRACES_EXPORTER=none``), no SDK is installed: the API's no-op
tracer costs nothing and logs nothing, and no gRPC interceptors are added. Otherwise spans go to an
OTLP/gRPC collector (Jaeger ingests OTLP); service name, sampler and endpoint come from the usual
variables (``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``, ``OTEL_TRACES_SAMPLER_ARG``, ...).

gRPC server and client calls are traced by OpenTelemetry's interceptors, except health checks and
reflection (filtered) and etcd calls (the etcd channel never gets an interceptor).

Span attributes Leasehold adds, all under ``leasehold.``:

==================================  ==============================================================
``leasehold.topic``                 topic name
``leasehold.partition``             partition index
``leasehold.partition_count``       number of partitions a decision or request touches
``leasehold.controller_id``         id of the controller acting
``leasehold.controller_epoch``      controller epoch stamped on the decision or request
``leasehold.broker_id``             the broker a request goes to, or that acts
``leasehold.leader_epoch``          leader epoch applied or checked
``leasehold.event``                 controller event type (BrokerChange, TopicChange, ...)
``leasehold.reason``                why a state change happened (selector or flow)
``leasehold.request_id``            admin intent id (deletion, reassignment, election)
``leasehold.txn_count``             etcd transactions a commit used
``leasehold.write_count``           keys a commit wrote
``leasehold.error``                 the ErrorCode name when a decision failed
==================================  ==============================================================
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

TRACER_NAME = "leasehold"


def tracing_requested() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    if os.environ.get("OTEL_TRACES_EXPORTER", "").lower() == "none":
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def setup_tracing(default_service_name: str) -> bool:
    """Install the SDK and an OTLP exporter if the environment asks; return whether it did."""
    if enabled():
        return True
    if not tracing_requested():
        return False
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME", default_service_name)
    resource = Resource.create({"service.name": name}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True


def enabled() -> bool:
    """Whether an SDK tracer provider is installed (OpenTelemetry keeps it process-wide)."""
    return type(trace.get_tracer_provider()).__module__.startswith("opentelemetry.sdk")


def shutdown() -> None:
    provider = trace.get_tracer_provider()
    if hasattr(provider, "shutdown"):
        provider.shutdown()


def _traced_call_filter():
    from opentelemetry.instrumentation.grpc import filters

    return filters.negate(
        filters.any_of(filters.health_check(), filters.service_prefix("grpc.reflection"))
    )


def server_interceptors() -> list:
    """gRPC aio server interceptors for tracing (none when tracing is off)."""
    if not enabled():
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return [aio_server_interceptor(filter_=_traced_call_filter())]


def client_interceptors() -> list:
    """gRPC aio client interceptors for tracing (none when tracing is off)."""
    if not enabled():
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    return list(aio_client_interceptors(filter_=_traced_call_filter()))


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def attrs(**values: Any) -> dict[str, Any]:
    """``leasehold.``-prefixed span attributes, dropping None values."""
    return {f"leasehold.{k}": v for k, v in values.items() if v is not None}


@contextlib.contextmanager
def span(
    name: str, *, parent: otel_context.Context | None = None, **values: Any
) -> Iterator[trace.Span]:
    """A span for a domain decision, with ``leasehold.*`` attributes."""
    with tracer().start_as_current_span(name, context=parent, attributes=attrs(**values)) as s:
        yield s


def inject() -> dict[str, str]:
    """The current trace context as a W3C carrier, to store in an etcd intent."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> otel_context.Context | None:
    """The context stored in an intent, to parent the spans that carry it out."""
    if not carrier:
        return None
    return propagate.extract(dict(carrier))


def current_trace_id() -> str:
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else ""
