"""The admin domain's request and result values, free of the gRPC API's message classes.

The servicer turns ``leasehold.admin.v1`` messages into these and back; the domain modules take
and return only these, so they read as plain Python and their tests need no protobuf plumbing.
Per-item failures that do not fail the whole request (a race lost after validation, a timeout,
the controller's per-partition outcome) are :class:`Outcome` values with Kafka's error codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from leasehold.common.v1 import common_pb2

NONE = common_pb2.ERROR_CODE_NONE

Assignment = Mapping[int, tuple[int, ...]]


def frozen_assignment(assignment: Mapping[int, object]) -> Assignment:
    """Partition -> replicas as an immutable, partition-ordered mapping of tuples."""
    return MappingProxyType(
        {int(p): tuple(int(b) for b in r) for p, r in sorted(assignment.items())}  # type: ignore[attr-defined]
    )


@dataclass(frozen=True)
class Outcome:
    """An ErrorCode and message for one item; ``code == NONE`` is success."""

    code: int = NONE
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.code == NONE


OK = Outcome()


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class PartitionOutcome:
    """The result for one partition (or, with ``partition == -1``, one whole topic)."""

    topic: str
    partition: int
    outcome: Outcome = OK


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; ``num_partitions``/``replication_factor`` of -1 take the defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Assignment = field(default_factory=lambda: frozen_assignment({}))
    configs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class TopicResult:
    """What CreateTopics / CreatePartitions report for one topic."""

    name: str
    topic_id: str = ""
    num_partitions: int = 0
    replication_factor: int = 0
    assignments: Assignment = field(default_factory=lambda: frozen_assignment({}))
    outcome: Outcome = OK


@dataclass(frozen=True)
class NewPartitions:
    """Grow ``name`` to ``count`` partitions; ``assignments`` lists the new ones' replicas."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class OperationStatus:
    """An intent's progress: the request id to poll, per-partition results, and completion."""

    request_id: str
    completed: bool
    results: tuple[PartitionOutcome, ...] = ()
    completed_at_ms: int = 0


@dataclass(frozen=True)
class ReassignmentRequest:
    """One partition's target replicas, or a cancellation (KIP-455)."""

    topic: str
    partition: int
    replicas: tuple[int, ...] = ()
    cancel: bool = False

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class CallContext:
    """What a call carries besides its request: the caller's W3C trace headers, and its wait."""

    trace_carrier: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    timeout_ms: int = 0
