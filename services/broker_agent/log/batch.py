"""Record batch codec: our own binary format, modelled on Kafka's v2 record batch.

A batch is what the log stores, replicates and serves: the leader builds it once (assigning
offsets and stamping its leader epoch), and every replica keeps and serves exactly those bytes.
That is why ``iter_batches`` parses headers without copying records and checks the CRC only
when asked: the fetch path moves bytes, it does not re-encode them.

Layout (big-endian)::

    base_offset            int64   \\ LOG_OVERHEAD: batch_length counts the bytes after these
    batch_length           int32   /
    partition_leader_epoch int32
    magic                  int8    (= MAGIC)
    crc                    uint32  CRC32C of every byte after this field
    attributes             int16   (no compression, create-time timestamps: always 0)
    last_offset_delta      int32
    first_timestamp        int64
    max_timestamp          int64
    record_count           int32
    records...

Each record is ``varint length`` then: varlong timestamp delta (from first_timestamp), varint
offset delta, key and value as ``varint length (-1 = null) + bytes``, and a varint count of
headers, each ``varint length + utf-8 key, varint length + bytes value``. Varints are
zig-zag encoded as in Kafka.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import crc32c

from services.broker_agent.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfOrderError,
)

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqi")
HEADER_SIZE = HEADER.size  # 47
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21  # first byte the CRC covers (attributes)
LAST_OFFSET_DELTA_AT = 23
_CRC_FIELD = struct.Struct(">I")
_CRC_FIELD_AT = 17
_COMPRESSION_MASK = 0x07
_UINT64 = (1 << 64) - 1


@dataclass(frozen=True)
class Record:
    """One record a producer hands to the leader; ``timestamp_ms == 0`` means "now"."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    timestamp_ms: int = 0


