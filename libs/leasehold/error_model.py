"""Leasehold's one error model, shared by every service and every client (protos/README.md).

A call that fails as a whole ends with a gRPC status whose ``grpc-status-details-bin`` trailer
holds a ``google.rpc.Status`` with the same code and message and these details:

- ``google.rpc.ErrorInfo``: ``domain`` is :data:`DOMAIN`; ``reason`` is the name of a
  ``leasehold.common.v1.ErrorCode`` without its ``ERROR_CODE_`` prefix (``NOT_CONTROLLER``,
  ``INVALID_REPLICATION_FACTOR``), stable for as long as the enum value exists;
  ``metadata["error_code"]`` is that value's number as text (Kafka's error code).
- ``google.rpc.BadRequest`` for a request that is wrong as written: one field violation per
  problem, ``field`` a path into the request message (``topics[1].replication_factor``).

Items of a multi-item request that can fail alone (a topic of CreateTopics, a partition of
Produce) are answered in the response instead, with the same ErrorCode in their ``error_code``
field and the call is OK.

:data:`STATUS_BY_CODE` is the one table from ErrorCode to gRPC status: the status a whole call
fails with for that reason (a raiser may pick another one for its case: an unknown broker named
in a request is INVALID_ARGUMENT, not NOT_FOUND), and what a client makes of a per-item code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from leasehold.common.v1 import common_pb2

DOMAIN = "leasehold"
ERROR_CODE_KEY = "error_code"
DETAILS_TRAILER = "grpc-status-details-bin"
_PREFIX = "ERROR_CODE_"

# The numeric codes of grpc.StatusCode / google.rpc.Code, by name (no grpc import here).
STATUS_NUMBERS: Mapping[str, int] = MappingProxyType(
    {
        "OK": 0,
        "CANCELLED": 1,
        "UNKNOWN": 2,
        "INVALID_ARGUMENT": 3,
        "DEADLINE_EXCEEDED": 4,
        "NOT_FOUND": 5,
        "ALREADY_EXISTS": 6,
        "PERMISSION_DENIED": 7,
        "RESOURCE_EXHAUSTED": 8,
        "FAILED_PRECONDITION": 9,
        "ABORTED": 10,
        "OUT_OF_RANGE": 11,
        "UNIMPLEMENTED": 12,
        "INTERNAL": 13,
        "UNAVAILABLE": 14,
        "DATA_LOSS": 15,
        "UNAUTHENTICATED": 16,
    }
)

_C = common_pb2
# ErrorCode -> gRPC status name. UNAVAILABLE means "retry, perhaps elsewhere or after a metadata
# refresh"; FAILED_PRECONDITION "the cluster's state forbids this now"; a stale or unknown epoch
# is FAILED_PRECONDITION (refresh, then decide). Every ErrorCode value has a row (a unit test
# checks it), so a new code cannot be added without deciding its status.
STATUS_BY_CODE: Mapping[int, str] = MappingProxyType(
    {
        _C.ERROR_CODE_NONE: "OK",
        _C.ERROR_CODE_UNKNOWN_SERVER_ERROR: "INTERNAL",
        _C.ERROR_CODE_OFFSET_OUT_OF_RANGE: "OUT_OF_RANGE",
        _C.ERROR_CODE_CORRUPT_MESSAGE: "INVALID_ARGUMENT",
        _C.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION: "NOT_FOUND",
        _C.ERROR_CODE_LEADER_NOT_AVAILABLE: "UNAVAILABLE",
        _C.ERROR_CODE_NOT_LEADER_OR_FOLLOWER: "UNAVAILABLE",
        _C.ERROR_CODE_REQUEST_TIMED_OUT: "DEADLINE_EXCEEDED",
        _C.ERROR_CODE_BROKER_NOT_AVAILABLE: "NOT_FOUND",
        _C.ERROR_CODE_REPLICA_NOT_AVAILABLE: "UNAVAILABLE",
        _C.ERROR_CODE_MESSAGE_TOO_LARGE: "RESOURCE_EXHAUSTED",
        _C.ERROR_CODE_STALE_CONTROLLER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_OFFSET_METADATA_TOO_LARGE: "INVALID_ARGUMENT",
        _C.ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS: "UNAVAILABLE",
        _C.ERROR_CODE_COORDINATOR_NOT_AVAILABLE: "UNAVAILABLE",
        _C.ERROR_CODE_NOT_COORDINATOR: "UNAVAILABLE",
        _C.ERROR_CODE_INVALID_TOPIC_EXCEPTION: "INVALID_ARGUMENT",
        _C.ERROR_CODE_RECORD_LIST_TOO_LARGE: "RESOURCE_EXHAUSTED",
        _C.ERROR_CODE_NOT_ENOUGH_REPLICAS: "UNAVAILABLE",
        _C.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: "UNAVAILABLE",
        _C.ERROR_CODE_INVALID_REQUIRED_ACKS: "INVALID_ARGUMENT",
        _C.ERROR_CODE_ILLEGAL_GENERATION: "FAILED_PRECONDITION",
        _C.ERROR_CODE_INVALID_GROUP_ID: "INVALID_ARGUMENT",
        _C.ERROR_CODE_UNKNOWN_MEMBER_ID: "NOT_FOUND",
        _C.ERROR_CODE_INVALID_TIMESTAMP: "INVALID_ARGUMENT",
        _C.ERROR_CODE_TOPIC_ALREADY_EXISTS: "ALREADY_EXISTS",
        _C.ERROR_CODE_INVALID_PARTITIONS: "INVALID_ARGUMENT",
        _C.ERROR_CODE_INVALID_REPLICATION_FACTOR: "INVALID_ARGUMENT",
        _C.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT: "INVALID_ARGUMENT",
        _C.ERROR_CODE_INVALID_CONFIG: "INVALID_ARGUMENT",
        _C.ERROR_CODE_NOT_CONTROLLER: "UNAVAILABLE",
        _C.ERROR_CODE_INVALID_REQUEST: "INVALID_ARGUMENT",
        _C.ERROR_CODE_POLICY_VIOLATION: "FAILED_PRECONDITION",
        _C.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER: "FAILED_PRECONDITION",
        _C.ERROR_CODE_INVALID_PRODUCER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_UNKNOWN_PRODUCER_ID: "FAILED_PRECONDITION",
        _C.ERROR_CODE_KAFKA_STORAGE_ERROR: "UNAVAILABLE",
        _C.ERROR_CODE_REASSIGNMENT_IN_PROGRESS: "FAILED_PRECONDITION",
        _C.ERROR_CODE_NON_EMPTY_GROUP: "FAILED_PRECONDITION",
        _C.ERROR_CODE_GROUP_ID_NOT_FOUND: "NOT_FOUND",
        _C.ERROR_CODE_FETCH_SESSION_ID_NOT_FOUND: "FAILED_PRECONDITION",
        _C.ERROR_CODE_INVALID_FETCH_SESSION_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_TOPIC_DELETION_DISABLED: "FAILED_PRECONDITION",
        _C.ERROR_CODE_FENCED_LEADER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_UNKNOWN_LEADER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_STALE_BROKER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE: "FAILED_PRECONDITION",
        _C.ERROR_CODE_GROUP_MAX_SIZE_REACHED: "RESOURCE_EXHAUSTED",
        _C.ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE: "FAILED_PRECONDITION",
        _C.ERROR_CODE_ELECTION_NOT_NEEDED: "FAILED_PRECONDITION",
        _C.ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS: "FAILED_PRECONDITION",
        _C.ERROR_CODE_INVALID_RECORD: "INVALID_ARGUMENT",
        _C.ERROR_CODE_INVALID_UPDATE_VERSION: "ABORTED",
        _C.ERROR_CODE_UNKNOWN_TOPIC_ID: "NOT_FOUND",
        _C.ERROR_CODE_INCONSISTENT_TOPIC_ID: "FAILED_PRECONDITION",
        _C.ERROR_CODE_INELIGIBLE_REPLICA: "FAILED_PRECONDITION",
        _C.ERROR_CODE_NEW_LEADER_ELECTED: "FAILED_PRECONDITION",
        _C.ERROR_CODE_FENCED_MEMBER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_UNRELEASED_INSTANCE_ID: "FAILED_PRECONDITION",
        _C.ERROR_CODE_UNSUPPORTED_ASSIGNOR: "INVALID_ARGUMENT",
        _C.ERROR_CODE_STALE_MEMBER_EPOCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS: "FAILED_PRECONDITION",
        _C.ERROR_CODE_BROKER_SHUTTING_DOWN: "UNAVAILABLE",
        _C.ERROR_CODE_METADATA_DIGEST_MISMATCH: "FAILED_PRECONDITION",
        _C.ERROR_CODE_OPERATION_NOT_FOUND: "NOT_FOUND",
    }
)

# The reason a status without an ErrorCode of its own carries (a client reading a status from a
# server outside this model, or from gRPC itself, finds no ErrorInfo at all).
_REASON_BY_STATUS: Mapping[str, int] = MappingProxyType(
    {
        "INVALID_ARGUMENT": _C.ERROR_CODE_INVALID_REQUEST,
        "NOT_FOUND": _C.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
        "DEADLINE_EXCEEDED": _C.ERROR_CODE_REQUEST_TIMED_OUT,
        "UNAVAILABLE": _C.ERROR_CODE_BROKER_NOT_AVAILABLE,
    }
)


def status_of(code: int) -> str:
    """The gRPC status name for ErrorCode ``code`` (INTERNAL for a number the enum lacks)."""
    return STATUS_BY_CODE.get(code, "INTERNAL")


def reason_of(code: int) -> str:
    """``NOT_LEADER_OR_FOLLOWER`` for ERROR_CODE_NOT_LEADER_OR_FOLLOWER; UNKNOWN_SERVER_ERROR for a
    number the enum lacks."""
    try:
        return common_pb2.ErrorCode.Name(code).removeprefix(_PREFIX)
    except ValueError:
        return reason_of(_C.ERROR_CODE_UNKNOWN_SERVER_ERROR)


def code_of_reason(reason: str) -> int | None:
    """The ErrorCode value a ``reason`` names, or None if it names none."""
    try:
        return common_pb2.ErrorCode.Value(_PREFIX + reason)
    except ValueError:
        return None


def code_for_status(status: str) -> int:
    """The ErrorCode assumed for a failed call whose status carries no ErrorInfo."""
    return _REASON_BY_STATUS.get(status, _C.ERROR_CODE_UNKNOWN_SERVER_ERROR)


@dataclass(frozen=True)
class FieldViolation:
    """One problem with one request field; ``field`` is a path such as ``topics[0].name``."""

    field: str
    description: str


@dataclass(frozen=True)
class ErrorDetails:
    """What a failed call carries, decoded: the ErrorCode and its reason, and field violations."""

    code: int
    reason: str
    violations: tuple[FieldViolation, ...] = ()


def encode_status(
    status: str, message: str, code: int, violations: Sequence[FieldViolation] = ()
) -> status_pb2.Status:
    """The ``google.rpc.Status`` for a failed call: ErrorInfo always, BadRequest with violations."""
    info = error_details_pb2.ErrorInfo(
        reason=reason_of(code), domain=DOMAIN, metadata={ERROR_CODE_KEY: str(code)}
    )
    details = [info]
    if violations:
        details.append(
            error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field=v.field, description=v.description
                    )
                    for v in violations
                ]
            )
        )
    packed = []
    for detail in details:
        any_ = any_pb2.Any()
        any_.Pack(detail)
        packed.append(any_)
    return status_pb2.Status(code=STATUS_NUMBERS[status], message=message, details=packed)


def decode_status(rich: status_pb2.Status | None, status: str) -> ErrorDetails:
    """The details of a failed call from the ``google.rpc.Status`` of its
    ``grpc-status-details-bin`` trailer (None if it had none).

    Without an ErrorInfo of this domain the code is the one assumed for ``status``.
    """
    code: int | None = None
    violations: list[FieldViolation] = []
    if rich is not None:
        for detail in rich.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                if info.domain == DOMAIN:
                    code = code_of_reason(info.reason)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += [FieldViolation(v.field, v.description) for v in bad.field_violations]
    if code is None:
        code = code_for_status(status)
    return ErrorDetails(code, reason_of(code), tuple(violations))
