"""The gRPC aio server bootstrap every Leasehold service uses.

It adds the standard health service (one status per service name), server reflection (v1 and
v1alpha), the error interceptor, TLS when configured (and with it the peer-role check of
:mod:`leasehold.peer_auth`: only controllers may call BrokerControlService, only brokers
ControllerService), and graceful shutdown: on SIGTERM or SIGINT every health status turns
NOT_SERVING, the service's own ``on_stop`` runs (e.g. a broker's controlled shutdown), and the
server stops with a grace period for calls in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from leasehold import peer_auth, reflection, telemetry
from leasehold.config import CommonConfig, TlsConfig
from leasehold.grpc_errors import ErrorInterceptor

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.so_reuseport", 0),
]


def server_options(max_receive_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    """SERVER_OPTIONS with the service's largest accepted request (gRPC refuses a larger one
    with RESOURCE_EXHAUSTED before decoding it)."""
    return [
        ("grpc.max_receive_message_length", max_receive_bytes),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
    ]


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials(
        [(_read(tls.key), _read(tls.cert))],
        root_certificates=_read(tls.ca),
        require_client_auth=bool(tls.ca) and tls.client_auth,
    )


@dataclass
class Service:
    """What a service contributes: servicers to register and lifecycle hooks."""

    names: Sequence[str]  # full service names for health and reflection
    register: Callable[[grpc.aio.Server], None]
    on_start: Callable[[], Awaitable[None]] | None = None
    on_stop: Callable[[], Awaitable[None]] | None = None
    interceptors: Sequence[grpc.aio.ServerInterceptor] = field(default_factory=tuple)
    # Names whose health the service reports itself with ``ServiceRunner.set_serving`` (e.g. the
    # controller service, SERVING only on the active controller); they start NOT_SERVING.
    self_reported: Sequence[str] = field(default_factory=tuple)


class ServiceRunner:
    """Builds, starts and stops one gRPC server for a service."""

    def __init__(self, config: CommonConfig, service: Service) -> None:
        self.config = config
        self.service = service
        self.health = health.aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.health_server: grpc.aio.Server | None = None
        self.port = 0
        self.health_port = 0
        self._stopping = asyncio.Event()

    async def start(self) -> int:
        tls = self.config.tls.enabled
        interceptors = [
            *telemetry.server_interceptors(),
            *self.service.interceptors,
            *([peer_auth.PeerRoleInterceptor(trust_domain=self.config.cluster_id)] if tls else []),
            ErrorInterceptor(unchecked_services=peer_auth.SERVICE_ROLES),
        ]
        options = server_options(self.config.max_receive_bytes)
        server = grpc.aio.server(interceptors=interceptors, options=options)
        self.service.register(server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        names = [*self.service.names, health.SERVICE_NAME]
        reflection.enable(names, server)
        address = f"{self.config.host}:{self.config.port}"
        if tls:
            self.port = server.add_secure_port(address, server_credentials(self.config.tls))
            log.info(
                "serving mutual TLS (trust domain %s); restricted services: %s",
                self.config.cluster_id,
                peer_auth.roles_summary(),
            )
            if not self.config.tls.ca:
                log.warning(
                    "TLS without --tls-ca: clients are not authenticated, so the role-restricted "
                    "services refuse every call"
                )
        else:
            log.warning(
                "--insecure: serving PLAINTEXT gRPC on %s; callers are not authenticated and "
                "control requests are checked only against etcd",
                address,
            )
            self.port = server.add_insecure_port(address)
        if self.port == 0:
            raise RuntimeError(f"could not bind {address}")
        if self.service.self_reported:
            await self.set_serving(False, names=self.service.self_reported)
        await server.start()
        self.server = server
        if self.config.health_port:
            await self._start_health_server()
        if self.service.on_start is not None:
            await self.service.on_start()
        own = set(self.service.self_reported)
        await self.set_serving(True, names=["", *(n for n in self.service.names if n not in own)])
        log.info("serving", extra={"address": f"{self.config.host}:{self.port}"})
        return self.port

    async def _start_health_server(self) -> None:
        """Health (and reflection of it) only, plaintext: kubelet's gRPC probes cannot present a
        client certificate."""
        hs = grpc.aio.server(options=SERVER_OPTIONS)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, hs)
        reflection.enable([health.SERVICE_NAME], hs)
        self.health_port = hs.add_insecure_port(f"{self.config.host}:{self.config.health_port}")
        await hs.start()
        self.health_server = hs

    async def set_serving(self, serving: bool, names: Sequence[str] | None = None) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in names if names is not None else ["", *self.service.names]:
            await self.health.set(name, status)

    def request_stop(self) -> None:
        self._stopping.set()

    async def wait(self) -> None:
        await self._stopping.wait()

    async def stop(self) -> None:
        await self.set_serving(False)
        if self.service.on_stop is not None:
            try:
                await self.service.on_stop()
            except Exception:
                log.exception("error while stopping")
        if self.server is not None:
            await self.server.stop(self.config.grace_seconds)
            self.server = None
        if self.health_server is not None:
            await self.health_server.stop(0)
            self.health_server = None


async def run_until_signalled(runner: ServiceRunner) -> None:
    """Start, serve until SIGTERM/SIGINT, then stop gracefully."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, runner.request_stop)
    await runner.start()
    try:
        await runner.wait()
    finally:
        await runner.stop()