@dataclass(frozen=True)
class DecodedRecord:
    """One record read back from a batch, with the offset the leader assigned it."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


class BatchHeader(NamedTuple):
    """The fixed-size front of a batch: enough to index, seek, and route it.

    A NamedTuple rather than a dataclass: the read path builds one per batch it steps over.
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

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader | None:
    """Parse the header at ``pos``; None if fewer than HEADER_SIZE bytes remain there.

    Raises CorruptRecordError when the bytes cannot be the start of a batch (wrong magic,
    impossible length or counts) — for recovery, the signal that the tail is garbage.
    """
    if len(buf) - pos < HEADER_SIZE:
        return None
    header = BatchHeader(*HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise CorruptRecordError(f"batch at {pos}: unknown magic {header.magic}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch at {pos}: impossible length {header.batch_length}")
    if header.last_offset_delta < 0 or header.record_count < 0 or header.base_offset < 0:
        raise CorruptRecordError(f"batch at {pos}: negative offset delta, count or offset")
    return header


class BatchView:
    """A parsed header over a zero-copy view of one whole batch."""

    __slots__ = ("buffer", "header")

    def __init__(self, header: BatchHeader, buffer: memoryview) -> None:
        self.header = header
        self.buffer = buffer

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def partition_leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def record_count(self) -> int:
        return self.header.record_count

    @property
    def size(self) -> int:
        return self.header.size

    def is_valid(self) -> bool:
        """True when the stored CRC matches the bytes; computed on demand (it costs a pass)."""
        return crc32c.crc32c(self.buffer[CRC_START:]) == self.header.crc

    def ensure_valid(self) -> None:
        if not self.is_valid():
            raise CorruptRecordError(
                f"batch at offset {self.header.base_offset} failed its CRC check"
            )

    def records(self) -> list[DecodedRecord]:
        return _decode_batch_records(self.header, self.buffer)


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[BatchView]:
    """Yield every complete batch in ``buf``; a trailing partial batch is silently left over.

    Kafka's fetch responses may end in a partial batch, so callers compare the bytes they
    consumed with ``len(buf)`` if they care. Malformed headers raise CorruptRecordError.
    """
    view = memoryview(buf)
    pos = 0
    while True:
        header = parse_header(view, pos)
        if header is None or pos + header.size > len(view):
            return
        yield BatchView(header, view[pos : pos + header.size])
        pos += header.size


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


def build_batch(
    base_offset: int, leader_epoch: int, records: Sequence[Record], now_ms: int
) -> bytes:
    """Encode ``records`` as one batch whose first record gets ``base_offset``."""
    if not records:
        raise InvalidRecordError("a batch needs at least one record")
    timestamps = [record.timestamp_ms or now_ms for record in records]
    if min(timestamps) < 0:
        raise InvalidRecordError("record timestamps must not be negative")
    first_ts = timestamps[0]
    body = bytearray()
    for delta, (record, ts) in enumerate(zip(records, timestamps, strict=True)):
        body += _encode_record(record, ts - first_ts, delta)
    batch = bytearray(HEADER_SIZE) + body
    HEADER.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        leader_epoch,
        MAGIC,
        0,
        0,
        len(records) - 1,
        first_ts,
        max(timestamps),
        len(records),
    )
    _CRC_FIELD.pack_into(batch, _CRC_FIELD_AT, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def decode_records(
    buf: bytes | bytearray | memoryview, verify_crc: bool = True
) -> list[DecodedRecord]:
    """Decode every record of every complete batch in ``buf`` (e.g. a fetch response)."""
    out: list[DecodedRecord] = []
    for batch in iter_batches(buf):
        if verify_crc:
            batch.ensure_valid()
        out.extend(batch.records())
    return out


def _encode_record(record: Record, timestamp_delta: int, offset_delta: int) -> bytes:
    body = bytearray()
    _put_varint(body, timestamp_delta)
    _put_varint(body, offset_delta)
    _put_bytes(body, record.key)
    _put_bytes(body, record.value)
    _put_varint(body, len(record.headers))
    for name, value in record.headers:
        _put_bytes(body, name.encode("utf-8"))
        _put_bytes(body, bytes(value))
    out = bytearray()
    _put_varint(out, len(body))
    return bytes(out + body)


def _decode_batch_records(header: BatchHeader, buf: memoryview) -> list[DecodedRecord]:
    if header.attributes & _COMPRESSION_MASK:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: unknown compression")
    out: list[DecodedRecord] = []
    pos = HEADER_SIZE
    for _ in range(header.record_count):
        length, pos = _get_varint(buf, pos)
        end = pos + length
        if length < 0 or end > len(buf):
            raise CorruptRecordError(f"batch at offset {header.base_offset}: record overruns")
        ts_delta, pos = _get_varint(buf, pos)
        offset_delta, pos = _get_varint(buf, pos)
        key, pos = _get_bytes(buf, pos)
        value, pos = _get_bytes(buf, pos)
        count, pos = _get_varint(buf, pos)
        headers = []
        for _ in range(count):
            name, pos = _get_bytes(buf, pos)
            hvalue, pos = _get_bytes(buf, pos)
            if name is None or hvalue is None:
                raise CorruptRecordError("record header key and value must not be null")
            headers.append((name.decode("utf-8", errors="replace"), hvalue))
        if pos != end:
            raise CorruptRecordError(f"batch at offset {header.base_offset}: bad record length")
        out.append(
            DecodedRecord(
                header.base_offset + offset_delta,
                header.first_timestamp + ts_delta,
                key,
                value,
                tuple(headers),
            )
        )
    if pos != len(buf):
        raise CorruptRecordError(f"batch at offset {header.base_offset}: trailing bytes")
    return out


def _put_varint(out: bytearray, value: int) -> None:
    zigzag = ((value << 1) ^ (value >> 63)) & _UINT64
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _get_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    raw = 0
    shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise CorruptRecordError("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _put_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _put_varint(out, -1)
    else:
        _put_varint(out, len(data))
        out += data


def _get_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    length, pos = _get_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptRecordError("record field overruns its batch")
    return bytes(buf[pos : pos + length]), pos + length
