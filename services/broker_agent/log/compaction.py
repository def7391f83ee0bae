"""The log cleaner's decisions, free of I/O (Kafka's LogCleanerManager and Cleaner rules).

- **What may be cleaned** (``cleanable``): from the first dirty offset (the log's cleaner point,
  reset to the log start when it is out of range) up to the first uncleanable offset — the
  smallest of the high watermark (nothing a new leader could truncate), the active segment's
  base and, with ``min.compaction.lag.ms``, the first segment holding a record younger than
  the lag. Its dirty ratio is dirty bytes over clean plus dirty bytes; a log past
  ``max.compaction.lag.ms`` must be cleaned whatever its ratio.
- **Which segments are rewritten together** (``group_segments``): consecutive ones whose sizes
  add up to at most ``segment.bytes`` and whose offsets fit one segment's relative offsets.
- **Which records survive** (``retained``): a record with a key whose offset is the latest the
  offset map holds for that key, or any record past the map's last offset; a tombstone (null
  value) only while its segment is newer than the delete horizon; never a record without a key.
  Batches keep their base offset, leader epoch and the offsets of the records they keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import crc32c

from leasehold.records.encode import varint
from leasehold.records.format import (
    CRC_AT,
    CRC_START,
    HEADER,
    LEGACY_HEADER,
    LOG_OVERHEAD,
    MAGIC,
)
from services.broker_agent.log.batch import BatchHeader, DecodedRecord
from services.broker_agent.log.offset_map import OffsetMap
from services.broker_agent.log.segment import MAX_RELATIVE_OFFSET

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class SegmentInfo:
    """What the cleaner needs of one segment (a snapshot: segments change under it)."""

    base_offset: int
    next_offset: int
    size: int
    max_timestamp: int
    first_batch_timestamp: int  # the first batch's max timestamp, -1 when empty
    modified_ms: int  # the file's modification time: the tombstone horizon's clock


@dataclass(frozen=True)
class Cleanable:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    must_clean: bool = False  # max.compaction.lag.ms has passed for the first dirty record

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    @property
    def empty(self) -> bool:
        return self.first_uncleanable <= self.first_dirty


def first_dirty_offset(cleaner_point: int, log_start: int, log_end: int) -> int:
    """Kafka's rule: a checkpoint below the log start or past the log end restarts at the start."""
    if cleaner_point < log_start or cleaner_point > log_end:
        return log_start
    return cleaner_point


def _end_of(segments: Sequence[SegmentInfo], i: int) -> int:
    return segments[i + 1].base_offset if i + 1 < len(segments) else segments[i].next_offset


def _bytes_between(segments: Sequence[SegmentInfo], start: int, end: int) -> int:
    """Sizes of the segments overlapping ``[start, end)``."""
    return sum(
        s.size
        for i, s in enumerate(segments)
        if s.base_offset < end and _end_of(segments, i) > start
    )


def cleanable(
    segments: Sequence[SegmentInfo],
    *,
    cleaner_point: int,
    log_start: int,
    high_watermark: int,
    now_ms: int,
    min_lag_ms: int,
    max_lag_ms: int,
) -> Cleanable:
    """The dirty section of a log whose segments are ``segments`` (the last one active)."""
    log_end = segments[-1].next_offset
    first_dirty = first_dirty_offset(cleaner_point, log_start, log_end)
    bound = min(high_watermark, segments[-1].base_offset)
    if min_lag_ms > 0:
        for i, s in enumerate(segments[:-1]):
            if _end_of(segments, i) > first_dirty and s.max_timestamp > now_ms - min_lag_ms:
                bound = min(bound, s.base_offset)
                break
    bound = max(bound, first_dirty)
    must = False
    if max_lag_ms < INT64_MAX and bound > first_dirty:
        first = next(
            (s for i, s in enumerate(segments) if _end_of(segments, i) > first_dirty), None
        )
        if first is not None and first.first_batch_timestamp >= 0:
            must = now_ms - first.first_batch_timestamp > max_lag_ms
    return Cleanable(
        first_dirty=first_dirty,
        first_uncleanable=bound,
        clean_bytes=_bytes_between(segments, log_start, first_dirty),
        dirty_bytes=_bytes_between(segments, first_dirty, bound),
        must_clean=must,
    )


