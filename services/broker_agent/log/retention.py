"""Which old segments retention deletes: a pure decision over segment summaries.

Kafka deletes a prefix of the oldest segments for three reasons — ``retention.ms`` breached,
``retention.bytes`` breached, or wholly below the log start offset — each a prefix, so the
union is the longest of the three. Two bounds always hold: the active (last) segment stays,
and a segment goes only when all of its offsets are below the high watermark (the next
segment starts at or below it), so no replica ever loses data consumers cannot yet see.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SegmentSummary:
    base_offset: int
    size: int
    max_timestamp: int


def deletable_prefix(
    segments: Sequence[SegmentSummary],
    *,
    now_ms: int,
    retention_ms: int,
    retention_bytes: int,
    high_watermark: int,
    log_start_offset: int,
) -> int:
    """How many of the oldest ``segments`` (ordered by base offset) to delete."""
    bases = [segment.base_offset for segment in segments]
    # Segment i may go only if segment i + 1 starts at or below the bound.
    limit = max(0, min(len(segments) - 1, bisect.bisect_right(bases, high_watermark) - 1))

    by_time = 0
    if retention_ms >= 0:
        while by_time < limit and now_ms - segments[by_time].max_timestamp > retention_ms:
            by_time += 1

    by_size = 0
    if retention_bytes >= 0:
        excess = sum(segment.size for segment in segments) - retention_bytes
        while by_size < limit and excess >= segments[by_size].size:
            excess -= segments[by_size].size
            by_size += 1

    by_start = max(0, min(limit, bisect.bisect_right(bases, log_start_offset) - 1))
    return max(by_time, by_size, by_start)
