"""The errors group decisions raise: ``leasehold.errors`` values whose gRPC status is the one the
error model's table gives their ErrorCode, so the shared interceptor answers them as a failed
call with ErrorInfo (and BadRequest when a request field is at fault)."""

from __future__ import annotations

from leasehold import error_model
from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import InvalidRequestError, LeaseholdError


def group_error(code: int, message: str) -> LeaseholdError:
    """The exception for ErrorCode ``code`` with the status ``STATUS_BY_CODE`` gives it."""
    return LeaseholdError(code, message, error_model.status_of(code))


def invalid(message: str, field: str = "") -> LeaseholdError:
    return InvalidRequestError(c.ERROR_CODE_INVALID_REQUEST, message, field=field)


# Ids a client chooses (group, member, instance, rack) are kept in memory and in records: bounded.
MAX_ID_LENGTH = 255


def check_id(value: str | None, field: str) -> None:
    if value is not None and len(value) > MAX_ID_LENGTH:
        raise invalid(f"{field} is longer than {MAX_ID_LENGTH} characters.", field)
