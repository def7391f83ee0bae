"""The config schema: every topic and broker config name, its type, Kafka's default, its check.

Kept apart from :mod:`leasehold.configs` (parsing, validation, resolution) because this is data:
adding a config is one entry here. Defaults and checks are Kafka's (``LogConfig``,
``ReplicationConfigs``, ``ServerConfigs``, ``QuotaConfig``); where Leasehold checks more than
Kafka does, the key's doc says so. Check messages are Kafka's ``ConfigDef`` texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from types import MappingProxyType

from leasehold.javacompat import INT64_MAX, java_trim

_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


class ConfigType(Enum):
    """How a value's text is parsed (Kafka's ``ConfigDef.Type`` names, used in its messages)."""

    BOOLEAN = "BOOLEAN"
    INT = "INT"
    LONG = "LONG"
    STRING = "STRING"
    LIST = "LIST"
    DOUBLE = "DOUBLE"


class ResourceType(IntEnum):
    """Same numbers as ``leasehold.admin.v1.ResourceType``."""

    TOPIC = 1
    BROKER = 2


class AlterOp(IntEnum):
    """Same numbers as ``leasehold.admin.v1.ConfigOperation``."""

    SET = 1
    DELETE = 2
    APPEND = 3
    SUBTRACT = 4


class ConfigSource(IntEnum):
    """Where a resolved value came from; same numbers as ``leasehold.admin.v1.ConfigSource``."""

    DEFAULT = 1
    TOPIC = 2
    BROKER = 3
    CLUSTER_DEFAULT = 4


# A validator gets a parsed value and returns what is wrong with it, or None.
Validator = Callable[[object], "str | None"]


@dataclass(frozen=True)
class ConfigKey:
    """One config name: its type, Kafka's default (parsed), a doc line and a value check."""

    name: str
    type: ConfigType
    default: object  # parsed; a LIST value is a tuple of strings
    doc: str
    validator: Validator | None = None


def between(minimum: int, maximum: int | None = None) -> Validator:
    """Kafka's ``Range.between`` / ``Range.atLeast`` (``maximum`` None)."""

    def check(value: object) -> str | None:
        if value < minimum:  # type: ignore[operator]
            return f"Value must be at least {minimum}"
        if maximum is not None and value > maximum:  # type: ignore[operator]
            return f"Value must be no more than {maximum}"
        return None

    return check


def one_of(*allowed: str) -> Validator:
    """Kafka's ``ValidString.in``: exact, case-sensitive."""

    def check(value: object) -> str | None:
        return None if value in allowed else f"String must be one of: {', '.join(allowed)}"

    return check


def _cleanup_policy(value: object) -> str | None:
    """Kafka's ``ValidList.in("compact", "delete")``, not empty."""
    if isinstance(value, tuple) and value and all(v in ("compact", "delete") for v in value):
        return None
    return "String must be one of: compact, delete"


def _ratio(value: object) -> str | None:
    if not 0.0 <= value <= 1.0:  # type: ignore[operator]
        return "Value must be no more than 1.0" if value > 1.0 else "Value must be at least 0.0"  # type: ignore[operator]
    return None


def _throttled_replicas(name: str) -> Validator:
    def check(value: object) -> str | None:
        items = [java_trim(str(v)) for v in value]  # type: ignore[attr-defined]
        if all(_THROTTLED_REPLICA.fullmatch(i) for i in items) or "".join(items) == "*":
            return None
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )

    return check


_WEEK_MS = 7 * 24 * 60 * 60 * 1000
_LEADER_THROTTLED = "leader.replication.throttled.replicas"
_FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"
_MIN_ISR_DOC = "Fewest in-sync replicas that must hold a write for acks=all to succeed."
_UNCLEAN_DOC = (
    "Whether a replica outside the ISR may become leader when no ISR member is alive, "
    "accepting data loss for availability."
)


def _keys(*keys: ConfigKey) -> Mapping[str, ConfigKey]:
    return MappingProxyType({k.name: k for k in sorted(keys, key=lambda k: k.name)})


