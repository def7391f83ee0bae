"""The JSON files of ``kafka-reassign-partitions``: read with Kafka's checks, written byte-exact.

Operators keep these files (the proposal from ``--generate``, the rollback copy printed by
``--execute``) and feed them to either Kafka's tool or ours, so the formats must match exactly:

- topics to move: ``{"version":1,"topics":[{"topic":"foo"}]}``
- reassignment: ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],
  "log_dirs":["any","any"]}]}`` -- compact, partitions sorted by topic then partition, exactly
  as Kafka's Jackson writer emits it.

Parsing follows Kafka's decoder: a missing ``version`` means 1, any other version is refused, a
missing list means an empty one, and type errors read "Expected `Integer` value, received ...".
Every failure is an :class:`~leasehold.errors.InvalidRequestError`. One difference: for text that
is not JSON at all, the message is Python's parser's, not Jackson's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from leasehold.javacompat import (
    INT32_MAX,
    INT32_MIN,
    java_hash_set_order,
    java_int_hash,
    java_list_str,
    java_split,
    java_string_hash,
    java_string_key,
    java_topic_partition_hash,
    parse_java_int,
)
from leasehold.validation import duplicates

T = TypeVar("T", bound=Hashable)

ANY_LOG_DIR = "any"
_INVALID_REQUEST = common_pb2.ERROR_CODE_INVALID_REQUEST
_INVALID_ASSIGNMENT = common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT
_JACKSON_ESCAPE = re.compile(r"\\\\|\\u00[0-9a-f]{2}")


class TopicPartition(NamedTuple):
    """A topic's partition, printed as Kafka prints it (``foo-0``); plain tuples also work."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class PartitionTarget:
    """One entry of a reassignment file, in file order (duplicates are kept for the checks)."""

    topic_partition: TopicPartition
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]


def _fail(message: str, code: int = _INVALID_REQUEST) -> InvalidRequestError:
    return InvalidRequestError(code, message)


# ---- reading ---------------------------------------------------------------------------------


def _encode(value: object) -> str:
    """Compact JSON as Jackson writes it (control characters escaped with upper-case hex)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _JACKSON_ESCAPE.sub(lambda m: m[0][:2] + m[0][2:].upper(), text)


def _reject_constant(name: str) -> object:
    raise ValueError(f"Non-standard token '{name}'")


class _Missing:
    """What Jackson's ``readTree`` returns for blank text; it prints as nothing."""


_MISSING = _Missing()


def _describe(node: object) -> str:
    return "" if node is _MISSING else _encode(node)


class _NotJson(ValueError):
    pass


def _load(text: str) -> object:
    """Jackson's ``readTree``: the first JSON value; trailing text is ignored, as Kafka does."""
    stripped = text.lstrip(" \t\r\n")
    if not stripped:
        return _MISSING
    try:
        value, _ = json.JSONDecoder(parse_constant=_reject_constant).raw_decode(stripped)
    except ValueError as e:
        raise _NotJson(str(e)) from None
    return value


def _object(node: object) -> dict[str, object]:
    if not isinstance(node, dict):
        raise _fail(f"Expected JSON object, received {_describe(node)}")
    return node


def _array(node: object) -> list[object]:
    if not isinstance(node, list):
        raise _fail(f"Expected JSON array, received {_encode(node)}")
    return node


def _list(node: object) -> list[object]:
    """Kafka decodes ``replicas`` and ``log_dirs`` with another decoder and another message."""
    if not isinstance(node, list):
        raise _fail(f"Expected `JSON array` value, received {_encode(node)}")
    return node


def _field(obj: dict[str, object], name: str) -> object:
    if name not in obj:
        raise _fail(f"No such field exists: `{name}`")
    return obj[name]


def _int(node: object) -> int:
    if type(node) is not int or not INT32_MIN <= node <= INT32_MAX:
        raise _fail(f"Expected `Integer` value, received {_encode(node)}")
    return node


