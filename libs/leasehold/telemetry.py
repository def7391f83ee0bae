"""Tracing for every Leasehold service, configured only by the standard ``OTEL_*`` variables.

When neither ``OTEL_EXPORTER_OTLP_ENDPOINT`` nor ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (or
``OTEL_SDK_DISABLED=true`` / ``OTEL_TRACES_EXPORTER=none``), no SDK is installed: the API's no-op
tracer costs nothing and logs nothing, and no gRPC interceptors are added. Otherwise spans go to an
OTLP/gRPC collector (Jaeger ingests OTLP); service name, sampler and endpoint come from the usual
variables (``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER``, ``OTEL_TRACES_SAMPLER_ARG``,
``OTEL_BSP_SCHEDULE_DELAY``, ...). Each service calls :func:`setup_tracing` first thing and
:func:`shutdown` last (it flushes the spans still batched).

gRPC server and client calls are traced by :mod:`leasehold.rpc_tracing`'s interceptors (span names
``leasehold.admin.v1.AdminService/CreateTopics``, ``server.address``/``server.port`` on clients,
``client.address`` on servers), except health checks and reflection, idle long-poll Fetches (no
records: counted in metrics, not traced) and etcd calls (the etcd channel never gets an
interceptor). A client call made while a span is current carries that span's context in its
``traceparent`` metadata. A request on the controller's control stream to a broker
(``BrokerControlService.Control``) gets the spans its unary call would (``.../LeaderAndIsr``,
client and server), its context carried in the request's envelope.

One operator action is one trace: the admin service stores the W3C context of its call in the etcd
intent or TopicAssignment it writes (:func:`inject`); the controller's ``controller.event`` span
for the watch event that brings it is a child of that context (:func:`extract`; with links to the
others when one event carries several intents), and the per-broker request batches it sends, and
so the brokers' server spans, are children of that.

Spans Leasehold adds (besides the gRPC ones):

=================================  ==============================================================
``admin.validate``                 admin: a request checked before anything is written
``controller.elected``             controller: the campaign was won (a short span: the root of the
                                   failover's one trace: epoch bump, failover, UpdateMetadata)
``controller.epoch_bump``          controller: the fenced controller-epoch increment after winning
``controller.failover``            controller: becoming active (metadata push, state machines)
``controller.event``               controller: one event of the event loop, handled (not the
                                   ``Synced`` marker after each watch batch)
``controller.new_partitions``      controller: topic creation / partition addition
``controller.topic_deletion``      controller: deletion intents carried out
``controller.reassignment``        controller: reassignment intents carried out
``controller.elect_leaders``       controller: one ElectLeaders intent carried out
``controller.partition_states``    controller: one partition state-machine batch (decide, commit)
``controller.replica_states``      controller: one replica state-machine batch (decide, commit)
``controller.commit``              controller: one fenced etcd commit of partition states
``controller.broker_requests``     controller: one request batch sent to one broker
``controller.alter_partition``     controller: an AlterPartition request decided
``broker.become_leader``           broker: LeaderAndIsr partitions this broker now leads
``broker.become_follower``         broker: LeaderAndIsr partitions this broker now follows
``broker.truncate``                broker: a fetcher truncating a follower log
``broker.alter_partition``         broker: an ISR change sent to the controller
=================================  ==============================================================

Span attributes Leasehold adds, all under ``leasehold.``:

==================================  ==============================================================
``leasehold.topic``                 topic name (comma separated when several)
``leasehold.partition``             partition index
``leasehold.partition_count``       number of partitions a decision or request touches
``leasehold.replica_count``         number of replicas a replica state change touches
``leasehold.controller_id``         id of the controller acting
``leasehold.controller_epoch``      controller epoch stamped on the decision or request
``leasehold.broker_id``             the broker a request goes to, or that acts
``leasehold.broker_epoch``          the broker epoch stamped on a request
``leasehold.leader_epoch``          leader epoch applied or checked
``leasehold.event``                 controller event type (BrokerChange, TopicChange, ...)
``leasehold.active``                whether the controller handling an event is the active one
``leasehold.intent_count``          admin intents (with a trace context) one event carries
``leasehold.target_state``          state a state-machine batch moves to (Online, Offline, ...)
``leasehold.selector``              leader selector of a partition batch (offline, preferred, ...)
``leasehold.pipelined``             a partition batch decided while the previous batch's commit ran
``leasehold.reason``                why a state change happened (selector or flow)
``leasehold.election_count``        leaders a partition batch elected (written)
``leasehold.unclean_count``         of which from outside the ISR (unclean election)
``leasehold.failure_count``         items of a batch that could not change
``leasehold.request_id``            admin intent id (deletion, reassignment, election)
``leasehold.requests``              request kinds in a broker batch (LeaderAndIsr,UpdateMetadata)
``leasehold.attempts``              RPC attempts (retries included) a broker request batch needed
``leasehold.txn_count``             etcd transactions a commit used
``leasehold.write_count``           keys a commit wrote
``leasehold.stale_count``           keys a commit found changed behind our back
``leasehold.outcome``               how a campaign or check ended (won, lost, stopped, ok, ...)
``leasehold.terms``                 terms this controller has led before a campaign
``leasehold.truncate_offset``       offset a follower log was truncated to
``leasehold.operation``             admin operation validated (CreateTopics, ...)
``leasehold.error``                 the ErrorCode name when a decision failed
``leasehold.acks``                  a Produce request's acks (0, 1, -1 = all); an acks=all Produce
                                    links the follower Fetch that moved the high watermark
==================================  ==============================================================
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

TRACER_NAME = "leasehold"


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` environment asks for traces to be exported."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").lower() == "none":
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
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
    """Flush batched spans and stop the exporter (a no-op when tracing is off)."""
    provider = trace.get_tracer_provider()
    if hasattr(provider, "shutdown"):
        provider.shutdown()


def server_interceptors() -> list:
    """gRPC aio server interceptors for tracing (none when tracing is off): spans named and
    described by the current conventions (:mod:`leasehold.rpc_tracing`)."""
    if not enabled():
        return []
    from leasehold.rpc_tracing import ServerInterceptor

    return [ServerInterceptor()]


def client_interceptors(target: str = "") -> list:
    """gRPC aio client interceptors for calls to ``target`` (none when tracing is off)."""
    if not enabled():
        return []
    from leasehold.rpc_tracing import ClientInterceptor

    return [ClientInterceptor(target)]


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def attrs(**values: Any) -> dict[str, Any]:
    """``leasehold.``-prefixed span attributes, dropping None values."""
    return {f"leasehold.{k}": v for k, v in values.items() if v is not None}


@contextlib.contextmanager
def span(
    name: str,
    *,
    parent: otel_context.Context | None = None,
    links: Sequence[otel_context.Context] = (),
    **values: Any,
) -> Iterator[trace.Span]:
    """A span for a domain decision, with ``leasehold.*`` attributes.

    ``parent`` (a context from :func:`extract` or :func:`current_context`) replaces the current
    span as parent; ``links`` are further contexts the work serves (e.g. other intents).
    """
    with tracer().start_as_current_span(
        name, context=parent, links=_links(links), attributes=attrs(**values)
    ) as s:
        yield s


def _links(contexts: Iterable[otel_context.Context]) -> list[trace.Link]:
    out = []
    for ctx in contexts:
        sc = trace.get_current_span(ctx).get_span_context()
        if sc.is_valid:
            out.append(trace.Link(sc))
    return out


@contextlib.contextmanager
def attached(ctx: otel_context.Context | None) -> Iterator[None]:
    """Make ``ctx`` (from :func:`current_context` on another task) current for a block."""
    if ctx is None:
        yield
        return
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """No current span for a block: a long-lived task created inside it (a replica fetcher)
    starts its own traces instead of hanging every call it ever makes under one request."""
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


def current_context() -> otel_context.Context | None:
    """The context to hand to work done later on another task (None when nothing is traced)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    return otel_context.get_current()


