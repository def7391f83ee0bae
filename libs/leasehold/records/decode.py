"""Reading batches: zero-copy views over whole batches, and their records decoded.

The broker steps over batches (``iter_batches``) without touching records; decoding records
is the consumer's work (and the broker's only for clients that ask for decoded records).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from leasehold.records.format import (
    COMPRESSION_MASK,
    CRC_START,
    LEGACY_MAGIC,
    BatchHeader,
    CorruptRecordError,
    parse_header,
)


@dataclass(frozen=True)
class DecodedRecord:
    """One record read back from a batch, with the offset the leader assigned it."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


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
        return decode_batch_records(self.header, self.buffer)


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[BatchView]:
    """Yield every complete batch in ``buf``; a trailing partial batch is silently left over.

    Fetch responses may end in a partial batch, so callers compare the bytes they consumed with
    ``len(buf)`` if they care. Malformed headers raise CorruptRecordError.
    """
    view = memoryview(buf)
    pos = 0
    while True:
        header = parse_header(view, pos)
        if header is None or pos + header.size > len(view):
            return
        yield BatchView(header, view[pos : pos + header.size])
        pos += header.size


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


def decode_batch_records(
    header: BatchHeader, buf: bytes | bytearray | memoryview
) -> list[DecodedRecord]:
    """The records of one whole batch ``buf`` (its header already parsed into ``header``)."""
    if header.attributes & COMPRESSION_MASK:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: unknown compression")
    data = bytes(buf) if not isinstance(buf, bytes) else buf
    has_attributes = header.magic != LEGACY_MAGIC
    base_offset, first_ts = header.base_offset, header.first_timestamp
    out: list[DecodedRecord] = []
    pos = header.header_size
    size = len(data)
    for _ in range(header.record_count):
        length, pos = _get_varint(data, pos)
        end = pos + length
        if length < 0 or end > size:
            raise CorruptRecordError(f"batch at offset {base_offset}: record overruns")
        if has_attributes:
            pos += 1
        ts_delta, pos = _get_varint(data, pos)
        offset_delta, pos = _get_varint(data, pos)
        key, pos = _get_bytes(data, pos, end)
        value, pos = _get_bytes(data, pos, end)
        count, pos = _get_varint(data, pos)
        headers: tuple[tuple[str, bytes], ...] = ()
        if count:
            pairs = []
            for _ in range(count):
                name, pos = _get_bytes(data, pos, end)
                hvalue, pos = _get_bytes(data, pos, end)
                if name is None or hvalue is None:
                    raise CorruptRecordError("record header key and value must not be null")
                pairs.append((name.decode("utf-8", errors="replace"), hvalue))
            headers = tuple(pairs)
        if pos != end:
            raise CorruptRecordError(f"batch at offset {base_offset}: bad record length")
        out.append(
            DecodedRecord(base_offset + offset_delta, first_ts + ts_delta, key, value, headers)
        )
    if pos != size:
        raise CorruptRecordError(f"batch at offset {base_offset}: trailing bytes")
    return out


def _get_varint(buf: bytes, pos: int) -> tuple[int, int]:
    try:
        byte = buf[pos]
    except IndexError:
        raise CorruptRecordError("truncated varint") from None
    if byte < 0x80:  # the usual case: one byte
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= len(buf) or shift > 63:
            raise CorruptRecordError("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _get_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = _get_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError("record field overruns its record")
    return buf[pos : pos + length], pos + length
