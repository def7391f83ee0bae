"""Container health check for docker and compose: ask the service's grpc.health.v1 endpoint.

Kubernetes does not use this (it has native gRPC probes); Docker's HEALTHCHECK has no gRPC probe,
and the image ships no grpc_health_probe binary, so this script uses the grpcio already in the
image. It reads the same environment the service reads:

- ``LEASEHOLD_HEALTH_PORT`` set and non-zero: the plaintext health-only port (preferred: it works
  the same with and without TLS on the service port);
- otherwise ``LEASEHOLD_PORT`` (the service port), over mutual TLS when ``LEASEHOLD_TLS_CERT`` is
  set, presenting the container's own certificate and checking the server name
  ``LEASEHOLD_ADVERTISED_HOST`` (or ``localhost``);
- neither set: unhealthy, with a message (the services' default ports differ, so guessing one
  would report the wrong container healthy or sick).

Usage: ``python healthcheck.py [SERVICE_NAME]``; the empty name (default) is the whole server.
Exit status 0 when SERVING, 1 otherwise (Docker's convention for unhealthy).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class ProbeTarget:
    """Where and how to ask for health."""

    address: str
    tls: bool = False
    server_name: str = ""
    ca: str = ""
    cert: str = ""
    key: str = ""


def probe_target(environ: Mapping[str, str]) -> ProbeTarget | None:
    """Decide the address and transport from the service's own environment (None: no port)."""
    health_port = environ.get("LEASEHOLD_HEALTH_PORT", "").strip()
    if health_port and health_port != "0":
        return ProbeTarget(address=f"127.0.0.1:{health_port}")
    port = environ.get("LEASEHOLD_PORT", "").strip()
    if not port or port == "0":
        return None
    address = f"127.0.0.1:{port}"
    cert = environ.get("LEASEHOLD_TLS_CERT", "")
    if not cert:
        return ProbeTarget(address=address)
    return ProbeTarget(
        address=address,
        tls=True,
        server_name=environ.get("LEASEHOLD_ADVERTISED_HOST", "") or "localhost",
        ca=environ.get("LEASEHOLD_TLS_CA", ""),
        cert=cert,
        key=environ.get("LEASEHOLD_TLS_KEY", ""),
    )


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def is_serving(target: ProbeTarget, service: str = "", timeout: float = TIMEOUT_SECONDS) -> bool:
    """One Health.Check call; any error (refused, timeout, NOT_FOUND) counts as not serving."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    if target.tls:
        key, cert = _read(target.key), _read(target.cert)
        creds = grpc.ssl_channel_credentials(_read(target.ca), key, cert)
        options = [("grpc.ssl_target_name_override", target.server_name)]
        channel = grpc.secure_channel(target.address, creds, options=options)
    else:
        channel = grpc.insecure_channel(target.address)
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
    except grpc.RpcError:
        return False
    finally:
        channel.close()
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    import os

    args = list(sys.argv[1:] if argv is None else argv)
    service = args[0] if args else ""
    target = probe_target(os.environ if environ is None else environ)
    if target is None:
        print("healthcheck: set LEASEHOLD_HEALTH_PORT or LEASEHOLD_PORT", file=sys.stderr)
        return 1
    return 0 if is_serving(target, service) else 1


if __name__ == "__main__":
    sys.exit(main())
