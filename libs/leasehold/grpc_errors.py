"""The one place where domain errors become gRPC status codes.

Servicers raise :class:`leasehold.errors.LeaseholdError` subclasses (or anything with a
``grpc_status`` attribute naming a ``grpc.StatusCode``); this interceptor turns them into a status
with the error's message. Anything else is a bug: it is logged with its traceback and answered
INTERNAL, so a client never sees a Python traceback.

A status message travels in an HTTP/2 header, which most clients cap at 8-16 KiB: a longer one
breaks the call and, in some clients, the channel. Messages quote user input through
:func:`leasehold.validation.quote`; ``bounded`` here is the last guard, cutting any status
message to ``MAX_STATUS_MESSAGE_CHARS``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc

log = logging.getLogger(__name__)

# Trailing metadata key carrying the Kafka-style ErrorCode number of a failed call.
ERROR_CODE_METADATA_KEY = "leasehold-error-code"
# The longest status message a server sends (characters; UTF-8 may make it up to 4x in bytes).
MAX_STATUS_MESSAGE_CHARS = 1024


def bounded(message: str, limit: int = MAX_STATUS_MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters, saying how much was cut."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... ({len(message) - limit} more characters cut)"


def status_of(exc: BaseException) -> grpc.StatusCode | None:
    name = getattr(exc, "grpc_status", None)
    if isinstance(name, grpc.StatusCode):
        return name
    if isinstance(name, str):
        return getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)
    return None


class ErrorInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        method = handler_call_details.method

        async def guarded(request, context: grpc.aio.ServicerContext):
            try:
                return await inner(request, context)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:  # the single broad catch: map or report, never leak
                code, message, trailer = _status_for(exc, method)
            # The status is set and the call returns, outside the except block: aborting from
            # inside it chains the error (and the frames holding the request) into a cycle
            # that only the cyclic collector frees, so large refused requests piled up.
            context.set_code(code)
            context.set_details(message)
            if trailer:
                context.set_trailing_metadata(trailer)
            return None

        serialize = handler.response_serializer

        def serializer(response):
            return b"" if response is None else serialize(response)

        return grpc.unary_unary_rpc_method_handler(
            guarded,
            request_deserializer=handler.request_deserializer,
            response_serializer=serializer,
        )


def _status_for(
    exc: Exception, method: str
) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    """The status, bounded message and trailer a failed call answers with."""
    code = status_of(exc)
    if code is None:
        log.exception("unhandled error in %s", method)
        return grpc.StatusCode.INTERNAL, bounded(f"internal error: {exc!r}"), ()
    kafka_code = getattr(exc, "code", None)
    trailer = ((ERROR_CODE_METADATA_KEY, str(kafka_code)),) if isinstance(kafka_code, int) else ()
    return code, bounded(str(getattr(exc, "message", "") or exc)), trailer
