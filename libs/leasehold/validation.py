"""Request validation for topics, partition counts, replication factors and replica assignments.

The admin service runs these checks before it writes anything; the CLI and the Spark planner run
the same ones so that a plan they produce is one the admin service accepts. Rules and messages are
Kafka's (``Topic.validate``, ``AdminUtils``, ``AdminZkClient``, the ZooKeeper-era
``AdminManager.createPartitions``), so an operator's Kafka experience and scripts carry over.
Every failure is a :class:`~leasehold.errors.LeaseholdError` whose ``code`` is Kafka's error
code and whose ``grpc_status`` follows the rules in :mod:`leasehold.errors`.

Where Kafka prints a Scala ``Set`` or ``Map`` whose order depends on hashing, we print in a fixed
order (first occurrence for broker ids, ascending for partitions); the text is otherwise the same.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

from leasehold.common.v1 import common_pb2
from leasehold.errors import AlreadyExistsError, InvalidRequestError, PreconditionError
from leasehold.javacompat import java_length

T = TypeVar("T", bound=Hashable)

MAX_TOPIC_NAME_LENGTH = 249
# How much of a piece of user input an error message quotes (``quote``): a legal topic name
# (249) fits whole, as in Kafka's messages.
QUOTE_CHARS = 256
_LEGAL_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

_INVALID_TOPIC = common_pb2.ERROR_CODE_INVALID_TOPIC_EXCEPTION
_TOPIC_EXISTS = common_pb2.ERROR_CODE_TOPIC_ALREADY_EXISTS
_INVALID_PARTITIONS = common_pb2.ERROR_CODE_INVALID_PARTITIONS
_INVALID_RF = common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR
_INVALID_ASSIGNMENT = common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT
_INVALID_REQUEST = common_pb2.ERROR_CODE_INVALID_REQUEST


def quote(text: object, limit: int = QUOTE_CHARS) -> str:
    """``text`` in single quotes for an error message, cut to ``limit`` characters.

    Error messages travel in gRPC status headers (16 KiB in most clients): a message must never
    grow with the input it refuses. A longer text keeps its first ``limit`` characters, marked
    with how long it was, so the reader still sees which value was meant.
    """
    text = str(text)
    if len(text) <= limit:
        return f"'{text}'"
    return f"'{text[:limit]}...' ({len(text)} characters)"


def cut(text: object, limit: int = QUOTE_CHARS) -> str:
    """``text`` for an error message without quotes, cut as :func:`quote` cuts it."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, in Kafka's words, or ``None`` if it is legal.

    Length counts UTF-16 code units as Java does, so a long name of non-ASCII characters is
    reported as too long (like Kafka) rather than as containing illegal characters.
    """
    if name == "":
        return "the empty string is not allowed"
    if name == ".":
        return "'.' is not allowed"
    if name == "..":
        return "'..' is not allowed"
    if java_length(name) > MAX_TOPIC_NAME_LENGTH:
        return (
            f"the length of {quote(name)} is longer than the max allowed length "
            f"{MAX_TOPIC_NAME_LENGTH}"
        )
    if not _LEGAL_TOPIC_CHARS.issuperset(name):
        return (
            f"{quote(name)} contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: raise INVALID_TOPIC_EXCEPTION unless ``name`` is legal."""
    problem = topic_name_problem(name)
    if problem is not None:
        raise InvalidRequestError(_INVALID_TOPIC, f"Topic name is invalid: {problem}")


def has_collision_chars(name: str) -> bool:
    """True if ``name`` contains '.' or '_', the characters metric names cannot tell apart."""
    return "." in name or "_" in name


def topic_name_collides(a: str, b: str) -> bool:
    """True if the names differ at most by '.' versus '_' in the same positions.

    Kafka's metrics replace '.' with '_', so ``a.b`` and ``a_b`` would share metric names; Kafka
    therefore refuses to create one when the other exists. A name collides with itself.
    """
    return a.replace(".", "_") == b.replace(".", "_")


# Topics the cluster makes and uses itself (the group coordinators' committed offsets).
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


def validate_not_internal(name: str, action: str) -> None:
    """Internal topics are created by the controller on first use and never deleted by hand."""
    if name in INTERNAL_TOPICS:
        raise InvalidRequestError(
            _INVALID_REQUEST, f"{action} of internal topic {name} is not allowed."
        )


def validate_new_topic(
    name: str,
    existing_topics: Collection[str],
    marked_for_deletion: Collection[str] = (),
) -> None:
    """The name checks Kafka makes before creating a topic (``AdminZkClient.validateTopicCreate``).

    ``existing_topics`` are all topics in the cluster (including those queued for deletion);
    colliding names are listed in sorted order.
    """
    validate_topic_name(name)
    validate_not_internal(name, "Creation")
    if name in marked_for_deletion:
        raise AlreadyExistsError(_TOPIC_EXISTS, f"Topic '{name}' is marked for deletion.")
    if name in existing_topics:
        raise AlreadyExistsError(_TOPIC_EXISTS, f"Topic '{name}' already exists.")
    if has_collision_chars(name):
        colliding = sorted(t for t in existing_topics if topic_name_collides(name, t))
        if colliding:
            raise InvalidRequestError(
                _INVALID_TOPIC,
                f"Topic '{name}' collides with existing topics: {', '.join(colliding)}",
            )


