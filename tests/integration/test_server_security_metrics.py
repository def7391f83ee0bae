"""The shared server under mutual TLS: peer roles, per-request metrics, self-reported health.

A real ``ServiceRunner`` serves ControllerService with certificates from a throw-away CA. Only a
broker identity may call it; every call, allowed or refused, is counted by method and status in
``leasehold_<service>_requests_total`` and timed in ``..._request_total_time_ms``. A name the
service reports itself starts NOT_SERVING while ``""`` is SERVING.
"""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from leasehold.channels import channel
from leasehold.config import CommonConfig
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.errors import InvalidRequestError
from leasehold.metrics import RequestMetrics
from leasehold.server import Service, ServiceRunner
from leasehold.testing.certs import CertificateAuthority
from leasehold.testing.wait import until

SERVICE = "leasehold.controller.v1.ControllerService"


class _Servicer(controller_pb2_grpc.ControllerServiceServicer):
    async def ControlledShutdown(self, request, context):
        if request.broker_epoch < 0:
            raise InvalidRequestError(42, "negative broker epoch")
        return controller_pb2.ControlledShutdownResponse()


@pytest.fixture
async def served(tmp_path):
    ca = CertificateAuthority(tmp_path / "ca")
    registry = CollectorRegistry()
    service = Service(
        names=[SERVICE],
        register=lambda s: controller_pb2_grpc.add_ControllerServiceServicer_to_server(
            _Servicer(), s
        ),
        interceptors=[RequestMetrics(registry, "test")],
        self_reported=[SERVICE],
    )
    server_certs = ca.issue_role("controller", 1)
    runner = ServiceRunner(
        CommonConfig(host="127.0.0.1", port=0, tls=server_certs.tls(), grace_seconds=0.2), service
    )
    await runner.start()
    yield runner, ca, registry
    await runner.stop()


def _count(registry: CollectorRegistry, code: str) -> float:
    labels = {"request": "ControlledShutdown", "code": code}
    return registry.get_sample_value("leasehold_test_requests_total", labels) or 0.0


async def _call(
    runner: ServiceRunner, ca: CertificateAuthority, role: str, broker_id: int, epoch: int = 0
):
    async with channel(f"127.0.0.1:{runner.port}", ca.issue_role(role, 5).tls()) as ch:
        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        request = controller_pb2.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=epoch)
        return await stub.ControlledShutdown(request, timeout=5)


@pytest.mark.parametrize(
    ("role", "broker_id", "epoch", "code"),
    [
        ("broker", 5, 0, "OK"),  # the certificate is broker 5's (``_call``)
        ("broker", 5, -1, "INVALID_ARGUMENT"),  # refused by the servicer
        ("broker", 1, 0, "PERMISSION_DENIED"),  # speaking for another broker
        ("broker", -1, 0, "PERMISSION_DENIED"),
        ("controller", 1, 0, "PERMISSION_DENIED"),
        ("admin", 1, 0, "PERMISSION_DENIED"),
        ("client", 1, 0, "PERMISSION_DENIED"),
    ],
)
async def test_roles_are_checked_and_every_call_is_counted(served, role, broker_id, epoch, code):
    runner, ca, registry = served
    if code == "OK":
        answer = await _call(runner, ca, role, broker_id, epoch)
        assert answer == controller_pb2.ControlledShutdownResponse()
    else:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _call(runner, ca, role, broker_id, epoch)
        assert err.value.code().name == code

    # The server counts a call once its handler has finished, which may be after the client
    # has the answer (both run on this event loop).
    async def counted():
        return _count(registry, code) == 1

    await until(counted, timeout=5, what=f"one {code} call counted")
    assert sum(_count(registry, c) for c in ("OK", "INVALID_ARGUMENT", "PERMISSION_DENIED")) == 1
    timed = registry.get_sample_value(
        "leasehold_test_request_total_time_ms_count", {"request": "ControlledShutdown"}
    )
    assert timed == 1


async def test_self_reported_names_start_not_serving(served):
    runner, ca, _ = served
    async with channel(f"127.0.0.1:{runner.port}", ca.issue_role("client").tls()) as ch:
        health = health_pb2_grpc.HealthStub(ch)

        async def status(name: str) -> int:
            return (await health.Check(health_pb2.HealthCheckRequest(service=name))).status

        assert await status("") == health_pb2.HealthCheckResponse.SERVING
        assert await status(SERVICE) == health_pb2.HealthCheckResponse.NOT_SERVING
        await runner.set_serving(True, names=[SERVICE])
        assert await status(SERVICE) == health_pb2.HealthCheckResponse.SERVING
