"""Record batch codec: round trips, header layout, CRC and structural rejection."""

from __future__ import annotations

import struct

import crc32c
import pytest

from services.broker_agent.log import (
    CorruptRecordError,
    DecodedRecord,
    InvalidRecordError,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)
from services.broker_agent.log.batch import CRC_START, HEADER_SIZE, MAGIC, parse_header

NOW = 1_700_000_000_000


def test_round_trip_keeps_every_field() -> None:
    records = [
        Record(b"v0", key=b"k0", headers=[("h1", b"x"), ("h\u00e9", b"")], timestamp_ms=NOW - 5),
        Record(None, key=None),  # tombstone without key: both null
        Record(b"", key=b""),  # empty is not null
        Record(b"x" * 300, timestamp_ms=NOW + 7),
    ]
    batch = build_batch(1000, 7, records, NOW)

    assert decode_records(batch) == [
        DecodedRecord(1000, NOW - 5, b"k0", b"v0", (("h1", b"x"), ("h\u00e9", b""))),
        DecodedRecord(1001, NOW, None, None, ()),
        DecodedRecord(1002, NOW, b"", b"", ()),
        DecodedRecord(1003, NOW + 7, None, b"x" * 300, ()),
    ]


def test_header_fields_and_layout() -> None:
    batch = build_batch(42, 3, [Record(b"a", timestamp_ms=50), Record(b"b", timestamp_ms=40)], NOW)
    header = parse_header(batch)

    assert header is not None
    assert (header.base_offset, header.partition_leader_epoch, header.magic) == (42, 3, MAGIC)
    assert (header.last_offset_delta, header.record_count) == (1, 2)
    assert (header.first_timestamp, header.max_timestamp) == (50, 50)
    assert (header.last_offset, header.next_offset, header.size) == (43, 44, len(batch))
    assert header.batch_length == len(batch) - 12
    # base_offset and batch_length are the first 12 bytes, as in Kafka.
    assert struct.unpack_from(">qi", batch) == (42, len(batch) - 12)
    # The CRC covers every byte after the crc field.
    assert header.crc == crc32c.crc32c(batch[CRC_START:])


def test_negative_timestamp_deltas_and_large_values_survive_varints() -> None:
    timestamps = [2**40, 1, 2**40 + 2**35, 3]
    records = [Record(b"v", timestamp_ms=ts) for ts in timestamps]

    decoded = decode_records(build_batch(2**40, 2**31 - 1, records, NOW))

    assert [r.timestamp_ms for r in decoded] == timestamps
    assert [r.offset for r in decoded] == [2**40 + i for i in range(4)]


@pytest.mark.parametrize(
    "position",
    [
        # every byte the CRC covers, sampled: attributes, deltas, timestamps, count, records
        21,
        23,
        30,
        40,
        46,
        HEADER_SIZE,
        HEADER_SIZE + 5,
        -1,
    ],
)
def test_flipping_any_covered_byte_fails_the_crc(position: int) -> None:
    batch = bytearray(build_batch(0, 1, [Record(b"value", key=b"key")], NOW))
    batch[position] ^= 0x01

    (view,) = iter_batches(bytes(batch))

    assert view.is_valid() is False
    with pytest.raises(CorruptRecordError):
        view.ensure_valid()
    with pytest.raises(CorruptRecordError):
        decode_records(bytes(batch))


def test_flipping_the_crc_itself_fails() -> None:
    batch = bytearray(build_batch(0, 1, [Record(b"value")], NOW))
    batch[18] ^= 0xFF
    (view,) = iter_batches(bytes(batch))
    assert view.is_valid() is False


def test_untouched_batch_is_valid() -> None:
    (view,) = iter_batches(build_batch(5, 1, [Record(b"value")], NOW))
    assert view.is_valid() is True
    view.ensure_valid()


def test_iter_batches_yields_zero_copy_views_and_leaves_a_partial_tail() -> None:
    one = build_batch(0, 1, [Record(b"a"), Record(b"b")], NOW)
    two = build_batch(2, 1, [Record(b"c")], NOW)
    buf = one + two + two[:20]

    views = list(iter_batches(buf))

    assert [(v.base_offset, v.last_offset, v.size) for v in views] == [
        (0, 1, len(one)),
        (2, 2, len(two)),
    ]
    assert bytes(views[1].buffer) == two
    assert isinstance(views[0].buffer, memoryview)
    assert [r.value for r in decode_records(buf)] == [b"a", b"b", b"c"]


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (16, b"\x07", "magic"),  # wrong magic
        (8, struct.pack(">i", 3), "length"),  # batch_length shorter than a header
        (23, struct.pack(">i", -1), "negative"),  # negative last_offset_delta
    ],
)
def test_malformed_headers_are_rejected(offset: int, value: bytes, message: str) -> None:
    batch = bytearray(build_batch(0, 1, [Record(b"v")], NOW))
    batch[offset : offset + len(value)] = value

    with pytest.raises(CorruptRecordError, match=message):
        list(iter_batches(bytes(batch)))


def test_record_that_overruns_its_batch_is_rejected_even_without_crc_check() -> None:
    batch = bytearray(build_batch(0, 1, [Record(b"value")], NOW))
    batch[HEADER_SIZE] = 0x7E  # record length varint: far more than the batch holds

    with pytest.raises(CorruptRecordError):
        decode_records(bytes(batch), verify_crc=False)


@pytest.mark.parametrize(
    "records", [[], [Record(b"v", timestamp_ms=-5)]], ids=["empty", "negative-ts"]
)
def test_build_batch_refuses_bad_input(records: list[Record]) -> None:
    with pytest.raises(InvalidRecordError):
        build_batch(0, 0, records, NOW)


def test_zero_timestamp_means_now() -> None:
    (record,) = decode_records(build_batch(0, 0, [Record(b"v")], NOW))
    assert record.timestamp_ms == NOW
