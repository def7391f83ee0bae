"""Offset options of the ``leasehold`` data source, and how reads are cut into Spark partitions.

The options follow Spark's Kafka source so users carry their habits over:
``startingOffsets`` / ``endingOffsets`` are ``"earliest"``, ``"latest"`` or JSON such as
``{"orders": {"0": 23, "1": -2}}`` where -2 means earliest and -1 latest. Partitions missing from
the JSON take the option's default (earliest for start, latest for end). An explicit offset is
clamped into the log's ``[earliest, latest]`` range: records below the log start are gone
(retention) and records above the high watermark are not committed yet.

Each topic partition with ``start < end`` becomes one input partition, or several when
``maxRecordsPerPartition`` caps how many offsets one Spark task reads. Pure code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

EARLIEST = -2
LATEST = -1
_NAMED = {"earliest": EARLIEST, "latest": LATEST}


class OffsetSpecError(ValueError):
    """An offsets option that is neither earliest, latest nor valid JSON of the right shape."""


@dataclass(frozen=True)
class OffsetSpec:
    default: int
    per_partition: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def for_partition(self, topic: str, partition: int) -> int:
        return self.per_partition.get((topic, partition), self.default)


def parse_offsets(text: str | None, default: int) -> OffsetSpec:
    """``"earliest"`` / ``"latest"`` / JSON per partition -> an :class:`OffsetSpec`."""
    if text is None or not text.strip():
        return OffsetSpec(default)
    named = _NAMED.get(text.strip().lower())
    if named is not None:
        return OffsetSpec(named)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise OffsetSpecError(f"offsets must be earliest, latest or JSON: {e}") from None
    if not isinstance(data, dict):
        raise OffsetSpecError('offsets JSON must look like {"topic": {"0": 42}}')
    per: dict[tuple[str, int], int] = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise OffsetSpecError(f"offsets of topic {topic!r} must be an object")
        for p, offset in partitions.items():
            if not str(p).lstrip("-").isdigit() or type(offset) is not int or offset < EARLIEST:
                raise OffsetSpecError(f"bad offset {offset!r} for {topic}-{p}")
            per[(topic, int(p))] = offset
    return OffsetSpec(default, per)


def resolve(offset: int, earliest: int, latest: int) -> int:
    """A requested offset (or EARLIEST / LATEST) -> an offset inside ``[earliest, latest]``."""
    if offset == EARLIEST:
        return earliest
    if offset == LATEST:
        return latest
    return min(max(offset, earliest), latest)


@dataclass(frozen=True)
class PartitionBounds:
    """What the driver learned about one topic partition when planning the read."""

    topic: str
    partition: int
    earliest: int
    latest: int
    leader: int


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one topic partition: the work of one Spark task."""

    topic: str
    partition: int
    start: int
    end: int
    leader: int

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(
    bounds: Iterable[PartitionBounds],
    starting: OffsetSpec,
    ending: OffsetSpec,
    max_records: int | None = None,
) -> list[OffsetRange]:
    """The ranges to read, in (topic, partition, start) order; empty ones are dropped."""
    if max_records is not None and max_records <= 0:
        raise OffsetSpecError("maxRecordsPerPartition must be positive")
    out: list[OffsetRange] = []
    for b in sorted(bounds, key=lambda b: (b.topic, b.partition)):
        start = resolve(starting.for_partition(b.topic, b.partition), b.earliest, b.latest)
        end = resolve(ending.for_partition(b.topic, b.partition), b.earliest, b.latest)
        step = max_records or max(end - start, 1)
        for s in range(start, end, step):
            out.append(OffsetRange(b.topic, b.partition, s, min(s + step, end), b.leader))
    return out


def parse_topics(text: str | None) -> tuple[str, ...]:
    topics = tuple(t.strip() for t in (text or "").split(",") if t.strip())
    if not topics:
        raise OffsetSpecError("option 'topic' is required (one topic or a comma-separated list)")
    return topics