def _str(node: object) -> str:
    if not isinstance(node, str):
        raise _fail(f"Expected `String` value, received {_encode(node)}")
    return node


def _version_1(root: dict[str, object]) -> None:
    version = _int(root["version"]) if "version" in root else 1
    if version != 1:
        raise _fail(f"Not supported version field value {version}")


def _set_text(items: Iterable[T], hash_code: Callable[[T], int]) -> str:
    """A Java ``HashSet`` of ``items`` as Kafka prints it: ``[a, b]`` in hash order."""
    return java_list_str(java_hash_set_order(items, hash_code))


def parse_topics_to_move(text: str) -> list[str]:
    """The ``--topics-to-move-json-file`` contents -> topic names, refusing duplicates."""
    if text == "":
        raise _fail("The input string is not a valid JSON")
    try:
        root = _load(text)
    except _NotJson:
        raise _fail("The input string is not a valid JSON") from None
    obj = _object(root)
    _version_1(obj)
    topics = (
        [_str(_field(_object(e), "topic")) for e in _array(obj["topics"])]
        if "topics" in obj
        else []
    )
    check_topic_list(topics)
    return topics


def check_topic_list(topics: Sequence[str]) -> None:
    """Kafka's check on the topics to move: no topic twice."""
    repeated = duplicates(topics)
    if repeated:
        raise _fail(
            "List of topics to reassign contains duplicate entries: "
            + _set_text(repeated, java_string_hash)
        )


def parse_broker_list(text: str) -> list[int]:
    """The ``--broker-list`` value (``"1,2,3"``) -> broker ids, refusing junk and duplicates."""
    try:
        brokers = [parse_java_int(part) for part in java_split(text, ",")]
    except ValueError as e:
        raise _fail(str(e)) from None
    check_broker_list(brokers)
    return brokers


def check_broker_list(brokers: Sequence[int]) -> None:
    """Kafka's check on the brokers to move onto: no broker twice."""
    repeated = duplicates(brokers)
    if repeated:
        raise _fail("Broker list contains duplicate entries: " + _set_text(repeated, java_int_hash))


def parse_reassignment(text: str) -> list[PartitionTarget]:
    """A ``--reassignment-json-file`` -> its entries in file order, checked for shape only.

    ``--verify`` and ``--cancel`` use this directly; ``--execute`` adds
    :func:`check_execute_targets`. A missing ``log_dirs`` means ``"any"`` for every replica.
    """
    if text == "":
        raise _fail("The input string shouldn't be empty")
    try:
        root = _object(_load(text))
    except _NotJson as e:
        raise _fail(f"Invalid JSON: {e}") from None
    _version_1(root)
    targets: list[PartitionTarget] = []
    for node in _array(root["partitions"]) if "partitions" in root else []:
        fields = _object(node)
        tp = TopicPartition(_str(_field(fields, "topic")), _int(_field(fields, "partition")))
        replicas = tuple(_int(r) for r in _list(_field(fields, "replicas")))
        if "log_dirs" in fields:
            log_dirs = tuple(_str(d) for d in _list(fields["log_dirs"]))
        else:
            log_dirs = (ANY_LOG_DIR,) * len(replicas)
        if len(log_dirs) != len(replicas):
            raise _fail(
                f"Size of replicas list {java_list_str(replicas)} is different from size of log "
                f"dirs list {java_list_str(log_dirs)} for partition {tp}",
                _INVALID_ASSIGNMENT,
            )
        targets.append(PartitionTarget(tp, replicas, log_dirs))
    return targets