def duplicates(items: Iterable[T]) -> list[T]:
    """Items that occur more than once, each listed once, in the order they first repeat."""
    seen: set[T] = set()
    repeated: dict[T, None] = {}
    for item in items:
        if item in seen:
            repeated.setdefault(item, None)
        else:
            seen.add(item)
    return list(repeated)


def validate_partition_count(n_partitions: int) -> None:
    """A new topic needs at least one partition (INVALID_PARTITIONS)."""
    if n_partitions <= 0:
        raise InvalidRequestError(
            _INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )


def validate_replication_factor(replication_factor: int, available_brokers: int) -> None:
    """Between 1 and the number of brokers available for placement (INVALID_REPLICATION_FACTOR)."""
    if replication_factor <= 0:
        raise InvalidRequestError(_INVALID_RF, "Replication factor must be larger than 0.")
    if replication_factor > available_brokers:
        raise InvalidRequestError(
            _INVALID_RF,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{available_brokers}.",
        )


def _join(values: Iterable[object]) -> str:
    return ", ".join(str(v) for v in values)


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    expected_replication_factor: int,
    available_brokers: Collection[int],
) -> None:
    """Kafka's per-partition checks of a manual assignment (``validateReplicaAssignment``).

    In ascending partition order: no empty list, no broker twice, every broker available; then
    every list as long as ``expected_replication_factor`` (the replication factor of partition 0,
    which is how the message words it).
    """
    available = set(available_brokers)
    for partition in sorted(assignment):
        replicas = list(assignment[partition])
        if not replicas:
            raise InvalidRequestError(
                _INVALID_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition}.",
            )
        if duplicates(replicas):
            raise InvalidRequestError(
                _INVALID_ASSIGNMENT,
                f"Duplicate brokers not allowed in replica assignment: {_join(replicas)} "
                f"for partition id {partition}.",
            )
        if not available.issuperset(replicas):
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE,
                f"Some brokers specified for partition id {partition} are not available. "
                f"Specified brokers: {_join(replicas)}, "
                f"available brokers: {_join(sorted(available))}.",
            )
    bad = [
        (p, len(r)) for p, r in sorted(assignment.items()) if len(r) != expected_replication_factor
    ]
    if bad:
        raise InvalidRequestError(
            _INVALID_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{expected_replication_factor} while partitions [{_join(p for p, _ in bad)}] have "
            f"replication factors [{_join(n for _, n in bad)}], respectively.",
        )


def validate_topic_assignment(
    assignment: Mapping[int, Sequence[int]], available_brokers: Collection[int]
) -> int:
    """Check an explicit assignment for a new topic; return its replication factor.

    The partitions must be exactly ``0..n-1`` (Kafka: "partitions should be a consecutive 0-based
    integer sequence"), then every partition passes :func:`validate_replica_assignment` against
    the replication factor of partition 0.
    """
    if not assignment or sorted(assignment) != list(range(len(assignment))):
        raise InvalidRequestError(
            _INVALID_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        )
    replication_factor = len(assignment[0])
    validate_replica_assignment(assignment, replication_factor, available_brokers)
    return replication_factor


def validate_partition_increase(current_count: int, requested_count: int) -> int:
    """CreatePartitions may only grow a topic; return how many partitions it adds."""
    if requested_count < current_count:
        raise InvalidRequestError(
            _INVALID_PARTITIONS,
            f"Topic currently has {current_count} partitions, which is higher than the "
            f"requested {requested_count}.",
        )
    if requested_count == current_count:
        raise InvalidRequestError(
            _INVALID_PARTITIONS, f"Topic already has {current_count} partitions."
        )
    return requested_count - current_count


def validate_new_partitions(
    assignments: Sequence[Sequence[int]],
    current_count: int,
    requested_count: int,
    replication_factor: int,
    available_brokers: Collection[int],
) -> dict[int, list[int]]:
    """Check the replica lists a CreatePartitions request gives for its new partitions.

    ``assignments[i]`` is for partition ``current_count + i``; ``replication_factor`` is the
    topic's (partition 0's). Returns the new partitions' assignment by partition id.
    """
    added = validate_partition_increase(current_count, requested_count)
    available = set(available_brokers)
    unknown = [b for b in dict.fromkeys(b for r in assignments for b in r) if b not in available]
    if unknown:
        raise InvalidRequestError(
            _INVALID_ASSIGNMENT, f"Unknown broker(s) in replica assignment: {_join(unknown)}."
        )
    if len(assignments) != added:
        raise InvalidRequestError(
            _INVALID_ASSIGNMENT,
            f"Increasing the number of partitions by {added} but {len(assignments)} "
            "assignments provided.",
        )
    proposed = {current_count + i: list(r) for i, r in enumerate(assignments)}
    validate_replica_assignment(proposed, replication_factor, available)
    return proposed


def validate_topic_not_deleting(topic: str, marked_for_deletion: Collection[str]) -> None:
    """A topic queued for deletion takes no more changes (partitions, configs, reassignments)."""
    if topic in marked_for_deletion:
        raise PreconditionError(
            common_pb2.ERROR_CODE_TOPIC_DELETION_IN_PROGRESS, "The topic is queued for deletion."
        )
