"""Per-topic log configuration, parsed from Kafka's topic config names.

Topic configs arrive as strings (from etcd ``/config/topics/<name>`` or a TopicAssignment);
the log only ever sees this frozen, validated object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

_DAY_MS = 24 * 60 * 60 * 1000
_INT64_MAX = 2**63 - 1

# Kafka name -> field name, for the integer configs.
_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
}

# Smallest legal value of each field (Kafka's validators; -1 means "unlimited" for retention).
_MINIMUMS = {
    "segment_bytes": 14,
    "segment_ms": 1,
    "retention_bytes": -1,
    "retention_ms": -1,
    "index_interval_bytes": 0,
    "max_message_bytes": 0,
    "producer_id_expiration_ms": 1,
    "delete_retention_ms": 0,
    "min_compaction_lag_ms": 0,
    "max_compaction_lag_ms": 1,
}
POLICIES = ("compact", "delete")


@dataclass(frozen=True)
class LogConfig:
    """The knobs one partition log obeys; defaults are Kafka's broker defaults."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    retention_ms: int = 7 * _DAY_MS
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12
    # Kafka's broker-wide producer.id.expiration.ms: an idempotent producer idle this long is
    # forgotten (its next batch is accepted at any sequence). Not a topic config.
    producer_id_expiration_ms: int = _DAY_MS
    # Compaction (cleanup.policy contains "compact"): Kafka's names and defaults.
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = _DAY_MS
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _INT64_MAX

    def __post_init__(self) -> None:
        for name, minimum in _MINIMUMS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        if not self.cleanup_policy or any(p not in POLICIES for p in self.cleanup_policy):
            raise ValueError(f"cleanup.policy must be compact and/or delete: {self.cleanup_policy}")
        ratio = self.min_cleanable_dirty_ratio
        if not isinstance(ratio, int | float) or not 0 <= ratio <= 1:
            raise ValueError(f"min.cleanable.dirty.ratio must be within [0, 1], got {ratio!r}")

    @property
    def compact(self) -> bool:
        """The cleaner keeps the latest record of each key (cleanup.policy has compact)."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Retention deletes old segments by time and size (cleanup.policy has delete)."""
        return "delete" in self.cleanup_policy

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str | int], base: LogConfig | None = None
    ) -> LogConfig:
        """Overlay Kafka-named topic configs on ``base``; other keys are not ours and ignored.

        Raises ValueError for a value that is not an integer or is out of range, so the admin
        path can answer INVALID_CONFIG before anything is written.
        """
        changes: dict[str, object] = {}
        for key, field_name in _KEYS.items():
            if key in props:
                raw = props[key]
                try:
                    changes[field_name] = int(raw)
                except (TypeError, ValueError):
                    raise ValueError(f"{key} must be an integer, got {raw!r}") from None
        if "cleanup.policy" in props:
            raw = str(props["cleanup.policy"])
            changes["cleanup_policy"] = tuple(p.strip() for p in raw.split(",") if p.strip())
        if "min.cleanable.dirty.ratio" in props:
            raw = props["min.cleanable.dirty.ratio"]
            try:
                changes["min_cleanable_dirty_ratio"] = float(raw)
            except (TypeError, ValueError):
                raise ValueError(
                    f"min.cleanable.dirty.ratio must be a number, got {raw!r}"
                ) from None
        return dataclasses.replace(base or cls(), **changes)  # type: ignore[arg-type]

    def to_properties(self) -> dict[str, str]:
        """The Kafka-named string form, e.g. for DescribeConfigs."""
        props = {key: str(getattr(self, field_name)) for key, field_name in _KEYS.items()}
        props["cleanup.policy"] = ",".join(self.cleanup_policy)
        props["min.cleanable.dirty.ratio"] = str(self.min_cleanable_dirty_ratio)
        return props
