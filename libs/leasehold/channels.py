"""Client channels to Leasehold services, plaintext or TLS (mutual when a cert is configured)."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from leasehold import telemetry
from leasehold.config import TlsConfig

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS: Sequence[tuple[str, int]] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def channel(target: str, tls: TlsConfig | None = None) -> grpc.aio.Channel:
    """An aio channel to ``target``; TLS when ``tls.ca`` is set, presenting ``tls.cert`` if any."""
    interceptors = telemetry.client_interceptors()
    if tls is None or not tls.ca:
        return grpc.aio.insecure_channel(
            target, options=list(CHANNEL_OPTIONS), interceptors=interceptors
        )
    creds = grpc.ssl_channel_credentials(_read(tls.ca), _read(tls.key), _read(tls.cert))
    return grpc.aio.secure_channel(
        target, creds, options=list(CHANNEL_OPTIONS), interceptors=interceptors
    )