def group_segments(
    segments: Sequence[SegmentInfo], max_size: int, end_offset: int
) -> list[list[int]]:
    """Indexes of the segments below ``end_offset``, in groups to rewrite as one segment each."""
    groups: list[list[int]] = []
    i = 0
    while i < len(segments) and segments[i].base_offset < end_offset:
        group = [i]
        size = segments[i].size
        base = segments[i].base_offset
        j = i + 1
        while (
            j < len(segments)
            and segments[j].base_offset < end_offset
            and size + segments[j].size <= max_size
            and _end_of(segments, j) - 1 - base <= MAX_RELATIVE_OFFSET
        ):
            size += segments[j].size
            group.append(j)
            j += 1
        groups.append(group)
        i = j
    return groups


def delete_horizon_ms(
    segments: Sequence[SegmentInfo], first_dirty: int, delete_retention_ms: int
) -> int:
    """Tombstones in segments last modified at or before this are dropped: the newest clean
    segment's modification time less ``delete.retention.ms`` (Kafka's legacy horizon), so a
    tombstone outlives the round that first cleaned it by at least that long."""
    clean = [s for i, s in enumerate(segments) if _end_of(segments, i) <= first_dirty]
    if not clean:
        return -1
    return clean[-1].modified_ms - delete_retention_ms


def retained(
    records: Sequence[DecodedRecord], offsets: OffsetMap, retain_deletes: bool
) -> list[DecodedRecord]:
    """The records of one batch that cleaning keeps."""
    kept = []
    latest = offsets.latest_offset
    for record in records:
        if record.key is None:
            continue  # a compacted log cannot hold a keyless record: Kafka drops it too
        if record.offset > latest:
            kept.append(record)
            continue
        if record.offset < offsets.get(record.key):
            continue  # a newer record of the same key follows
        if record.value is None and not retain_deletes:
            continue
        kept.append(record)
    return kept


def _encode_record(record: DecodedRecord, base_offset: int, first_ts: int, attrs: bool) -> bytes:
    """One record of a batch (Kafka's v2 record; the legacy layout has no attributes byte)."""
    key = varint(-1) if record.key is None else varint(len(record.key)) + record.key
    value = varint(-1) if record.value is None else varint(len(record.value)) + record.value
    headers = [varint(len(record.headers))]
    for name, hvalue in record.headers:
        raw = name.encode("utf-8")
        headers += [varint(len(raw)), raw, varint(len(hvalue)), bytes(hvalue)]
    body = b"".join(
        [
            b"\x00" if attrs else b"",
            varint(record.timestamp_ms - first_ts),
            varint(record.offset - base_offset),
            key,
            value,
            *headers,
        ]
    )
    return varint(len(body)) + body


def rebuild_batch(header: BatchHeader, records: Sequence[DecodedRecord]) -> bytes:
    """A batch of ``records`` (some of ``header``'s batch, at least one) keeping its layout,
    base offset, leader epoch, attributes, producer fields and each record's offset and
    timestamp."""
    first_ts = records[0].timestamp_ms
    current = header.magic == MAGIC
    body = b"".join(_encode_record(r, header.base_offset, first_ts, current) for r in records)
    batch = bytearray(header.header_size) + body
    fields = [
        header.base_offset,
        len(batch) - LOG_OVERHEAD,
        header.partition_leader_epoch,
        header.magic,
        0,
        header.attributes,
        records[-1].offset - header.base_offset,
        first_ts,
        max(r.timestamp_ms for r in records),
    ]
    if current:
        fields += [header.producer_id, header.producer_epoch, header.base_sequence]
        HEADER.pack_into(batch, 0, *fields, len(records))
    else:
        LEGACY_HEADER.pack_into(batch, 0, *fields, len(records))
    crc = crc32c.crc32c(memoryview(batch)[CRC_START:])
    batch[CRC_AT : CRC_AT + 4] = crc.to_bytes(4, "big")
    return bytes(batch)
