"""One operator action is one trace, across admin, controller and brokers (issue 6, DESIGN §8).

The services run as real processes exporting OTLP/gRPC to an in-process receiver. One
CreateTopics must give a single trace in which the controller's handling of the new topic is a
child of the admin call (the context travelled through the TopicAssignment in etcd) and each
broker's LeaderAndIsr server span is a child of the controller's client span for it (the context
travelled in gRPC metadata). Health checks and etcd calls are never traced.
"""

from __future__ import annotations

import shutil

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from otlp_receiver import CLIENT, SERVER, OtlpReceiver, ReceivedSpan

from leasehold.client.admin import AdminClient
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

ADMIN, CONTROLLER, BROKER = "leasehold-admin", "leasehold-controller", "leasehold-broker-agent"
CREATE_TOPICS = "leasehold.admin.v1.AdminService/CreateTopics"
LEADER_AND_ISR = "leasehold.broker.v1.BrokerControlService/LeaderAndIsr"
CONTROLLER_SERVICE = "leasehold.controller.v1.ControllerService"


@pytest.fixture
def traced(tmp_path):
    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
        spec = ClusterSpec(controllers=1, brokers=2, session_ttl=3, extra_env=env)
        cluster = LocalCluster(spec, workdir=str(tmp_path / "cluster"))
        try:
            cluster.start()
            yield cluster, receiver
        finally:
            for proc in cluster.brokers.values():  # no controlled shutdown: the test is over
                proc.kill()
            cluster.stop()
            shutil.rmtree(tmp_path / "cluster", ignore_errors=True)


async def _controller_ready(cluster: LocalCluster) -> bool:
    """The controller's readiness: its service name is SERVING only once it is active."""
    async with grpc.aio.insecure_channel(cluster.controllers[1].address) as ch:
        resp = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=CONTROLLER_SERVICE), timeout=5
        )
    return resp.status == health_pb2.HealthCheckResponse.SERVING


def _one(spans: list[ReceivedSpan], **want: object) -> ReceivedSpan | None:
    found = [s for s in spans if all(getattr(s, k) == v for k, v in want.items())]
    return found[0] if len(found) == 1 else None


def _complete_trace(receiver: OtlpReceiver):
    """The CreateTopics trace once it holds admin, controller and both brokers' spans."""

    async def probe():
        spans = receiver.spans()
        call = _one(spans, service=ADMIN, name=CREATE_TOPICS, kind=SERVER)
        if call is None:
            return None
        trace = [s for s in spans if s.trace_id == call.trace_id]
        broker_calls = [s for s in trace if s.name == LEADER_AND_ISR and s.kind == SERVER]
        if len(broker_calls) < 2 or not any(s.service == CONTROLLER for s in trace):
            return None
        # Services export in batches on their own schedules: wait until every broker span's
        # parent chain (controller client span, then its request-batch span) has arrived too.
        ids = {s.span_id: s for s in trace}
        for served in broker_calls:
            client = ids.get(served.parent_span_id)
            if client is None or client.parent_span_id not in ids:
                return None
        return call, trace

    return probe


async def test_create_topics_is_one_trace_across_admin_controller_and_brokers(traced):
    cluster, receiver = traced
    async with AdminClient(cluster.admin_address) as admin:

        async def ready():
            described = await admin.describe_cluster()
            return len(described.brokers) == 2 and await _controller_ready(cluster)

        # A topic written while the controller is still failing over is created by the
        # failover itself, in the failover's trace: wait until it is ready (active).
        await until(ready, timeout=30, what="two brokers and an active controller")
        result = await admin.create_topic(
            "traced", partitions=2, replication_factor=2, timeout_ms=20_000
        )
        assert result.error_code == 0, result.error_message

    call, trace = await until(_complete_trace(receiver), timeout=20, what="the trace")
    by_id = {s.span_id: s for s in trace}

    # Admin: the call, and its validation as a child.
    validate = _one(trace, service=ADMIN, name="admin.validate")
    assert validate is not None and validate.parent_span_id == call.span_id
    assert validate.attributes["leasehold.operation"] == "CreateTopics"

    # Controller: the event that brought the topic key is a child of the admin call.
    event = _one(trace, service=CONTROLLER, name="controller.event")
    assert event is not None
    assert event.parent_span_id == call.span_id
    assert event.attributes["leasehold.event"] == "TopicChange"
    assert event.attributes["leasehold.active"] is True
    creation = _one(trace, service=CONTROLLER, name="controller.new_partitions")
    assert creation is not None and creation.parent_span_id == event.span_id
    assert creation.attributes["leasehold.partition_count"] == 2
    commits = [s for s in trace if s.name == "controller.commit"]
    assert commits and all(s.attributes["leasehold.txn_count"] >= 1 for s in commits)

    # Brokers: each LeaderAndIsr server span is the child of the controller's client span,
    # itself inside the per-broker request batch span of that event.
    broker_calls = [s for s in trace if s.name == LEADER_AND_ISR and s.kind == SERVER]
    assert {s.service for s in broker_calls} == {BROKER}
    batches = set()
    for served in broker_calls:
        client = by_id[served.parent_span_id]
        assert (client.service, client.name, client.kind) == (CONTROLLER, LEADER_AND_ISR, CLIENT)
        batch = by_id[client.parent_span_id]
        assert batch.name == "controller.broker_requests"
        assert batch.parent_span_id == event.span_id
        batches.add(batch.attributes["leasehold.broker_id"])
        roles = [s for s in trace if s.parent_span_id == served.span_id]
        assert {s.name for s in roles} <= {"broker.become_leader", "broker.become_follower"}
        assert roles, "the broker's role change is traced under the controller's request"
    assert batches == {1, 2}

    # Filtered: no health checks and no etcd calls, in any trace.
    everything = receiver.spans()
    assert not [s.name for s in everything if s.name.lstrip("/").startswith("grpc.health.")]
    assert not [s.name for s in everything if s.name.lstrip("/").startswith("etcdserverpb.")]
