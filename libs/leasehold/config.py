"""Configuration from flags and environment into frozen objects.

Every setting has a flag (``--etcd``) and an environment variable (``LEASEHOLD_ETCD``); the flag
wins. Services define their own frozen dataclass and build it from ``parse(...)`` once at start.

A service process serves mutual TLS: it needs ``--tls-cert``, ``--tls-key`` and ``--tls-ca``
(readable files), or an explicit ``--insecure`` to serve plaintext; anything in between (a
certificate without its key, a CA without a certificate, ``--insecure`` beside certificates, a
missing file) stops it at start with one line saying what is wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
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
    # The largest request message the gRPC server accepts (bytes); each service sets its own
    # default (admin requests are small, a broker's control and produce requests are not).
    max_receive_bytes: int = 64 * 1024 * 1024

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host


def add_common_arguments(
    parser: argparse.ArgumentParser, default_port: int, max_receive_bytes: int = 64 * 1024 * 1024
) -> None:
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
    a(
        "--insecure",
        action="store_true",
        default=env("INSECURE", "").lower() in ("1", "true", "yes", "on"),
        help="serve plaintext gRPC without peer authentication (logged as a warning)",
    )
    a("--etcd-ca", default=env("ETCD_CA", ""))
    a("--etcd-cert", default=env("ETCD_CERT", ""))
    a("--etcd-key", default=env("ETCD_KEY", ""))
    a("--grace-seconds", type=float, default=float(env("GRACE_SECONDS", "5")))
    a(
        "--max-receive-bytes",
        type=int,
        default=int(env("MAX_RECEIVE_BYTES", str(max_receive_bytes))),
        help="largest request accepted; a larger one is RESOURCE_EXHAUSTED before decoding",
    )


class TlsSettingsError(ValueError):
    """TLS flags that cannot be used as given (one line, for the operator)."""


def check_tls_files(cert: str, key: str, ca: str, *, flag: str = "--tls") -> TlsConfig:
    """A mutual-TLS identity from three file names, or a one-line error saying what is wrong."""
    named = {f"{flag}-cert": cert, f"{flag}-key": key, f"{flag}-ca": ca}
    missing = [name for name, path in named.items() if not path]
    if missing:
        raise TlsSettingsError(f"mutual TLS needs {', '.join(missing)} as well")
    for name, path in named.items():
        if not os.path.isfile(path):
            raise TlsSettingsError(f"{name}: no such file: {path}")
        if not os.access(path, os.R_OK):
            raise TlsSettingsError(f"{name}: cannot read {path}")
    return TlsConfig(cert=cert, key=key, ca=ca)


def tls_from_args(ns: argparse.Namespace) -> TlsConfig:
    """The service's TLS identity; an empty TlsConfig (plaintext) only with ``--insecure``."""
    given = ns.tls_cert or ns.tls_key or ns.tls_ca
    if ns.insecure:
        if given:
            raise TlsSettingsError(
                "--insecure cannot be combined with --tls-cert/--tls-key/--tls-ca"
            )
        return TlsConfig()
    if not given:
        raise TlsSettingsError(
            "TLS is required: give --tls-cert, --tls-key and --tls-ca (or LEASEHOLD_TLS_CERT, "
            "_KEY, _CA), or --insecure to serve plaintext"
        )
    return check_tls_files(ns.tls_cert, ns.tls_key, ns.tls_ca)


def common_from_args(ns: argparse.Namespace) -> CommonConfig:
    """The shared settings; exits with a one-line message when the TLS flags cannot work."""
    try:
        tls = tls_from_args(ns)
    except TlsSettingsError as exc:
        print(f"{os.path.basename(sys.argv[0]) or 'leasehold'}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return CommonConfig(
        etcd_endpoints=tuple(e.strip() for e in ns.etcd.split(",") if e.strip()),
        cluster_id=ns.cluster_id,
        host=ns.host,
        port=ns.port,
        advertised_host=ns.advertised_host,
        metrics_port=ns.metrics_port,
        health_port=ns.health_port,
        log_level=ns.log_level,
        tls=tls,
        etcd_tls=TlsFiles(ns.etcd_ca, ns.etcd_cert, ns.etcd_key) if ns.etcd_ca else None,
        grace_seconds=ns.grace_seconds,
        max_receive_bytes=max(1024, ns.max_receive_bytes),
    )


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    return parser.parse_args(argv)
