"""gRPC failures seen by a client, turned back into the LeaseholdError hierarchy.

The server maps domain errors to gRPC status codes in one interceptor; the SDK maps them back, so
callers catch ``NotFoundError`` or ``InvalidRequestError`` instead of inspecting status codes, and
the CLI chooses its exit code from ``grpc_status``. The status carries the server's message; the
Kafka error code is the closest one for the status (the exact code is not on the wire).
"""

from __future__ import annotations

import grpc

from leasehold.common.v1 import common_pb2
from leasehold.errors import (
    AlreadyExistsError,
    InvalidRequestError,
    LeaseholdError,
    NotFoundError,
    PreconditionError,
    UnavailableError,
)

_BY_STATUS: dict[grpc.StatusCode, tuple[type[LeaseholdError], int]] = {
    grpc.StatusCode.INVALID_ARGUMENT: (InvalidRequestError, common_pb2.ERROR_CODE_INVALID_REQUEST),
    grpc.StatusCode.NOT_FOUND: (NotFoundError, common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION),
    grpc.StatusCode.ALREADY_EXISTS: (
        AlreadyExistsError,
        common_pb2.ERROR_CODE_TOPIC_ALREADY_EXISTS,
    ),
    grpc.StatusCode.FAILED_PRECONDITION: (
        PreconditionError,
        common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
    ),
    grpc.StatusCode.UNAVAILABLE: (UnavailableError, common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE),
    grpc.StatusCode.DEADLINE_EXCEEDED: (UnavailableError, common_pb2.ERROR_CODE_REQUEST_TIMED_OUT),
}


def error_from_rpc(error: grpc.aio.AioRpcError, target: str = "") -> LeaseholdError:
    """The LeaseholdError for a failed call (its ``grpc_status`` is the call's status name)."""
    code = error.code()
    cls, kafka_code = _BY_STATUS.get(
        code, (LeaseholdError, common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR)
    )
    message = error.details() or code.name
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and target:
        message = f"{target}: {message}"
    return cls(kafka_code, message, code.name)


def error_from_code(code: int, message: str) -> LeaseholdError:
    """A per-item ErrorCode from a response as an exception with a fitting gRPC status."""
    retriable = {
        common_pb2.ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
        common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
        common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
        common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS,
        common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE,
    }
    name = common_pb2.ErrorCode.Name(code) if code in common_pb2.ErrorCode.values() else str(code)
    text = message or name.removeprefix("ERROR_CODE_")
    if code == common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION:
        return NotFoundError(code, text)
    if code == common_pb2.ERROR_CODE_TOPIC_ALREADY_EXISTS:
        return AlreadyExistsError(code, text)
    if code in retriable:
        return UnavailableError(code, text)
    return LeaseholdError(code, text, "FAILED_PRECONDITION")
