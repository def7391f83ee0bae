"""The data source's pure parts: offset options, range planning, record rows, schema."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from leasehold.broker.v1 import broker_pb2
from services.pipeline.datasource import (
    SCHEMA,
    LeaseholdDataSource,
    LeaseholdReader,
    ReadSettings,
    record_row,
)
from services.pipeline.offsets import (
    EARLIEST,
    LATEST,
    OffsetRange,
    OffsetSpec,
    OffsetSpecError,
    PartitionBounds,
    parse_offsets,
    parse_topics,
    plan_ranges,
    resolve,
)


@pytest.mark.parametrize(
    ("text", "default", "expected"),
    [
        (None, EARLIEST, OffsetSpec(EARLIEST)),
        ("", LATEST, OffsetSpec(LATEST)),
        ("earliest", LATEST, OffsetSpec(EARLIEST)),
        (" Latest ", EARLIEST, OffsetSpec(LATEST)),
        ('{"a": {"0": 23, "1": -2}, "b": {"3": -1}}', LATEST,
         OffsetSpec(LATEST, {("a", 0): 23, ("a", 1): EARLIEST, ("b", 3): LATEST})),
    ],
)  # fmt: skip
def test_parse_offsets(text, default, expected):
    assert parse_offsets(text, default) == expected


@pytest.mark.parametrize(
    "text",
    ["soonest", "[1, 2]", '{"a": 3}', '{"a": {"x": 1}}', '{"a": {"0": -3}}', '{"a": {"0": 1.5}}'],
)
def test_bad_offsets_are_refused(text):
    with pytest.raises(OffsetSpecError):
        parse_offsets(text, EARLIEST)


@pytest.mark.parametrize(
    ("offset", "expected"), [(EARLIEST, 10), (LATEST, 50), (30, 30), (3, 10), (99, 50)]
)
def test_resolve_clamps_into_the_log(offset, expected):
    assert resolve(offset, 10, 50) == expected


BOUNDS = [
    PartitionBounds("b", 0, 0, 7, leader=2),
    PartitionBounds("a", 1, 5, 5, leader=1),  # empty: dropped
    PartitionBounds("a", 0, 10, 35, leader=1),
]


def test_one_range_per_partition_in_order():
    got = plan_ranges(BOUNDS, OffsetSpec(EARLIEST), OffsetSpec(LATEST))
    assert got == [OffsetRange("a", 0, 10, 35, 1), OffsetRange("b", 0, 0, 7, 2)]


def test_ranges_split_by_max_records_and_json_offsets():
    starting = parse_offsets('{"a": {"0": 12}}', EARLIEST)
    ending = parse_offsets('{"b": {"0": 4}}', LATEST)
    got = plan_ranges(BOUNDS, starting, ending, max_records=10)
    assert got == [
        OffsetRange("a", 0, 12, 22, 1),
        OffsetRange("a", 0, 22, 32, 1),
        OffsetRange("a", 0, 32, 35, 1),
        OffsetRange("b", 0, 0, 4, 2),
    ]
    assert sum(r.size for r in got) == 23 + 4
    with pytest.raises(OffsetSpecError):
        plan_ranges(BOUNDS, starting, ending, max_records=0)


def test_start_after_end_reads_nothing():
    got = plan_ranges(BOUNDS, OffsetSpec(LATEST), OffsetSpec(EARLIEST))
    assert got == []


def test_topics_option():
    assert parse_topics("a, b,,c") == ("a", "b", "c")
    with pytest.raises(OffsetSpecError):
        parse_topics(" ")


def test_record_row_keeps_nulls_headers_and_time():
    r = broker_pb2.Record(offset=41, timestamp_ms=1_700_000_000_123, value=b"v",
                          headers=[broker_pb2.RecordHeader(key="h", value=b"\x00")])  # fmt: skip
    assert record_row("t", 3, r) == (
        "t", 3, 41, datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC), None, b"v",
        [("h", b"\x00")],
    )  # fmt: skip
    empty_key = broker_pb2.Record(offset=0, key=b"")
    assert record_row("t", 0, empty_key)[4:6] == (b"", None)


def test_source_name_and_schema():
    assert LeaseholdDataSource.name() == "leasehold"
    assert LeaseholdDataSource({}).schema() == SCHEMA
    assert SCHEMA.startswith("topic string, partition int, offset long, timestamp timestamp")


def test_reader_options_are_case_insensitive():
    reader = LeaseholdReader(
        {"TOPIC": "a,b", "startingoffsets": "latest", "EndingOffsets": '{"a": {"0": 5}}',
         "maxRecordsPerPartition": "9", "bootstrap": "h1:1, h2:2", "timeoutMs": "1500",
         "fetchMaxBytes": "4096"}
    )  # fmt: skip
    assert reader.topics == ("a", "b")
    assert (reader.starting, reader.ending) == (
        OffsetSpec(LATEST),
        OffsetSpec(LATEST, {("a", 0): 5}),
    )
    assert reader.max_records == 9
    assert reader.settings == ReadSettings(("h1:1", "h2:2"), 4096, 1.5)
    with pytest.raises(ValueError, match="'admin' or 'bootstrap'"):
        LeaseholdReader({"topic": "a"})