def check_execute_targets(targets: Sequence[PartitionTarget]) -> dict[TopicPartition, list[int]]:
    """Kafka's ``--execute`` checks: not empty, no empty list, no partition or broker twice."""
    if not targets:
        raise _fail("Partition reassignment list cannot be empty")
    if any(not t.replicas for t in targets):
        raise _fail("Partition replica list cannot be empty", _INVALID_ASSIGNMENT)
    repeated = duplicates(t.topic_partition for t in targets)
    if repeated:
        ordered = java_hash_set_order(repeated, lambda tp: java_topic_partition_hash(*tp))
        raise _fail(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(str(tp) for tp in ordered)
        )
    problems = [
        f"{t.topic_partition} contains multiple entries for "
        + ",".join(str(b) for b in java_hash_set_order(dups, java_int_hash))
        for t in targets
        if (dups := duplicates(t.replicas))
    ]
    if problems:
        raise _fail(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(problems),
            _INVALID_ASSIGNMENT,
        )
    return {t.topic_partition: list(t.replicas) for t in targets}


def check_brokers_exist(
    targets: Mapping[TopicPartition, Sequence[int]], known_brokers: Iterable[int]
) -> None:
    """Refuse a plan naming a broker the cluster does not have ("Unknown broker id 7").

    Kafka reports the first unknown id in ``HashSet`` order of all target replicas; so do we.
    """
    parts = java_hash_set_order(targets, lambda tp: java_topic_partition_hash(*tp))
    brokers = java_hash_set_order((b for tp in parts for b in targets[tp]), java_int_hash)
    known = set(known_brokers)
    unknown = next((b for b in brokers if b not in known), None)
    if unknown is not None:
        raise _fail(f"Unknown broker id {unknown}", _INVALID_ASSIGNMENT)


# ---- writing ---------------------------------------------------------------------------------


def _sorted_partitions(parts: Iterable[tuple[str, int]]) -> list[TopicPartition]:
    return sorted(
        (TopicPartition(*tp) for tp in parts), key=lambda tp: (java_string_key(tp.topic), tp[1])
    )


def format_reassignment_json(
    assignment: Mapping[tuple[str, int], Sequence[int]],
    log_dirs: Mapping[tuple[str, int, int], str] | None = None,
) -> str:
    """Kafka's ``formatAsReassignmentJson``: version 1, partitions sorted, ``log_dirs`` per replica.

    ``log_dirs`` maps ``(topic, partition, broker)`` to a directory; unlisted replicas get "any".
    """
    dirs = log_dirs or {}
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(assignment[tp]),
            "log_dirs": [
                dirs.get((tp.topic, tp.partition, r), ANY_LOG_DIR) for r in assignment[tp]
            ],
        }
        for tp in _sorted_partitions(assignment)
    ]
    return _encode({"version": 1, "partitions": partitions})


def format_topics_to_move_json(topics: Iterable[str]) -> str:
    """A topics-to-move file for ``--generate``: ``{"version":1,"topics":[{"topic":"foo"}]}``."""
    return _encode({"version": 1, "topics": [{"topic": t} for t in topics]})


def targets_of(targets: Sequence[PartitionTarget]) -> dict[TopicPartition, list[int]]:
    """Entries -> target replicas (the last entry wins, as in Kafka's ``--verify``)."""
    return {t.topic_partition: list(t.replicas) for t in targets}


def log_dirs_of(targets: Sequence[PartitionTarget]) -> dict[tuple[str, int, int], str]:
    """Entries -> the replicas that must land in a specific log dir (not "any")."""
    return {
        (t.topic_partition.topic, t.topic_partition.partition, broker): log_dir
        for t in targets
        for broker, log_dir in zip(t.replicas, t.log_dirs, strict=True)
        if log_dir != ANY_LOG_DIR
    }


def flatten_assignment(
    by_topic: Mapping[str, Mapping[int, Sequence[int]]],
) -> dict[TopicPartition, list[int]]:
    """``{topic: {partition: replicas}}`` (placement's shape) -> ``{TopicPartition: replicas}``."""
    return {
        TopicPartition(topic, partition): list(replicas)
        for topic, partitions in by_topic.items()
        for partition, replicas in partitions.items()
    }
