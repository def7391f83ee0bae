"""Configuration from flags and environment into frozen objects.

Every setting has a flag (``--etcd``) and an environment variable (``LEASEHOLD_ETCD``); the flag
wins. Services define their own frozen dataclass and build it from ``parse(...)`` once at start.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from leasehold.etcd.client import TlsFiles


def env(name: str, default: str = "") -> str:
    return os.environ.get(f"LEASEHOLD_{name}", default)


@dataclass(frozen=True)
class TlsConfig:
    """Certificate files for this service's server and its client calls.

    Plaintext is used only when ``cert`` is empty; the service logs a warning then.
    """

    cert: str = ""
    key: str = ""
    ca: str = ""
    client_auth: bool = True

    @property
    def enabled(self) -> bool:
        return bool(self.cert)


@dataclass(frozen=True)
class CommonConfig:
    etcd_endpoints: tuple[str, ...] = ("127.0.0.1:2379",)
    cluster_id: str = "leasehold"
    host: str = "127.0.0.1"
    port: int = 0
    advertised_host: str = ""
    metrics_port: int = 0
    # A plaintext port serving only grpc.health.v1.Health, for kubelet gRPC probes under TLS.
    health_port: int = 0
    log_level: str = "info"
    tls: TlsConfig = field(default_factory=TlsConfig)
    etcd_tls: TlsFiles | None = None
    grace_seconds: float = 5.0

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host


def add_common_arguments(parser: argparse.ArgumentParser, default_port: int) -> None:
    a = parser.add_argument
    a("--etcd", default=env("ETCD", "127.0.0.1:2379"), help="etcd endpoints, comma separated")
    a("--cluster-id", default=env("CLUSTER_ID", "leasehold"))
    a("--host", default=env("HOST", "127.0.0.1"), help="address to listen on")
    a("--port", type=int, default=int(env("PORT", str(default_port))))
    a("--advertised-host", default=env("ADVERTISED_HOST", ""), help="address peers use")
    a("--metrics-port", type=int, default=int(env("METRICS_PORT", "0")), help="0 disables")
    a("--health-port", type=int, default=int(env("HEALTH_PORT", "0")), help="0 disables")
    a("--log-level", default=env("LOG_LEVEL", "info"))
    a("--tls-cert", default=env("TLS_CERT", ""))
    a("--tls-key", default=env("TLS_KEY", ""))
    a("--tls-ca", default=env("TLS_CA", ""))
    a("--etcd-ca", default=env("ETCD_CA", ""))
    a("--etcd-cert", default=env("ETCD_CERT", ""))
    a("--etcd-key", default=env("ETCD_KEY", ""))
    a("--grace-seconds", type=float, default=float(env("GRACE_SECONDS", "5")))


def common_from_args(ns: argparse.Namespace) -> CommonConfig:
    return CommonConfig(
        etcd_endpoints=tuple(e.strip() for e in ns.etcd.split(",") if e.strip()),
        cluster_id=ns.cluster_id,
        host=ns.host,
        port=ns.port,
        advertised_host=ns.advertised_host,
        metrics_port=ns.metrics_port,
        health_port=ns.health_port,
        log_level=ns.log_level,
        tls=TlsConfig(cert=ns.tls_cert, key=ns.tls_key, ca=ns.tls_ca),
        etcd_tls=TlsFiles(ns.etcd_ca, ns.etcd_cert, ns.etcd_key) if ns.etcd_ca else None,
        grace_seconds=ns.grace_seconds,
    )


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    return parser.parse_args(argv)
