"""Record batches as the log sees them: the shared codec (``leasehold.records``) plus the
checks a replica makes before it stores a batch.

The leader stores a producer's batch after checking its header and CRC and stamping its base
offset and leader epoch (``check_produced`` / ``stamp``); a follower stores the leader's bytes
verbatim after checking CRCs and offset order (``validated_batches``). Neither decodes records.
"""

from __future__ import annotations

import struct

from leasehold.records import (
    CRC_START,
    HEADER_SIZE,
    LEGACY_HEADER_SIZE,
    LEGACY_MAGIC,
    LOG_OVERHEAD,
    MAGIC,
    MIN_HEADER_SIZE,
    BatchHeader,
    BatchView,
    DecodedRecord,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from leasehold.records.format import (
    COMPRESSION_MASK,
    CONTROL,
    LAST_OFFSET_DELTA_AT,
    MAX_SEQUENCE,
    TRANSACTIONAL,
)
from services.broker_agent.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfOrderError,
)

__all__ = [
    "CRC_START",
    "HEADER_SIZE",
    "LAST_OFFSET_DELTA_AT",
    "LEGACY_HEADER_SIZE",
    "LEGACY_MAGIC",
    "LOG_OVERHEAD",
    "MAGIC",
    "MIN_HEADER_SIZE",
    "BatchHeader",
    "BatchView",
    "DecodedRecord",
    "Record",
    "build_batch",
    "check_produced",
    "decode_records",
    "iter_batches",
    "parse_header",
    "stamp",
    "validated_batches",
]

_STAMP_OFFSET = struct.Struct(">q")
_STAMP_EPOCH = struct.Struct(">i")
_EPOCH_AT = 12


def validated_batches(buf: bytes | bytearray | memoryview, next_offset: int) -> list[BatchView]:
    """The complete batches of a fetch response, checked before a follower stores them.

    Each must pass its CRC and start at or after the end of the previous one (the first at or
    after ``next_offset``, the log end): CorruptRecordError / OffsetOutOfOrderError otherwise.
    """
    views = list(iter_batches(buf))
    for view in views:
        view.ensure_valid()
        if view.base_offset < next_offset:
            raise OffsetOutOfOrderError(
                f"batch at offset {view.base_offset} does not follow offset {next_offset - 1}"
            )
        next_offset = view.last_offset + 1
    return views


def check_produced(data: bytes | bytearray | memoryview) -> BatchHeader:
    """The header of a producer's batch, after every check that needs no record decoding.

    Exactly one whole batch of the current format, its CRC matching, at least one record with
    offset deltas 0..n-1, timestamps not negative, no compression, transactional or control
    bits, and producer fields either all unset or a valid idempotent triple. Raises
    CorruptRecordError (CRC, framing) or InvalidRecordError (contents) otherwise.
    """
    header = parse_header(data)
    if header is None or header.size != len(data):
        raise CorruptRecordError(
            f"a produced record batch must be exactly one whole batch ({len(data)} bytes sent)"
        )
    if header.magic != MAGIC:
        raise InvalidRecordError(f"produced batches must have magic {MAGIC}, not {header.magic}")
    if header.attributes & (COMPRESSION_MASK | TRANSACTIONAL | CONTROL):
        raise InvalidRecordError(f"unsupported batch attributes {header.attributes:#06x}")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise InvalidRecordError(
            f"a batch of {header.record_count} records cannot have last offset delta "
            f"{header.last_offset_delta}"
        )
    if header.first_timestamp < 0 or header.max_timestamp < 0:
        raise InvalidRecordError("record timestamps must not be negative")
    if header.producer_id < 0:
        if (header.producer_id, header.producer_epoch, header.base_sequence) != (-1, -1, -1):
            raise InvalidRecordError(
                "producer epoch and base sequence must be -1 without a producer id"
            )
    elif header.producer_epoch < 0 or not 0 <= header.base_sequence <= MAX_SEQUENCE:
        raise InvalidRecordError(
            f"producer {header.producer_id} needs an epoch >= 0 and a base sequence >= 0"
        )
    if not BatchView(header, memoryview(data)).is_valid():
        raise CorruptRecordError("the record batch failed its CRC check")
    return header


def stamp(data: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int) -> bytearray:
    """A copy of ``data`` with the leader's base offset and epoch (fields outside the CRC)."""
    out = bytearray(data)
    _STAMP_OFFSET.pack_into(out, 0, base_offset)
    _STAMP_EPOCH.pack_into(out, _EPOCH_AT, leader_epoch)
    return out
