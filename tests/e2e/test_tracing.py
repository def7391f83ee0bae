"""Traces in a real Jaeger: one operator action is one trace, across admin, controller and brokers.

The services run as real processes exporting OTLP/gRPC to Jaeger all-in-one (built by
``make jaeger``, on loopback). The test creates a topic, produces to it and fails the controller
over, then asks Jaeger's own HTTP API (``/api/services``, ``/api/traces``) what it stored:

* CreateTopics is one trace: the admin server span; the controller's event for the topic key,
  a child of the admin call through the trace context stored with the intent in etcd; per broker
  a request batch under that event, a LeaderAndIsr client span under the batch, and the broker's
  LeaderAndIsr server span under it, with the broker's role change below;
* Produce calls are traced on the brokers;
* the failover's requests to every broker form one trace, down to each broker's handling;
* every gRPC span follows OpenTelemetry's RPC conventions (``rpc.system``, ``rpc.service``,
  ``rpc.method``, ``rpc.grpc.status_code`` 0, no error status), no span of these traces names a
  parent missing from it, and Jaeger reports no warnings for them;
* health checks and etcd calls are never traced.

Spans are found by their conventions' attributes and the tree's shape, not by display names. A
screenshot of each trace goes to ``test-output/jaeger/`` for people to look at.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from jaeger_traces import Span, Trace, screenshot

from leasehold.client import AdminClient, Producer
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.jaeger import JaegerServer, jaeger_binary
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

ADMIN, CONTROLLER, BROKER = "leasehold-admin", "leasehold-controller", "leasehold-broker-agent"
ADMIN_SERVICE = "leasehold.admin.v1.AdminService"
CONTROL_SERVICE = "leasehold.broker.v1.BrokerControlService"
BROKER_SERVICE = "leasehold.broker.v1.BrokerService"
CONTROL_METHODS = {"LeaderAndIsr", "UpdateMetadata", "StopReplica"}


def _have_jaeger() -> bool:
    try:
        return jaeger_binary().exists()
    except FileNotFoundError:
        return False


@pytest.fixture
def traced(tmp_path):
    if not _have_jaeger():
        pytest.skip("no Jaeger binary: run `make jaeger`")
    with JaegerServer(tmp_path / "jaeger") as jaeger:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint,
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
        spec = ClusterSpec(controllers=2, brokers=3, session_ttl=3, extra_env=env)
        cluster = LocalCluster(spec, workdir=str(tmp_path / "cluster"))
        try:
            cluster.start()
            yield cluster, jaeger
        finally:
            for proc in cluster.brokers.values():  # no controlled shutdown: the test is over
                proc.kill()
            cluster.stop()
            shutil.rmtree(tmp_path / "cluster", ignore_errors=True)


def _traces(jaeger: JaegerServer, service: str) -> list[Trace]:
    return [Trace(t) for t in jaeger.traces(service, limit=500)]


def _assert_rpc_conventions(span: Span, service: str, method: str) -> None:
    assert span.tags.get("rpc.system") == "grpc", span
    assert span.tags.get("rpc.service") == service, span
    assert span.tags.get("rpc.method") == method, span
    assert span.tags.get("rpc.grpc.status_code") == 0, span
    assert span.tags.get("otel.status_code") != "ERROR" and not span.tags.get("error"), span


def _assert_whole(trace: Trace) -> None:
    assert not trace.orphans(), [(s.service, s.name) for s in trace.orphans()]
    assert len(trace.roots()) == 1, [(s.service, s.name) for s in trace.roots()]
    assert not trace.warnings, trace.warnings
    for s in trace.spans:
        if "rpc.system" in s.tags:
            _assert_rpc_conventions(s, s.tags["rpc.service"], s.tags["rpc.method"])


def _broker_chain(trace: Trace, served: Span) -> tuple[Span, Span]:
    """(controller client span, per-broker batch span) above a broker's server span."""
    client = trace.by_id[served.parent_id]
    assert client.service == CONTROLLER and client.kind == "client"
    assert client.tags["rpc.method"] == served.tags["rpc.method"]
    batch = trace.by_id[client.parent_id]
    assert batch.service == CONTROLLER and "leasehold.broker_id" in batch.tags, batch
    return client, batch


def _create_topics_trace(jaeger: JaegerServer, brokers: int):
    async def probe():
        for trace in _traces(jaeger, ADMIN):
            calls = [s for s in trace.spans if s.rpc("CreateTopics", "server")]
            served = [s for s in trace.spans if s.rpc("LeaderAndIsr", "server")]
            # Services export on their own schedules: complete once every broker's span and
            # every parent it names have arrived.
            if calls and len(served) >= brokers and not trace.orphans():
                return trace
        return None

    return probe


