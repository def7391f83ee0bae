"""gRPC failures seen by a client, turned back into the LeaseholdError hierarchy.

The server answers a failed call with a status whose rich details (:mod:`leasehold.error_model`)
carry the ErrorCode as ``google.rpc.ErrorInfo.reason`` and the request field at fault as a
``google.rpc.BadRequest`` violation; the SDK reads them back, so callers catch ``NotFoundError``
or ``InvalidRequestError`` and find the exact ``code`` (and ``field``) on it, and the CLI chooses
its exit code from ``grpc_status``. A per-item ErrorCode in a successful response becomes an
exception through the same table (:func:`error_from_code`).
"""

from __future__ import annotations

import grpc
from google.protobuf.message import DecodeError
from google.rpc import status_pb2

from leasehold import error_model
from leasehold.common.v1 import common_pb2
from leasehold.errors import (
    AlreadyExistsError,
    InvalidRequestError,
    LeaseholdError,
    NotFoundError,
    PreconditionError,
    UnavailableError,
)

_BY_STATUS: dict[str, type[LeaseholdError]] = {
    "INVALID_ARGUMENT": InvalidRequestError,
    "OUT_OF_RANGE": InvalidRequestError,
    "NOT_FOUND": NotFoundError,
    "ALREADY_EXISTS": AlreadyExistsError,
    "FAILED_PRECONDITION": PreconditionError,
    "UNAVAILABLE": UnavailableError,
    "DEADLINE_EXCEEDED": UnavailableError,
}


def details_of(error: grpc.RpcError) -> error_model.ErrorDetails:
    """The ErrorCode, reason and field violations a failed call carries.

    The trailer is read as it is (``grpc_status.rpc_status.from_call`` would also refuse one
    whose message differs from the status message, which a proxy may have reworded).
    """
    raw = next(
        (v for k, v in error.trailing_metadata() or () if k == error_model.DETAILS_TRAILER), None
    )
    rich = None
    if isinstance(raw, bytes):
        try:
            rich = status_pb2.Status.FromString(raw)
        except DecodeError:
            rich = None
    return error_model.decode_status(rich, error.code().name)


def error_from_rpc(error: grpc.aio.AioRpcError, target: str = "") -> LeaseholdError:
    """The LeaseholdError for a failed call (its ``grpc_status`` is the call's status name)."""
    code = error.code()
    details = details_of(error)
    cls = _BY_STATUS.get(code.name, LeaseholdError)
    message = error.details() or code.name
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and target:
        message = f"{target}: {message}"
    field = details.violations[0].field if details.violations else ""
    return cls(details.code, message, code.name, field=field)


def error_from_code(code: int, message: str) -> LeaseholdError:
    """A per-item ErrorCode from a response as an exception with the table's gRPC status."""
    status = error_model.status_of(code)
    text = message or error_model.reason_of(code)
    if code == common_pb2.ERROR_CODE_NONE:
        raise ValueError("ERROR_CODE_NONE is not an error")
    return _BY_STATUS.get(status, LeaseholdError)(code, text, status)
