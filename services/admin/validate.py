"""Request checks the admin RPCs share, on top of :mod:`leasehold.validation`.

These are about the request as a whole (duplicates, limits) or about looking things up in a
snapshot (a topic, a partition, a broker) with the right status: a name that does not exist is
NOT_FOUND, a topic queued for deletion is FAILED_PRECONDITION, a malformed value is
INVALID_ARGUMENT. Every check raises before anything is written.

Requests whose items can fail alone (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs)
run each item's checks through :class:`Items`: a refused item becomes its :class:`Outcome` (the
error's code and message) and the rest go on, as in Kafka. What concerns the request as a whole
(no items, the same item twice) still fails the call, naming the request field.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from leasehold import telemetry
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, LeaseholdError, NotFoundError, PreconditionError
from leasehold.validation import duplicates, topic_name_problem
from services.admin.config import Limits
from services.admin.model import Outcome
from services.admin.snapshot import Snapshot, TopicView

T = TypeVar("T")


class Items:
    """The per-item checks of one multi-item request: which items were refused, and why."""

    def __init__(self) -> None:
        self.refused: list[int] = []  # the ErrorCode of each refused item
        self.accepted = 0

    def check(self, plan: Callable[[], T]) -> T | Outcome:
        """``plan()``'s value, or the Outcome of the LeaseholdError it raised."""
        try:
            value = plan()
        except LeaseholdError as e:
            self.refused.append(e.code)
            return Outcome(e.code, e.message)
        self.accepted += 1
        return value


_UNKNOWN = common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION
_DELETING = common_pb2.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS


@contextlib.contextmanager
def validating(operation: str, **attrs: object) -> Iterator[Items]:
    """An ``admin.validate`` span around a request's checks, recording the refusal if any: of
    the whole request, or of items checked through the :class:`Items` it yields (outcome
    ``partial`` when only some were refused)."""
    items = Items()
    with telemetry.span("admin.validate", operation=operation, **attrs) as span:
        try:
            yield items
        except LeaseholdError as e:
            span.set_attributes(
                telemetry.attrs(outcome="refused", error=common_pb2.ErrorCode.Name(e.code))
            )
            raise
        if not items.refused:
            span.set_attributes(telemetry.attrs(outcome="ok"))
            return
        names = sorted({common_pb2.ErrorCode.Name(c) for c in items.refused})
        outcome = "partial" if items.accepted else "refused"
        span.set_attributes(telemetry.attrs(outcome=outcome, error=",".join(names)))


@contextlib.contextmanager
def for_item(label: str, enabled: bool = True) -> Iterator[None]:
    """Prefix a failure's message with the item it concerns (in multi-item requests)."""
    try:
        yield
    except LeaseholdError as e:
        if not enabled:
            raise
        raise type(e)(e.code, f"{label}: {e.message}", e.grpc_status) from e


def no_duplicates(items: Iterable[object], what: str, field: str = "") -> None:
    repeated = duplicates(items)
    if repeated:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REQUEST,
            f"{what}: {', '.join(map(str, repeated))}",
            field=field,
        )


def not_empty(items: Iterable[object], message: str, field: str) -> None:
    """INVALID_ARGUMENT naming ``field`` when a request lists no items."""
    if not any(True for _ in items):
        raise InvalidRequestError(common_pb2.ERROR_CODE_INVALID_REQUEST, message, field=field)


def check_partition_cap(count: int, limits: Limits) -> None:
    if count > limits.max_partitions_per_topic:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_PARTITIONS,
            f"Number of partitions {count} exceeds the maximum of "
            f"{limits.max_partitions_per_topic} per topic.",
        )


def check_total_partitions(existing: int, adding: int, limits: Limits) -> None:
    """The cluster may hold at most ``limits.max_total_partitions`` (RESOURCE_EXHAUSTED)."""
    if existing + adding > limits.max_total_partitions:
        raise LeaseholdError(
            common_pb2.ERROR_CODE_POLICY_VIOLATION,
            f"The cluster has {existing} partitions; adding {adding} would pass its limit of "
            f"{limits.max_total_partitions} (--max-total-partitions).",
            "RESOURCE_EXHAUSTED",
        )


def check_topic_name(name: str) -> None:
    problem = topic_name_problem(name)
    if problem is not None:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {problem}"
        )


def check_topic_names(names: Iterable[str]) -> None:
    """Refuse impossible names before any read: they could never name a topic."""
    for name in names:
        check_topic_name(name)


def require_topic(snapshot: Snapshot, name: str) -> TopicView:
    """The topic named, or NOT_FOUND (INVALID_ARGUMENT when the name could never exist)."""
    check_topic_name(name)
    topic = snapshot.topics.get(name)
    if topic is None:
        raise NotFoundError(_UNKNOWN, f"The topic '{name}' does not exist.")
    return topic


def require_live_topic(snapshot: Snapshot, name: str) -> TopicView:
    """As :func:`require_topic`, and not queued for deletion (FAILED_PRECONDITION)."""
    topic = require_topic(snapshot, name)
    if topic.marked_for_deletion:
        raise PreconditionError(_DELETING, f"Topic '{name}' is queued for deletion.")
    return topic


def require_partition(topic: TopicView, partition: int) -> tuple[int, ...]:
    replicas = topic.partitions.get(partition)
    if replicas is None:
        raise NotFoundError(
            _UNKNOWN,
            f"Partition {partition} of topic '{topic.name}' does not exist "
            f"(the topic has {len(topic.partitions)} partitions).",
        )
    return replicas


def parse_broker_id(text: str) -> int:
    """A broker resource name as an id (digits only); INVALID_ARGUMENT otherwise."""
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > 2**31 - 1:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REQUEST,
            f"Broker resource name must be a broker id or empty (the cluster default), got "
            f"'{text}'.",
        )
    return int(text)
