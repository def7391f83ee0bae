"""The one place where domain errors become gRPC status codes.

Servicers raise :class:`leasehold.errors.LeaseholdError` subclasses (or anything with a
``grpc_status`` attribute naming a ``grpc.StatusCode``); this interceptor turns them into a status
with the error's message and the rich details of :mod:`leasehold.error_model` (ErrorInfo with the
ErrorCode as reason; BadRequest when the error names a request field) in the
``grpc-status-details-bin`` trailer. Anything else is a bug: it is logged with its traceback and
answered INTERNAL (reason UNKNOWN_SERVER_ERROR), so a client never sees a Python traceback.

Before a request of a public service reaches its servicer, enum fields holding a number their
enum does not define are refused with INVALID_ARGUMENT (:mod:`leasehold.enum_check`). The
peer-only services (:data:`leasehold.peer_auth.SERVICE_ROLES`) are not checked: their callers
are our own processes and their requests can name a hundred thousand partitions.

A status message travels in an HTTP/2 header, which most clients cap at 8-16 KiB: a longer one
breaks the call and, in some clients, the channel. Messages quote user input through
:func:`leasehold.validation.quote`; ``bounded`` here is the last guard, cutting any status
message (and the same text in the details) to ``MAX_STATUS_MESSAGE_CHARS``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection

import grpc
from grpc_status import rpc_status

from leasehold import error_model
from leasehold.common.v1 import common_pb2
from leasehold.enum_check import EnumChecker
from leasehold.error_model import FieldViolation
from leasehold.errors import InvalidRequestError

log = logging.getLogger(__name__)

# The longest status message a server sends (characters; UTF-8 may make it up to 4x in bytes).
MAX_STATUS_MESSAGE_CHARS = 1024

Trailer = tuple[tuple[str, bytes], ...]


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


def _service_of(method: str) -> str:
    """``/leasehold.admin.v1.AdminService/CreateTopics`` -> ``leasehold.admin.v1.AdminService``."""
    return method.lstrip("/").partition("/")[0]


def details_trailer(
    code: grpc.StatusCode, message: str, error_code: int, field: str = ""
) -> Trailer:
    """The ``grpc-status-details-bin`` trailer of a failed call."""
    violations = (FieldViolation(field, message),) if field else ()
    status = error_model.encode_status(code.name, message, error_code, violations)
    return tuple(rpc_status.to_status(status).trailing_metadata)


def check_enums(checker: EnumChecker, request) -> None:
    """INVALID_ARGUMENT naming the first enum field that holds an unknown number."""
    for path, value in checker.unknown(request):
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REQUEST,
            f"{path}: {value} is not a value of its enum",
            field=path,
        )


class ErrorInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, unchecked_services: Collection[str] = ()) -> None:
        self._unchecked = frozenset(unchecked_services)
        self._enums = EnumChecker()

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
        enums = None if _service_of(method) in self._unchecked else self._enums

        async def guarded(request, context: grpc.aio.ServicerContext):
            try:
                if enums is not None:
                    check_enums(enums, request)
                return await inner(request, context)
            except grpc.aio.AbortError:
                raise
            except Exception as exc:  # the single broad catch: map or report, never leak
                code, message, trailer = status_for(exc, method)
            # The status is set and the call returns, outside the except block: aborting from
            # inside it chains the error (and the frames holding the request) into a cycle
            # that only the cyclic collector frees, so large refused requests piled up.
            context.set_code(code)
            context.set_details(message)
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


def status_for(exc: Exception, method: str) -> tuple[grpc.StatusCode, str, Trailer]:
    """The status, bounded message and rich-details trailer a failed call answers with (the
    control stream answers a failed request with the first two)."""
    code = status_of(exc)
    if code is None:
        log.exception("unhandled error in %s", method)
        message = f"internal error: {type(exc).__name__}"
        error_code = common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR
        internal = grpc.StatusCode.INTERNAL
        return internal, message, details_trailer(internal, message, error_code)
    kafka_code = getattr(exc, "code", None)
    if not isinstance(kafka_code, int):
        kafka_code = error_model.code_for_status(code.name)
    message = bounded(str(getattr(exc, "message", "") or exc))
    field = getattr(exc, "field", "") or ""
    return code, message, details_trailer(code, message, kafka_code, field)
