"""Client channels to Leasehold services, plaintext or TLS (mutual when a cert is configured),
and ``give_calls_a_turn`` for long computations on an event loop that also drives gRPC calls."""

from __future__ import annotations

import asyncio
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


# How long ``give_calls_a_turn`` lets the event loop run other tasks.
CALLS_TURN_S = 0.001


async def give_calls_a_turn() -> None:
    """Pause a long computation on the event loop so that gRPC calls waiting on it progress.

    A call's answer takes several loop iterations to turn into the next request on the wire:
    gRPC's completion callback resolves the call, the awaiting task wakes up and issues its
    next call, which is serialised when that call's task first runs. ``asyncio.sleep(0)``
    gives them one iteration, so a computation yielding that way between slices moves each
    waiting sender one step per slice. A short timed sleep lets the loop run iterations until
    nothing is ready (then it waits at most ``CALLS_TURN_S``), so every sender whose answer
    has arrived takes it and sends what is queued behind it.
    """
    await asyncio.sleep(CALLS_TURN_S)


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def channel(target: str, tls: TlsConfig | None = None, server_name: str = "") -> grpc.aio.Channel:
    """An aio channel to ``target``; TLS when ``tls.ca`` is set, presenting ``tls.cert`` if any,
    and checking the server's certificate against ``server_name`` when given (a pod dialled by
    its IP whose certificate names its Service)."""
    interceptors = telemetry.client_interceptors(target)
    if tls is None or not tls.ca:
        return grpc.aio.insecure_channel(
            target, options=list(CHANNEL_OPTIONS), interceptors=interceptors
        )
    creds = grpc.ssl_channel_credentials(_read(tls.ca), _read(tls.key), _read(tls.cert))
    options = list(CHANNEL_OPTIONS)
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    return grpc.aio.secure_channel(target, creds, options=options, interceptors=interceptors)
