"""The record batch layout, its header parser and the errors of the codec.

A batch is what producers send, the log stores and replicates, and consumers read: the leader
stamps its base offset and leader epoch (two fields outside the CRC) and every replica keeps and
serves exactly those bytes. Nothing on the broker's produce and fetch paths looks at records:
``parse_header`` reads the fixed-size front, and the CRC is checked only when asked.

Magic 3 is Kafka's v2 record batch byte for byte, except for the magic value itself (2 was
taken by the earlier Leasehold layout, which the log still reads)::

    base_offset            int64   \\ LOG_OVERHEAD: batch_length counts the bytes after these
    batch_length           int32   /
    partition_leader_epoch int32
    magic                  int8    (= MAGIC)
    crc                    uint32  CRC32C of every byte after this field
    attributes             int16   (compression, transactional and control bits: all 0 here)
    last_offset_delta      int32
    first_timestamp        int64
    max_timestamp          int64
    producer_id            int64   -1: not an idempotent producer's batch
    producer_epoch         int16   -1 with producer_id -1
    base_sequence          int32   sequence of the first record; -1 with producer_id -1
    record_count           int32
    records...

Each record is Kafka's: ``varint length`` then an int8 of attributes (0), the varlong timestamp
delta (from first_timestamp), the varint offset delta, key and value as ``varint length (-1 =
null) + bytes``, and a varint count of headers, each ``varint length + utf-8 key, varint length
+ bytes value``. Varints are zig-zag encoded.

The legacy layout (magic 2) is the same up to ``max_timestamp``, then ``record_count``
(47-byte header, no producer fields), and its records have no attributes byte.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

MAGIC = 3
LEGACY_MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")
LEGACY_HEADER = struct.Struct(">qiibIhiqqi")
HEADER_SIZE = HEADER.size  # 61
LEGACY_HEADER_SIZE = LEGACY_HEADER.size  # 47
MIN_HEADER_SIZE = LEGACY_HEADER_SIZE
LOG_OVERHEAD = 12  # base_offset + batch_length
MAGIC_AT = 16
CRC_AT = 17
CRC_START = 21  # first byte the CRC covers (attributes)
LAST_OFFSET_DELTA_AT = 23
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
MAX_SEQUENCE = 2**31 - 1
COMPRESSION_MASK = 0x07
TRANSACTIONAL = 0x10
CONTROL = 0x20


class RecordBatchError(Exception):
    """Base of the codec's errors; ``error_code`` is the Kafka code to answer with."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR


class CorruptRecordError(RecordBatchError):
    """A batch failed its CRC or structural check."""

    error_code = 2  # CORRUPT_MESSAGE


class InvalidRecordError(RecordBatchError):
    """A batch or record the receiver refuses (empty, bad timestamp, unsupported attribute)."""

    error_code = 87  # INVALID_RECORD


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping past 2**31 - 1 to 0 as Kafka's sequences do."""
    if sequence > MAX_SEQUENCE - increment:
        return increment - (MAX_SEQUENCE - sequence) - 1
    return sequence + increment


class BatchHeader(NamedTuple):
    """The fixed-size front of a batch: enough to index, seek, route and deduplicate it.

    A NamedTuple rather than a dataclass: the read path builds one per batch it steps over.
    Legacy (magic 2) headers have no producer fields and report them as -1.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    record_count: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def header_size(self) -> int:
        return HEADER_SIZE if self.magic == MAGIC else LEGACY_HEADER_SIZE

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_idempotent(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


_new_header = tuple.__new__


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader | None:
    """Parse the header at ``pos``; None if the bytes there are too few for a whole header.

    Raises CorruptRecordError when the bytes cannot be the start of a batch (unknown magic,
    impossible length or counts): for recovery, the signal that the tail is garbage.
    """
    available = len(buf) - pos
    if available <= MAGIC_AT:
        return None
    magic = buf[pos + MAGIC_AT]
    if magic == MAGIC:
        if available < HEADER_SIZE:
            return None
        bo, bl, ple, mg, crc, attrs, lod, ft, mt, pid, pepoch, bseq, count = HEADER.unpack_from(
            buf, pos
        )
        header = _new_header(
            BatchHeader, (bo, bl, ple, mg, crc, attrs, lod, ft, mt, count, pid, pepoch, bseq)
        )
        minimum = HEADER_SIZE - LOG_OVERHEAD
    elif magic == LEGACY_MAGIC:
        if available < LEGACY_HEADER_SIZE:
            return None
        header = _new_header(
            BatchHeader,
            (*LEGACY_HEADER.unpack_from(buf, pos), NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE),
        )
        minimum = LEGACY_HEADER_SIZE - LOG_OVERHEAD
    else:
        raise CorruptRecordError(f"batch at {pos}: unknown magic {magic}")
    if header.batch_length < minimum:
        raise CorruptRecordError(f"batch at {pos}: impossible length {header.batch_length}")
    if header.last_offset_delta < 0 or header.record_count < 0 or header.base_offset < 0:
        raise CorruptRecordError(f"batch at {pos}: negative offset delta, count or offset")
    return header
