"""Log appends, reads, indexes, rolling, retention and timestamp lookups."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.broker_agent.log import (
    CorruptRecordError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfOrderError,
    OffsetOutOfRangeError,
    Record,
    RecordTooLargeError,
    TimestampAndOffset,
    build_batch,
    decode_records,
    iter_batches,
)
from services.broker_agent.log import segment as segment_module
from services.broker_agent.log.batch import parse_header

T0 = 1_000_000


def open_log(path: Path, **config: int) -> Log:
    return Log.open(path / "topic-0", LogConfig(**config), clock=lambda: T0)


def values(buf: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for r in decode_records(buf)]


def test_leader_append_assigns_offsets_and_returns_info(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader([Record(b"a"), Record(b"b", timestamp_ms=T0 + 9)], 3)
    second = log.append_as_leader([Record(b"c")], 3, now_ms=T0 + 5)

    assert (first.first_offset, first.last_offset, first.record_count) == (0, 1, 2)
    assert (first.max_timestamp, first.offset_of_max_timestamp) == (T0 + 9, 0)
    assert (second.first_offset, second.last_offset, second.max_timestamp) == (2, 2, T0 + 5)
    assert log.log_end_offset == 3
    assert values(log.read(0, 10_000).records) == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert [b.partition_leader_epoch for b in iter_batches(log.read(0, 10_000).records)] == [3, 3]


def test_read_returns_whole_batches_from_the_one_holding_the_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    batches = [
        build_batch(0, 1, [Record(b"%d" % i) for i in range(3)], T0),
        build_batch(3, 1, [Record(b"%d" % i) for i in range(3, 6)], T0),
        build_batch(6, 1, [Record(b"6")], T0),
    ]
    for batch in batches:
        log.append_as_follower(batch)

    # Offset 4 lives in the second batch: the read starts at that batch's first byte.
    assert log.read(4, 10_000).records == batches[1] + batches[2]
    # max_bytes that cuts the second batch returns only the first whole one.
    assert log.read(0, len(batches[0]) + 5).records == batches[0]
    # A batch larger than max_bytes still comes back whole (consumers must progress)...
    assert log.read(0, 1).records == batches[0]
    # ...unless the caller already has data for this fetch.
    assert log.read(0, 1, min_one_batch=False).records == b""
    # max_offset (the high watermark for consumers) excludes batches reaching it.
    assert log.read(0, 10_000, max_offset=6).records == batches[0] + batches[1]
    assert log.read(0, 10_000, max_offset=5).records == batches[0]
    assert log.read(0, 10_000, max_offset=2).records == b""
    # The log end offset itself is a valid, empty read.
    info = log.read(7, 10_000)
    assert (info.records, info.log_end_offset, info.fetch_offset) == (b"", 7, 7)


@pytest.mark.parametrize("offset", [-1, 8, 100])
def test_read_outside_the_log_is_out_of_range(tmp_path: Path, offset: int) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"x")] * 7, 0)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(offset, 100)


def test_read_below_log_start_offset_is_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"x")] * 10, 0)
    log.high_watermark = 10
    assert log.maybe_increment_log_start_offset(4) is True
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    assert values(log.read(4, 10_000).records)[0][0] == 0  # whole batch, as stored


def test_index_entries_follow_the_interval_rule_and_point_at_batches(tmp_path: Path) -> None:
    interval = 200
    log = open_log(tmp_path, index_interval_bytes=interval)
    sizes = []
    for i in range(60):
        info = log.append_as_leader([Record(b"v" * (i % 7 * 10))], 0, now_ms=T0 + i)
        sizes.append(info.valid_bytes)

    # Kafka's rule, replayed: an entry for a batch once more than `interval` bytes precede it.
    expected, since, position = [], 0, 0
    for offset, size in enumerate(sizes):
        if since > interval:
            expected.append((offset, position))
            since = 0
        since += size
        position += size
    segment = log._local.segments[0]
    entries = [
        segment.offset_index.lookup(segment.base_offset + rel) for rel in segment.offset_index._keys
    ]
    assert entries == expected
    data = open(segment.log_path, "rb").read()
    for offset, pos in entries:
        assert parse_header(data, pos).base_offset == offset


def test_reads_seek_through_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = open_log(tmp_path, index_interval_bytes=256)
    for i in range(400):
        log.append_as_leader([Record(b"%05d" % i)], 0)
    segment = log._local.segments[0]
    calls: list[tuple[int, int]] = []
    real_pread = os.pread

    def recording_pread(fd: int, size: int, position: int) -> bytes:
        calls.append((size, position))
        return real_pread(fd, size, position)

    monkeypatch.setattr(segment_module.os, "pread", recording_pread)
    for target in (0, 123, 399):
        calls.clear()
        _, indexed_position = segment.offset_index.lookup(target)
        info = log.read(target, 1)
        assert values(info.records) == [(target, b"%05d" % target)]
        # The scan began at the indexed position, never at the start of the file.
        assert calls[0][1] == indexed_position
        assert all(position >= indexed_position for _, position in calls)
        if target:
            assert indexed_position > 0
        # ...and read at most one interval of headers before the data.
        assert sum(size for size, _ in calls[:-1]) <= 64 * 1024


def test_roll_by_size(tmp_path: Path) -> None:
    batch_size = len(build_batch(0, 0, [Record(b"x" * 50)], T0))
    log = open_log(tmp_path, segment_bytes=3 * batch_size)
    for _ in range(7):
        log.append_as_leader([Record(b"x" * 50)], 0)
    assert log.segment_base_offsets == [0, 3, 6]
    assert values(log.read(4, 10_000).records) == [(4, b"x" * 50), (5, b"x" * 50)]


def test_roll_by_time_counts_from_the_first_batch_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=100)
    for ts in (T0, T0 + 50, T0 + 100, T0 + 101, T0 + 150, T0 + 202):
        log.append_as_leader([Record(b"v", timestamp_ms=ts)], 0)
    # T0+101 is more than 100 ms after T0; T0+202 more than 100 ms after T0+101.
    assert log.segment_base_offsets == [0, 3, 5]


def test_an_empty_active_segment_never_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=14)
    log.roll()
    log.append_as_leader([Record(b"x" * 100)], 0)
    log.append_as_leader([Record(b"x" * 100)], 0)
    assert log.segment_base_offsets == [0, 1]


def test_follower_append_is_verbatim(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    for epoch in (1, 1, 2, 4):
        leader.append_as_leader([Record(b"e%d" % epoch), Record(b"more", key=b"k")], epoch)
    fetched = leader.read(0, 100_000).records

    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(fetched)

    assert (info.first_offset, info.last_offset, info.valid_bytes) == (0, 7, len(fetched))
    assert follower.read(0, 100_000).records == fetched
    assert open(follower._local.segments[0].log_path, "rb").read() == fetched
    assert follower.epoch_entries == leader.epoch_entries
    assert [(e.epoch, e.start_offset) for e in follower.epoch_entries] == [(1, 0), (2, 4), (4, 6)]


def test_follower_append_rejects_corruption_and_writes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    good = build_batch(0, 1, [Record(b"a")], T0)
    bad = bytearray(build_batch(1, 1, [Record(b"b")], T0))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_follower(good + bytes(bad))
    assert log.log_end_offset == 0 and log.size_in_bytes == 0


@pytest.mark.parametrize(
    "bases", [[0, 0], [3, 2], [0, 1, 1]], ids=["repeat", "backwards", "overlap"]
)
def test_follower_append_rejects_out_of_order_offsets(tmp_path: Path, bases: list[int]) -> None:
    log = open_log(tmp_path)
    data = b"".join(build_batch(base, 1, [Record(b"v")], T0) for base in bases)
    with pytest.raises(OffsetOutOfOrderError):
        log.append_as_follower(data)
    assert log.log_end_offset == 0


def test_follower_append_below_the_log_end_is_out_of_order(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(build_batch(0, 1, [Record(b"v")] * 3, T0))
    with pytest.raises(OffsetOutOfOrderError):
        log.append_as_follower(build_batch(2, 1, [Record(b"v")], T0))


def test_follower_append_ignores_a_partial_trailing_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    one = build_batch(0, 1, [Record(b"a")], T0)
    two = build_batch(1, 1, [Record(b"b")], T0)
    info = log.append_as_follower(one + two[:30])
    assert (info.valid_bytes, log.log_end_offset) == (len(one), 1)
    empty = log.append_as_follower(b"")
    assert (empty.valid_bytes, empty.first_offset, log.log_end_offset) == (0, -1, 1)


def test_follower_gap_in_offsets_is_allowed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_follower(build_batch(10, 1, [Record(b"a")], T0))
    assert log.log_end_offset == 11
    assert values(log.read(0, 1000).records) == [(10, b"a")]


def test_leader_batch_larger_than_max_message_bytes_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, max_message_bytes=200)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader([Record(b"x" * 300)], 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader([], 0)
    assert log.log_end_offset == 0


def test_retention_by_time_keeps_the_active_segment_and_respects_hw(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=10, retention_ms=1000)
    for i in range(5):  # each batch rolls a new segment (20 ms apart)
        log.append_as_leader([Record(b"v")] * 2, 0, now_ms=T0 + 20 * i)
    assert log.segment_base_offsets == [0, 2, 4, 6, 8]
    log.high_watermark = 10

    assert log.delete_old_segments(now_ms=T0 + 1000) == 0  # nothing older than 1000 ms
    assert log.delete_old_segments(now_ms=T0 + 1030) == 2  # T0 and T0+20 are expired
    assert (log.segment_base_offsets, log.log_start_offset) == ([4, 6, 8], 4)
    # Everything expired: all but the active segment go.
    assert log.delete_old_segments(now_ms=T0 + 10**6) == 2
    assert (log.segment_base_offsets, log.log_start_offset) == ([8], 8)


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=10, retention_ms=0)
    for i in range(5):
        log.append_as_leader([Record(b"v")] * 2, 0, now_ms=T0 + 20 * i)
    log.high_watermark = 5  # segment [4, 6) is not wholly below it
    assert log.delete_old_segments(now_ms=T0 + 10**6) == 2
    assert (log.segment_base_offsets, log.log_start_offset) == ([4, 6, 8], 4)


def test_retention_by_size(tmp_path: Path) -> None:
    size = len(build_batch(0, 0, [Record(b"x" * 40)], T0))
    log = open_log(tmp_path, segment_bytes=2 * size, retention_bytes=3 * size)
    for _ in range(9):  # segments of 2, 2, 2, 2, 1 batches
        log.append_as_leader([Record(b"x" * 40)], 0)
    log.high_watermark = 9
    assert log.segment_base_offsets == [0, 2, 4, 6, 8]

    # 9 batches against a budget of 3: delete while the whole segment fits in the excess.
    assert log.delete_old_segments(now_ms=T0) == 3
    assert (log.segment_base_offsets, log.log_start_offset, log.size_in_bytes) == (
        [6, 8],
        6,
        3 * size,
    )
    assert log.delete_old_segments(now_ms=T0) == 0


def test_retention_trims_the_epoch_cache(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_ms=10, retention_ms=0)
    for epoch in range(4):
        log.append_as_leader([Record(b"v")] * 2, epoch, now_ms=T0 + 20 * epoch)
    log.high_watermark = 8
    log.delete_old_segments(now_ms=T0 + 10**6)
    assert [(e.epoch, e.start_offset) for e in log.epoch_entries] == [(3, 6)]


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=50, segment_bytes=150)
    # Non-monotonic timestamps inside and across batches, several segments.
    plan = [[100, 90], [120], [110, 130], [130], [140, 200], [150]]
    for epoch, timestamps in enumerate(plan):
        log.append_as_leader([Record(b"v", timestamp_ms=ts) for ts in timestamps], epoch)
    assert len(log.segment_base_offsets) > 1

    expected = {
        0: (100, 0, 0),
        95: (100, 0, 0),
        100: (100, 0, 0),
        101: (120, 2, 1),
        111: (120, 2, 1),
        121: (130, 4, 2),
        130: (130, 4, 2),
        131: (140, 6, 4),
        141: (200, 7, 4),
        200: (200, 7, 4),
    }
    for ts, answer in expected.items():
        assert log.offset_for_timestamp(ts) == TimestampAndOffset(*answer), ts
    assert log.offset_for_timestamp(201) is None
    assert log.offset_for_timestamp(-2) == TimestampAndOffset(-1, 0, 0)
    assert log.offset_for_timestamp(-1) == TimestampAndOffset(-1, 9, 5)


def test_offset_for_timestamp_respects_the_log_start_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"v", timestamp_ms=ts) for ts in (100, 200, 300)], 0)
    log.high_watermark = 3
    log.maybe_increment_log_start_offset(2)
    assert log.offset_for_timestamp(50) == TimestampAndOffset(300, 2, 0)
    assert log.offset_for_timestamp(-2) == TimestampAndOffset(-1, 2, 0)


def test_maybe_increment_log_start_offset_rules(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"v")] * 10, 0)
    log.high_watermark = 6
    assert log.maybe_increment_log_start_offset(0) is False
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(7)
    assert log.maybe_increment_log_start_offset(6) is True
    assert log.log_start_offset == 6
    assert log.maybe_increment_log_start_offset(3) is False


@pytest.mark.parametrize(("value", "expected"), [(-5, 2), (0, 2), (4, 4), (10, 10), (99, 10)])
def test_high_watermark_is_clamped(tmp_path: Path, value: int, expected: int) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"v")] * 10, 0)
    log.high_watermark = 2
    log.maybe_increment_log_start_offset(2)
    assert log.update_high_watermark(value) == expected
    assert log.high_watermark == expected


def test_flush_is_free_when_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path)
    log.append_as_leader([Record(b"v")], 0)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    log.flush()
    assert synced and log.recovery_point == 1
    synced.clear()
    log.flush()
    log.flush()
    assert synced == []


def test_offset_for_timestamp_matches_a_full_scan(tmp_path: Path) -> None:
    import random

    rng = random.Random(7)
    log = open_log(tmp_path, index_interval_bytes=120, segment_bytes=2_000)
    for i in range(300):
        timestamps = [T0 + i * 10 + rng.randint(-40, 40) for _ in range(rng.randint(1, 3))]
        log.append_as_leader([Record(b"v", timestamp_ms=ts) for ts in timestamps], 0)
    everything = []
    for base in log.segment_base_offsets:
        everything += decode_records(log.read(base, 10**6).records)
    assert [r.offset for r in everything] == list(range(log.log_end_offset))
    assert sum(len(s.time_index) for s in log._local.segments) > 20  # the index is in play

    for target in range(T0 - 50, T0 + 3_050, 7):
        hit = next((r for r in everything if r.timestamp_ms >= target), None)
        expected = None if hit is None else TimestampAndOffset(hit.timestamp_ms, hit.offset, 0)
        assert log.offset_for_timestamp(target) == expected, target