TOPIC_CONFIGS: Mapping[str, ConfigKey] = _keys(
    ConfigKey(
        "cleanup.policy", ConfigType.LIST, ("delete",),
        "What happens to old segments: 'delete' removes them by retention.ms and "
        "retention.bytes, 'compact' keeps the latest record of each key (the log cleaner); "
        "both may be given.",
        _cleanup_policy,
    ),
    ConfigKey(
        "delete.retention.ms", ConfigType.LONG, 24 * 60 * 60 * 1000,
        "How long a compacted topic keeps a tombstone (a null value) after the cleaner has "
        "seen it, so consumers reading from the start see the deletion.",
        between(0),
    ),
    ConfigKey(
        "min.cleanable.dirty.ratio", ConfigType.DOUBLE, 0.5,
        "Share of a compacted log not yet cleaned above which the cleaner cleans it.",
        _ratio,
    ),
    ConfigKey(
        "min.compaction.lag.ms", ConfigType.LONG, 0,
        "Records younger than this stay uncompacted.", between(0),
    ),
    ConfigKey(
        "max.compaction.lag.ms", ConfigType.LONG, INT64_MAX,
        "Records older than this are compacted whatever the dirty ratio.", between(1),
    ),
    ConfigKey(
        "retention.ms", ConfigType.LONG, _WEEK_MS,
        "Longest time a segment is kept before deletion; -1 keeps segments forever.",
        between(-1),
    ),
    ConfigKey(
        "retention.bytes", ConfigType.LONG, -1,
        "Largest size a partition may grow to before old segments are deleted; -1 means no limit.",
    ),
    ConfigKey(
        "segment.bytes", ConfigType.INT, 1024 * 1024 * 1024,
        "Segment file size at which the log rolls to a new segment.", between(14),
    ),
    ConfigKey(
        "segment.ms", ConfigType.LONG, _WEEK_MS,
        "Time after which the log rolls even if the segment is not full, so retention can act.",
        between(1),
    ),
    ConfigKey("min.insync.replicas", ConfigType.INT, 1, _MIN_ISR_DOC, between(1)),
    ConfigKey("unclean.leader.election.enable", ConfigType.BOOLEAN, False, _UNCLEAN_DOC),
    ConfigKey(
        "max.message.bytes", ConfigType.INT, 1024 * 1024 + 12,
        "Largest record batch the leader accepts for this topic.", between(0),
    ),
    ConfigKey(
        "index.interval.bytes", ConfigType.INT, 4096,
        "Bytes of log between offset-index entries: denser is faster to seek, larger on disk.",
        between(0),
    ),
    ConfigKey(
        "message.timestamp.type", ConfigType.STRING, "CreateTime",
        "Whether batches keep the producer's timestamp (CreateTime) or get the broker's "
        "append time (LogAppendTime).",
        one_of("CreateTime", "LogAppendTime"),
    ),
    ConfigKey(
        _LEADER_THROTTLED, ConfigType.LIST, (),
        "Replicas ('partition:broker,...' or '*') whose leader-side replication traffic counts "
        "against leader.replication.throttled.rate; set during reassignment.",
        _throttled_replicas(_LEADER_THROTTLED),
    ),
    ConfigKey(
        _FOLLOWER_THROTTLED, ConfigType.LIST, (),
        "Replicas ('partition:broker,...' or '*') whose follower fetches count against "
        "follower.replication.throttled.rate; set during reassignment.",
        _throttled_replicas(_FOLLOWER_THROTTLED),
    ),
)  # fmt: skip

BROKER_CONFIGS: Mapping[str, ConfigKey] = _keys(
    ConfigKey(
        "delete.topic.enable", ConfigType.BOOLEAN, True,
        "Whether DeleteTopics is allowed; when false deletions fail with TOPIC_DELETION_DISABLED.",
    ),
    ConfigKey(
        "auto.leader.rebalance.enable", ConfigType.BOOLEAN, True,
        "Whether the controller periodically moves leadership back to preferred replicas.",
    ),
    ConfigKey(
        "leader.imbalance.per.broker.percentage", ConfigType.INT, 10,
        "Share of a broker's partitions not led by their preferred leader that triggers a "
        "rebalance. Leasehold requires 0..100 (Kafka does not check).",
        between(0, 100),
    ),
    ConfigKey(
        "leader.imbalance.check.interval.seconds", ConfigType.LONG, 300,
        "How often the controller checks leader imbalance.", between(1),
    ),
    ConfigKey(
        "replica.lag.time.max.ms", ConfigType.LONG, 30000,
        "A follower that has not caught up for this long is dropped from the ISR. Leasehold "
        "requires at least 1 (Kafka does not check).",
        between(1),
    ),
    ConfigKey("min.insync.replicas", ConfigType.INT, 1, _MIN_ISR_DOC, between(1)),
    ConfigKey("unclean.leader.election.enable", ConfigType.BOOLEAN, False, _UNCLEAN_DOC),
    ConfigKey(
        "leader.replication.throttled.rate", ConfigType.LONG, INT64_MAX,
        "Bytes/s cap on replication sent by leaders for throttled replicas.", between(0),
    ),
    ConfigKey(
        "follower.replication.throttled.rate", ConfigType.LONG, INT64_MAX,
        "Bytes/s cap on replication fetched by followers for throttled replicas.", between(0),
    ),
    ConfigKey(
        "default.replication.factor", ConfigType.INT, 1,
        "Replication factor of topics created without one. Leasehold requires at least 1.",
        between(1),
    ),
    ConfigKey(
        "num.partitions", ConfigType.INT, 1,
        "Partition count of topics created without one.", between(1),
    ),
)  # fmt: skip