def inject() -> dict[str, str]:
    """The current trace context as a W3C carrier, to store in an etcd intent."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract(carrier: Mapping[str, str] | None) -> otel_context.Context | None:
    """The context stored in an intent, to parent the spans that carry it out."""
    if not carrier:
        return None
    ctx = propagate.extract(dict(carrier))
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def parent_and_links(
    carriers: Iterable[Mapping[str, str] | None],
) -> tuple[otel_context.Context | None, list[otel_context.Context]]:
    """For work serving several traced requests: the first one's context as the parent, the
    others (distinct traces only) as links."""
    contexts = [c for c in map(extract, carriers) if c is not None]
    if not contexts:
        return None, []
    parent, seen, links = contexts[0], {trace_id_of(contexts[0])}, []
    for ctx in contexts[1:]:
        if trace_id_of(ctx) not in seen:
            seen.add(trace_id_of(ctx))
            links.append(ctx)
    return parent, links


def trace_id_of(ctx: otel_context.Context | None) -> int:
    """The trace id of ``ctx``'s span, or of the current span when ``ctx`` is None (0 for no
    span): e.g. to see whether work is already part of a trace."""
    if ctx is None:
        return trace.get_current_span().get_span_context().trace_id
    return trace.get_current_span(ctx).get_span_context().trace_id


def current_trace_id() -> str:
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else ""
