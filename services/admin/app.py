"""The admin service process: an etcd connection, the domain, the servicer, the gRPC server.

The admin service is stateless: every request reads etcd, so any number of replicas can run side
by side and none needs to be elected. Its metrics are Kafka's per-request ones
(``leasehold_admin_requests_total`` and ``leasehold_admin_request_total_time_ms``, per RPC) on
``--metrics-port``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from leasehold import metrics, telemetry
from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.etcd.client import EtcdClient
from leasehold.etcd.keys import Keyspace
from leasehold.request_bounds import RequestBoundsInterceptor
from leasehold.server import Service, ServiceRunner, run_until_signalled
from services.admin.bounds import counters
from services.admin.config import AdminConfig
from services.admin.domain import AdminDomain, build_domain
from services.admin.servicer import AdminServicer
from services.admin.store import AdminStore

log = logging.getLogger(__name__)

SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name


class AdminApp:
    """Owns the etcd client for the server's lifetime; ``service()`` plugs into ServiceRunner."""

    def __init__(
        self, config: AdminConfig, rng: Callable[[], random.Random] = random.Random
    ) -> None:
        self.config = config
        self.etcd = EtcdClient(config.common.etcd_endpoints, tls=config.common.etcd_tls)
        self.keyspace = Keyspace(config.common.cluster_id)
        self.store = AdminStore(self.etcd, self.keyspace)
        self.domain: AdminDomain = build_domain(self.store, config.limits, rng)
        self.servicer = AdminServicer(self.domain)
        self.registry = CollectorRegistry()
        self.request_metrics = metrics.RequestMetrics(self.registry, "admin")

    async def _start(self) -> None:
        await self.etcd.connect()
        common = self.config.common
        metrics.serve(self.registry, common.host, common.metrics_port)
        log.info(
            "admin service ready",
            extra={"cluster_id": self.keyspace.cluster_id, "etcd": list(self.etcd_endpoints)},
        )

    @property
    def etcd_endpoints(self) -> tuple[str, ...]:
        return self.config.common.etcd_endpoints

    async def _stop(self) -> None:
        await self.etcd.close()

    def service(self) -> Service:
        return Service(
            names=[SERVICE_NAME],
            register=lambda server: admin_pb2_grpc.add_AdminServiceServicer_to_server(
                self.servicer, server
            ),
            on_start=self._start,
            on_stop=self._stop,
            interceptors=[
                self.request_metrics,
                RequestBoundsInterceptor(counters(self.config.limits)),
            ],
        )

    def runner(self) -> ServiceRunner:
        return ServiceRunner(self.config.common, self.service())


async def serve(config: AdminConfig) -> None:
    """Run until SIGTERM/SIGINT."""
    telemetry.setup_tracing("leasehold-admin")
    app = AdminApp(config)
    try:
        await run_until_signalled(app.runner())
    finally:
        telemetry.shutdown()