def _failover_trace(jaeger: JaegerServer, epoch: int, brokers: int):
    async def probe():
        for trace in _traces(jaeger, CONTROLLER):
            batches = trace.where(**{"leasehold.controller_epoch": epoch})
            told = {
                s.tags["leasehold.broker_id"] for s in batches if "leasehold.broker_id" in s.tags
            }
            served = [
                s
                for s in trace.spans
                if s.service == BROKER
                and s.kind == "server"
                and s.tags.get("rpc.method") in CONTROL_METHODS
            ]
            if len(told) >= brokers and len(served) >= brokers and not trace.orphans():
                return trace
        return None

    return probe


async def test_operator_actions_are_whole_traces_in_jaeger(traced):
    cluster, jaeger = traced
    async with AdminClient(cluster.admin_address) as admin:

        async def ready():
            described = await admin.describe_cluster()
            return len(described.brokers) == 3 and described.active_controller.epoch > 0

        await until(ready, timeout=30, what="three brokers and an active controller")
        first = (await admin.describe_cluster()).active_controller
        result = await admin.create_topic("traced", 3, 3, timeout_ms=20_000)
        assert result.error_code == 0, result.error_message

        producer = Producer(admin=cluster.admin_address, acks="all")
        try:
            for i in range(6):
                await producer.send_and_wait("traced", f"r{i}".encode(), partition=i % 3)
        finally:
            await producer.close()

        # A SIGKILLed process cannot export the spans still in its batch: the creation's trace
        # is complete in Jaeger before its controller is killed.
        create_trace = await until(
            _create_topics_trace(jaeger, 3), timeout=30, what="the CreateTopics trace"
        )

        # Failover: the active controller goes; the other takes office with the next epoch.
        cluster.controllers[first.controller_id].kill()

        async def failed_over():
            now = (await admin.describe_cluster()).active_controller
            return (
                now
                if now.epoch > first.epoch and now.controller_id != first.controller_id
                else None
            )

        second = await until(failed_over, timeout=30, what="the other controller in office")

    # --- CreateTopics: one trace from the admin call to every broker's handling ---------------
    trace = create_trace
    _assert_whole(trace)
    (call,) = [s for s in trace.spans if s.rpc("CreateTopics", "server")]
    assert call.service == ADMIN and trace.roots() == [call]
    _assert_rpc_conventions(call, ADMIN_SERVICE, "CreateTopics")
    # The controller's handling of the topic key is a child of the admin call: the context
    # travelled inside the TopicAssignment written to etcd (the intent), not over gRPC.
    events = [s for s in trace.children(call) if s.service == CONTROLLER]
    assert len(events) == 1, [(s.service, s.name) for s in trace.children(call)]
    (event,) = events
    assert event.tags["leasehold.event"] == "TopicChange"
    assert event.tags["leasehold.intent_count"] == 1
    served = [s for s in trace.spans if s.rpc("LeaderAndIsr", "server")]
    assert {s.service for s in served} == {BROKER}
    told = set()
    for s in served:
        _assert_rpc_conventions(s, CONTROL_SERVICE, "LeaderAndIsr")
        client, batch = _broker_chain(trace, s)
        _assert_rpc_conventions(client, CONTROL_SERVICE, "LeaderAndIsr")
        assert trace.depth(batch) > trace.depth(event)  # the batch is inside the event
        told.add(batch.tags["leasehold.broker_id"])
        assert trace.children(s), "the broker's role change is traced under its handling"
    assert told == {1, 2, 3}

    # --- Produce: the brokers' server spans -----------------------------------------------
    produced = [s for t in _traces(jaeger, BROKER) for s in t.spans if s.rpc("Produce", "server")]
    assert len(produced) >= 6
    for s in produced:
        _assert_rpc_conventions(s, BROKER_SERVICE, "Produce")

    # --- Failover: one trace reaching every broker ----------------------------------------
    failover = await until(
        _failover_trace(jaeger, second.epoch, 3), timeout=30, what="the failover trace"
    )
    _assert_whole(failover)
    for s in failover.spans:
        if s.service == BROKER and s.kind == "server":
            _, batch = _broker_chain(failover, s)
            assert batch.tags["leasehold.controller_epoch"] == second.epoch

    # --- Never traced: health checks and etcd calls ---------------------------------------
    services = jaeger.services()
    assert {ADMIN, CONTROLLER, BROKER} <= set(services), services
    for service in (ADMIN, CONTROLLER, BROKER):
        operations = jaeger.operations(service)
        assert not [o for o in operations if "grpc.health" in o or "etcdserverpb" in o], operations

    for name, t in (("create-topics", trace), ("controller-failover", failover)):
        picture = screenshot(t, jaeger.ui_url, name)
        if picture is not None:
            print(f"screenshot of the {name} trace: {picture}")


def test_jaeger_listens_on_loopback_only(tmp_path):
    if not _have_jaeger():
        pytest.skip("no Jaeger binary: run `make jaeger`")
    with JaegerServer(tmp_path / "jaeger") as jaeger:
        pid = str(jaeger._proc.pid)
        listening = [
            line.split()[3]
            for line in subprocess.run(
                ["ss", "-Hltnp"], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            if f"pid={pid}," in line
        ]
    assert listening and all(a.startswith("127.0.0.1:") for a in listening), listening
