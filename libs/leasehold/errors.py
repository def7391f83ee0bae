"""The exceptions every Leasehold component raises for domain failures.

Each error carries three things a caller needs: a Kafka-compatible ``code`` (a
``leasehold.common.v1.ErrorCode`` value, so per-partition results and operators' tooling speak
Kafka's vocabulary), a human ``message`` (Kafka's own text where Kafka has one), and the name of the
gRPC status the request should fail with. The status is a plain string so that pure code, Spark
jobs and the CLI can raise these errors without importing grpc; the server interceptor turns the
name into ``grpc.StatusCode`` in exactly one place.

How a failure reaches a client (a gRPC status with google.rpc.ErrorInfo and BadRequest details,
or a per-item error code) is :mod:`leasehold.error_model`. Which status to pick:

- ``INVALID_ARGUMENT``: the request is wrong for the cluster as it stands (bad name, count,
  replication factor, assignment, config value, JSON).
- ``NOT_FOUND``: something the request names does not exist (topic, partition, broker).
- ``ALREADY_EXISTS``: the request would create something that exists.
- ``FAILED_PRECONDITION``: the request is well formed but the cluster is in a state that forbids it
  (topic queued for deletion, reassignment in progress, stale epoch).
- ``UNAVAILABLE``: try again, maybe elsewhere (not the controller, no leader yet).
"""

from __future__ import annotations

from typing import ClassVar

from leasehold.common.v1 import common_pb2

# The names of grpc.StatusCode members, spelled out so that this module needs no grpc import.
GRPC_STATUS_NAMES: frozenset[str] = frozenset(
    {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    }
)


class LeaseholdError(Exception):
    """Base of every domain error: ``code`` (ErrorCode value), ``message``, ``grpc_status``.

    Subclasses fix the usual ``grpc_status`` for their kind; the constructor may override it for
    the odd case. The arguments are kept in ``args`` in constructor order so the error survives
    pickling (Spark ships exceptions from executors to the driver).
    """

    grpc_status: ClassVar[str] = "INTERNAL"

    def __init__(
        self, code: int, message: str, grpc_status: str | None = None, field: str = ""
    ) -> None:
        status = grpc_status if grpc_status is not None else type(self).grpc_status
        if status not in GRPC_STATUS_NAMES:
            raise ValueError(f"unknown gRPC status name {status!r}")
        super().__init__(int(code), message, status, field)
        self.code: int = int(code)
        self.message: str = message
        # Instance attribute shadows the class default, so callers always read the effective one.
        self.grpc_status = status  # type: ignore[misc]
        # The request field at fault (``topics[0].name``), reported as a google.rpc.BadRequest
        # field violation when the call fails as a whole; "" when no one field is at fault.
        self.field: str = field

    @property
    def error_code(self) -> int:
        """Alias of ``code``: the name the admin API's result messages use."""
        return self.code

    @property
    def code_name(self) -> str:
        """The ErrorCode enum name (``ERROR_CODE_INVALID_TOPIC_EXCEPTION``), for logs."""
        try:
            return common_pb2.ErrorCode.Name(self.code)
        except ValueError:
            return str(self.code)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code_name}, message={self.message!r}, "
            f"grpc_status={self.grpc_status!r})"
        )


# The admin modules raise validation failures under this name; it is the same class so that the
# interceptor and callers need to know only one hierarchy.
AdminError = LeaseholdError


class InvalidRequestError(LeaseholdError):
    """The request itself is wrong: bad names, counts, assignments, configs or JSON."""

    grpc_status: ClassVar[str] = "INVALID_ARGUMENT"


class NotFoundError(LeaseholdError):
    """The request names a topic, partition, broker or operation that does not exist."""

    grpc_status: ClassVar[str] = "NOT_FOUND"


class AlreadyExistsError(LeaseholdError):
    """The request would create something that already exists."""

    grpc_status: ClassVar[str] = "ALREADY_EXISTS"


class PreconditionError(LeaseholdError):
    """The request is valid but the cluster's current state forbids it."""

    grpc_status: ClassVar[str] = "FAILED_PRECONDITION"


class StaleEpochError(PreconditionError):
    """A fencing token (controller, broker or leader epoch) is older than one already seen."""


class UnavailableError(LeaseholdError):
    """The service cannot act now; the caller should retry later or elsewhere."""

    grpc_status: ClassVar[str] = "UNAVAILABLE"


class NotControllerError(UnavailableError):
    """This controller is not (or no longer) the active one; retry against the new one."""
