"""The controller's readiness: its service name is SERVING only on the active controller.

Kubernetes sends traffic for the ``controller`` Service only to Ready pods, and readiness asks
for ``leasehold.controller.v1.ControllerService``; liveness asks for ``""``. Two controllers run
with the same runner ``__main__`` uses (``ControllerApp.runner``): the active one reports its
service SERVING, the standby NOT_SERVING, both stay live, and the roles swap on resignation.
"""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from leasehold.config import CommonConfig
from leasehold.server import ServiceRunner
from leasehold.testing.wait import until
from services.controller.app import ControllerApp
from services.controller.config import ControllerConfig
from services.controller.servicer import SERVICE_NAME

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def _status(runner: ServiceRunner, name: str) -> int:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{runner.port}") as ch:
        resp = await health_pb2_grpc.HealthStub(ch).Check(
            health_pb2.HealthCheckRequest(service=name), timeout=5
        )
        return resp.status


async def _statuses(runner: ServiceRunner) -> tuple[int, int]:
    return await _status(runner, ""), await _status(runner, SERVICE_NAME)


def _app(endpoint: str, cluster_id: str, controller_id: int) -> ControllerApp:
    common = CommonConfig(
        etcd_endpoints=(endpoint,), cluster_id=cluster_id, port=0, grace_seconds=0.2
    )
    return ControllerApp(
        ControllerConfig(
            common=common,
            controller_id=controller_id,
            session_ttl=2,
            rebalance_initial_delay_s=3600.0,
        )
    )


async def test_only_the_active_controller_reports_its_service_serving(etcd_endpoint, keyspace):
    first = _app(etcd_endpoint, keyspace.cluster_id, 1)
    second = _app(etcd_endpoint, keyspace.cluster_id, 2)
    runners = [first.runner(), second.runner()]
    try:
        await runners[0].start()

        async def first_active():
            return first.controller.active and await _statuses(runners[0]) == (SERVING, SERVING)

        await until(first_active, timeout=15, what="controller 1 active and ready")
        await runners[1].start()
        assert not second.controller.active
        assert await _statuses(runners[1]) == (SERVING, NOT_SERVING)

        await runners[0].stop()  # resigns: the standby takes over at once

        async def second_active():
            return second.controller.active and await _statuses(runners[1]) == (SERVING, SERVING)

        await until(second_active, timeout=15, what="controller 2 active and ready")
    finally:
        for r in runners:
            if r.server is not None:  # started and not yet stopped
                await r.stop()
