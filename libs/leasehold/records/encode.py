"""Building batches: the producer appends records one at a time, then seals the batch once.

``BatchBuilder`` encodes each record as it is appended (so a full batch costs nothing more to
send) and writes the header when the batch is built: the producer fields are known only when
the batch is first sent (its sequence numbers follow the batches sent before it). The header
is built once; a retry sends the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import crc32c

from leasehold.records.format import (
    CRC_AT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    InvalidRecordError,
)

_UINT64 = (1 << 64) - 1
_CACHED = 1 << 14  # zig-zag varints of 0..16383 are looked up, not computed


def _encode_varint(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & _UINT64
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


_VARINTS = tuple(_encode_varint(v) for v in range(_CACHED))
_NULL = _encode_varint(-1)


def varint(value: int) -> bytes:
    """The zig-zag varint of ``value`` (Kafka's record encoding)."""
    if 0 <= value < _CACHED:
        return _VARINTS[value]
    return _encode_varint(value)


def _headers(headers: Sequence[tuple[str, bytes]]) -> bytes:
    parts = [varint(len(headers))]
    for name, hvalue in headers:
        raw = name.encode("utf-8")
        parts += (varint(len(raw)), raw, varint(len(hvalue)), bytes(hvalue))
    return b"".join(parts)


@dataclass(frozen=True)
class Record:
    """One record to put in a batch; ``timestamp_ms == 0`` means "now" to ``build_batch``."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    timestamp_ms: int = 0


class BatchBuilder:
    """Records appended one by one into a batch body; ``build`` adds the header."""

    __slots__ = ("_body", "count", "first_timestamp", "max_timestamp")

    def __init__(self) -> None:
        self._body = bytearray(HEADER_SIZE)
        self.count = 0
        self.first_timestamp = -1
        self.max_timestamp = -1

    @property
    def size(self) -> int:
        """The batch's size in bytes, header included."""
        return len(self._body)

    def append(
        self,
        value: bytes | None,
        timestamp_ms: int,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        """Encode one record (offset delta = records so far); timestamps must be >= 0.

        Each record is joined once and added with its length: this runs once per record the
        producer sends, so it avoids a call or a resize per field.
        """
        if timestamp_ms < 0:
            raise InvalidRecordError("record timestamps must not be negative")
        count = self.count
        if count == 0:
            self.first_timestamp = timestamp_ms
        if timestamp_ms > self.max_timestamp:
            self.max_timestamp = timestamp_ms
        delta = timestamp_ms - self.first_timestamp
        ts = _VARINTS[delta] if 0 <= delta < _CACHED else _encode_varint(delta)
        offset = _VARINTS[count] if count < _CACHED else _encode_varint(count)
        if key is None:
            key_len, key = _NULL, b""
        else:
            key_len = varint(len(key))
        if value is None:
            value_len, value = _NULL, b""
        else:
            size = len(value)
            value_len = _VARINTS[size] if size < _CACHED else _encode_varint(size)
        tail = _headers(headers) if headers else b"\x00"
        record = b"".join((b"\x00", ts, offset, key_len, key, value_len, value, tail))
        size = len(record)
        body = self._body
        body += _VARINTS[size] if size < _CACHED else _encode_varint(size)
        body += record
        self.count = count + 1

    def build(
        self,
        base_offset: int = 0,
        leader_epoch: int = -1,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
    ) -> bytes:
        """The whole batch; the builder may be built again (other producer fields)."""
        if self.count == 0:
            raise InvalidRecordError("a batch needs at least one record")
        batch = self._body
        HEADER.pack_into(
            batch,
            0,
            base_offset,
            len(batch) - LOG_OVERHEAD,
            leader_epoch,
            MAGIC,
            0,
            0,
            self.count - 1,
            self.first_timestamp,
            self.max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            self.count,
        )
        crc = crc32c.crc32c(memoryview(batch)[CRC_START:])
        batch[CRC_AT : CRC_AT + 4] = crc.to_bytes(4, "big")
        return bytes(batch)


def build_batch(
    base_offset: int,
    leader_epoch: int,
    records: Sequence[Record],
    now_ms: int,
    producer: tuple[int, int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE),
) -> bytes:
    """Encode ``records`` as one batch whose first record gets ``base_offset``; a record
    timestamp of 0 becomes ``now_ms``. ``producer`` is (producer id, epoch, base sequence)."""
    if not records:
        raise InvalidRecordError("a batch needs at least one record")
    builder = BatchBuilder()
    for record in records:
        builder.append(record.value, record.timestamp_ms or now_ms, record.key, record.headers)
    return builder.build(base_offset, leader_epoch, *producer)
