"""Log compaction: the cleaner's decisions as tables, then whole cleaning rounds on real logs
(latest record per key, tombstones and their horizon, crash safety of the swap, truncation,
throttling, which log is cleaned first)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.broker_agent.log import (
    InvalidRecordError,
    Log,
    LogConfig,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)
from services.broker_agent.log.batch import DecodedRecord
from services.broker_agent.log.cleaner import CleanerSettings, LogCleaner, Throttler
from services.broker_agent.log.compaction import (
    INT64_MAX,
    SegmentInfo,
    cleanable,
    delete_horizon_ms,
    first_dirty_offset,
    group_segments,
    rebuild_batch,
    retained,
)
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.loader import CLEANED_SUFFIX, swap_name
from services.broker_agent.log.offset_map import OffsetMap
from services.broker_agent.log.segment import segment_name

T0 = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy=("compact",), segment_bytes=400, min_cleanable_dirty_ratio=0.0)


def seg(base, end, size=100, max_ts=T0, first_ts=T0, modified=T0) -> SegmentInfo:
    return SegmentInfo(base, end, size, max_ts, first_ts, modified)


# ------------------------------------------------------------------ decisions


@pytest.mark.parametrize(
    ("point", "start", "end", "expected"),
    [(5, 0, 10, 5), (0, 3, 10, 3), (11, 0, 10, 0), (10, 2, 10, 10)],
)
def test_first_dirty_offset_restarts_at_the_log_start_when_out_of_range(
    point, start, end, expected
):
    assert first_dirty_offset(point, start, end) == expected


SEGMENTS = [seg(0, 10), seg(10, 20), seg(20, 30), seg(30, 35, size=50)]  # the last is active


@pytest.mark.parametrize(
    ("name", "kwargs", "first_dirty", "first_uncleanable", "ratio", "must"),
    [
        ("nothing cleaned yet: everything below the active segment",
         dict(cleaner_point=0, high_watermark=35), 0, 30, 1.0, False),
        ("half clean",
         dict(cleaner_point=20, high_watermark=35), 20, 30, 1 / 3, False),
        ("the high watermark bounds it (a new leader may truncate above)",
         dict(cleaner_point=0, high_watermark=15), 0, 15, 1.0, False),
        ("min.compaction.lag.ms keeps young segments dirty",
         dict(cleaner_point=0, high_watermark=35, min_lag_ms=1000,
              segments=[seg(0, 10, max_ts=T0 - 5000), seg(10, 20, max_ts=T0 - 10),
                        seg(20, 30), seg(30, 35)]), 0, 10, 1.0, False),
        ("max.compaction.lag.ms passed: must clean",
         dict(cleaner_point=10, high_watermark=35, max_lag_ms=1000,
              segments=[seg(0, 10), seg(10, 20, first_ts=T0 - 2000), seg(20, 30),
                        seg(30, 35)]), 10, 30, 2 / 3, True),
        ("a point past the log end restarts",
         dict(cleaner_point=99, high_watermark=35), 0, 30, 1.0, False),
    ],
)  # fmt: skip
def test_cleanable_section(name, kwargs, first_dirty, first_uncleanable, ratio, must):
    kwargs = dict(kwargs)
    segments = kwargs.pop("segments", SEGMENTS)
    found = cleanable(
        segments,
        log_start=0,
        now_ms=T0,
        min_lag_ms=kwargs.pop("min_lag_ms", 0),
        max_lag_ms=kwargs.pop("max_lag_ms", INT64_MAX),
        **kwargs,
    )
    assert (found.first_dirty, found.first_uncleanable, found.must_clean) == (
        first_dirty,
        first_uncleanable,
        must,
    ), name
    assert found.ratio == pytest.approx(ratio), name


@pytest.mark.parametrize(
    ("sizes", "max_size", "end", "groups"),
    [
        ([100, 100, 100, 100], 250, 30, [[0, 1], [2]]),
        ([100, 100, 100, 100], 1000, 30, [[0, 1, 2]]),
        ([300, 100, 100, 100], 250, 30, [[0], [1, 2]]),
        ([100, 100, 100, 100], 1000, 15, [[0, 1]]),
    ],
)
def test_segments_are_grouped_up_to_segment_bytes_below_the_end(sizes, max_size, end, groups):
    segments = [seg(b, b + 10, size=s) for b, s in zip((0, 10, 20, 30), sizes, strict=True)]
    assert group_segments(segments, max_size, end) == groups


def test_delete_horizon_is_the_newest_clean_segment_less_the_retention():
    segments = [seg(0, 10, modified=T0 - 50), seg(10, 20, modified=T0), seg(20, 30)]
    assert delete_horizon_ms(segments, first_dirty=20, delete_retention_ms=100) == T0 - 100
    assert delete_horizon_ms(segments, first_dirty=0, delete_retention_ms=100) == -1


def rec(offset, key, value=b"v"):
    return DecodedRecord(offset, T0 + offset, key, value)


def test_retained_records():
    offsets = OffsetMap(10_000)
    for offset, key in [(5, b"a"), (7, b"b"), (8, b"t")]:
        offsets.put(key, offset)
    records = [
        rec(1, b"a"),  # superseded at 5
        rec(2, None),  # keyless: never kept in a compacted log
        rec(3, b"c"),  # not in the dirty section: nothing newer
        rec(5, b"a"),  # the latest of a
        rec(8, b"t", None),  # a tombstone
        rec(9, b"a"),  # past the map's end: kept whatever it is
    ]
    keep = [r.offset for r in retained(records, offsets, retain_deletes=True)]
    drop = [r.offset for r in retained(records, offsets, retain_deletes=False)]
    assert keep == [3, 5, 8, 9]
    assert drop == [3, 5, 9]


def test_offset_map_stops_when_full():
    offsets = OffsetMap(24 * 3)  # two slots at the load factor
    assert offsets.put(b"a", 1) and offsets.put(b"b", 2) and offsets.put(b"a", 3)
    assert not offsets.put(b"c", 4)
    assert (offsets.get(b"a"), offsets.get(b"c"), offsets.latest_offset) == (3, -1, 3)


def test_a_rebuilt_batch_keeps_offsets_epoch_and_timestamps():
    original = build_batch(
        10, 7, [Record(b"x%d" % i, b"k%d" % i, timestamp_ms=T0 + i) for i in range(5)], T0
    )
    (view,) = iter_batches(original)
    kept = [r for r in view.records() if r.offset in (11, 13)]
    (rebuilt,) = iter_batches(rebuild_batch(view.header, kept))
    assert rebuilt.is_valid()
    assert (rebuilt.base_offset, rebuilt.last_offset, rebuilt.partition_leader_epoch) == (10, 13, 7)
    assert rebuilt.records() == kept
    assert rebuilt.max_timestamp == T0 + 3


def test_throttler_sleeps_what_the_rate_requires():
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    throttler = Throttler(1000.0, clock=lambda: now[0], sleep=sleep, check_interval_s=0.1)
    throttler.maybe_throttle(50)  # too soon to check
    now[0] += 0.2
    throttler.maybe_throttle(450)  # 500 bytes in 0.2 s at 1000/s: 0.3 s owed
    assert slept == [pytest.approx(0.3)]
    now[0] += 1.0
    throttler.maybe_throttle(10)  # slow enough
    assert len(slept) == 1


# ------------------------------------------------------------------ whole rounds


def open_log(path: Path, config: LogConfig = COMPACT, handles=None) -> Log:
    return Log.open(path / "compact-0", config, clock=lambda: T0, handles=handles)


def fill(log: Log, items: list[tuple[bytes | None, bytes | None]]) -> None:
    """Append one record per batch, keyed; the small segment.bytes rolls every few."""
    for key, value in items:
        log.append_as_leader([Record(value, key)], 1)
    log.update_high_watermark(log.log_end_offset)


def contents(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        records = decode_records(log.read(offset, 1 << 20).records)
        if not records:
            break
        out += [(r.offset, r.key, r.value) for r in records if r.offset >= offset]
        offset = records[-1].offset + 1
    return out


def cleaner_for(log: Log, **settings) -> LogCleaner:
    return LogCleaner(
        lambda: {("compact", 0): log}, log._local._handles, CleanerSettings(**settings)
    )


def test_a_round_keeps_the_latest_record_of_each_key(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)])
    segments_before = len(log.segment_base_offsets)
    result = cleaner_for(log).clean_once(now_ms=T0)
    assert result is not None and result.swapped
    # Everything below the active segment is clean; the active one is untouched.
    active_base = log.segment_base_offsets[-1]
    assert result.end == active_base and log.cleaner_point == active_base
    latest = {}
    for offset, key, _value in contents(log):
        if offset < active_base:
            latest.setdefault(key, []).append(offset)
    assert all(len(offsets) == 1 for offsets in latest.values())
    assert log.log_end_offset == 40
    by_key = {key: value for _, key, value in contents(log)}
    assert by_key == {b"k%d" % k: b"v%d" % (36 + k) for k in range(4)}
    # Nothing more to do until more is appended.
    assert cleaner_for(log).clean_once(now_ms=T0) is None
    # The result survives a restart.
    before = contents(log)
    log.close()
    reopened = open_log(tmp_path)
    assert contents(reopened) == before and reopened.cleaner_point == active_base
    # A later round merges the now small segments (Kafka's groupSegmentsBySize).
    fill(reopened, [(b"k%d" % (i % 4), b"w%d" % i) for i in range(40)])
    cleaner_for(reopened).clean_once(now_ms=T0)
    assert [b for b in reopened.segment_base_offsets if b < active_base] == [0]
    assert segments_before > 2


def test_tombstones_stay_for_delete_retention_then_go(tmp_path: Path) -> None:
    config = LogConfig(
        cleanup_policy=("compact",), segment_bytes=400, min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=60_000,
    )  # fmt: skip
    log = open_log(tmp_path, config)
    cleaner = cleaner_for(log)
    fill(log, [(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"c", b"3")] * 3)
    fill(log, [(b"d", b"4")] * 12)
    cleaner.clean_once(now_ms=T0)
    keys = {key: value for _, key, value in contents(log)}
    assert keys[b"a"] is None  # the tombstone is kept: readers must see the deletion
    fill(log, [(b"e", b"5")] * 12)
    cleaner.clean_once(now_ms=T0)
    assert {key: value for _, key, value in contents(log)}[b"a"] is None  # clean, not yet old
    # The tombstone's segment is now older than the newest clean segment by more than
    # delete.retention.ms: the next round drops it.
    (tombstone,) = [o for o, key, _ in contents(log) if key == b"a"]
    holder = max(b for b in log.segment_base_offsets if b <= tombstone)
    path = tmp_path / "compact-0" / f"{segment_name(holder)}.log"
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns - 120_000 * 1_000_000))
    fill(log, [(b"f", b"6")] * 12)
    cleaner.clean_once(now_ms=T0)
    assert b"a" not in {key for _, key, _ in contents(log)}
    assert {key for _, key, _ in contents(log)} >= {b"b", b"c", b"d", b"e"}


def test_keyless_records_are_refused_by_a_compacted_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    with pytest.raises(InvalidRecordError, match="without key"):
        log.append_as_leader([Record(b"v")], 1)


def test_compact_only_logs_skip_time_retention(tmp_path: Path) -> None:
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=200, retention_ms=1)
    log = open_log(tmp_path, config)
    fill(log, [(b"k", b"v")] * 10)
    assert log.delete_old_segments(now_ms=T0 + 10**9) == 0
    both = LogConfig(cleanup_policy=("compact", "delete"), segment_bytes=200, retention_ms=1)
    log.config = both
    assert log.delete_old_segments(now_ms=T0 + 10**9) > 0


def test_a_crash_before_the_swap_leaves_the_old_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    before = contents(log)
    log.close()
    (tmp_path / "compact-0" / f"{segment_name(0)}{CLEANED_SUFFIX}").write_bytes(b"half")
    reopened = open_log(tmp_path)
    assert contents(reopened) == before
    assert not list((tmp_path / "compact-0").glob("*" + CLEANED_SUFFIX))


@pytest.mark.parametrize("deleted_before_crash", [0, 1, 2])
def test_a_crash_during_the_swap_is_completed_on_load(tmp_path, deleted_before_crash) -> None:
    handles = FileHandleCache()
    log = open_log(tmp_path, handles=handles)
    fill(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    cleaner = cleaner_for(log)
    view = log.cleaner_view()
    dirty = cleaner._cleanable(view, T0)
    # Write the first group's cleaned segment as a round would, then "crash" before swapping.
    offsets = OffsetMap(1 << 20)
    from services.broker_agent.log.cleaner import _Counts

    cleaner._build_offset_map(view, dirty, offsets, _Counts())
    group = group_segments(view.infos, COMPACT.segment_bytes, offsets.latest_offset + 1)[0]
    old = tuple(view.segments[i] for i in group)
    group_end = view.infos[group[-1] + 1].base_offset
    swap = cleaner._write_cleaned(
        view.directory, old, [view.infos[i] for i in group], offsets, -1, group_end, _Counts()
    )
    assert swap.name == swap_name(old[0].base_offset, group_end)
    expected_kept = {
        (r.offset, r.key, r.value)
        for batch in iter_batches(swap.read_bytes())
        for r in batch.records()
    }
    log.close()
    for segment in old[:deleted_before_crash]:
        segment.log_path.unlink()
    reopened = open_log(tmp_path)
    assert not list((tmp_path / "compact-0").glob("*.swap"))
    in_group = [c for c in contents(reopened) if c[0] < group_end]
    assert set(in_group) == expected_kept
    assert reopened.log_end_offset == 30


def test_a_truncation_meanwhile_drops_the_round_and_lowers_the_point(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    cleaner = cleaner_for(log)
    assert cleaner.clean_once(now_ms=T0).swapped
    point = log.cleaner_point
    fill(log, [(b"k%d" % (i % 3), b"w%d" % i) for i in range(30)])
    found = cleaner.filthiest(T0)
    assert found is not None
    log.truncate_to(point - 1)  # a follower truncating below the clean part
    assert log.cleaner_point == point - 1
    result = cleaner.clean(*found, now_ms=T0)
    assert not result.swapped
    assert not list((tmp_path / "compact-0").glob("*.swap"))
    assert (tmp_path / "compact-0" / "cleaner-offset-checkpoint").read_text().split()[-1] == str(
        point - 1
    )


def test_the_dirtiest_log_is_cleaned_first_and_clean_ones_wait(tmp_path: Path) -> None:
    ratio = LogConfig(cleanup_policy=("compact",), segment_bytes=400, min_cleanable_dirty_ratio=0.5)
    a = Log.open(tmp_path / "a-0", ratio, clock=lambda: T0)
    b = Log.open(tmp_path / "b-0", ratio, clock=lambda: T0)
    plain = Log.open(tmp_path / "p-0", LogConfig(segment_bytes=400), clock=lambda: T0)
    for log in (a, b, plain):
        fill(log, [(b"k%d" % i, b"v%d" % i) for i in range(30)])
    cleaner = LogCleaner(lambda: {("a", 0): a, ("b", 0): b, ("p", 0): plain}, FileHandleCache())
    assert cleaner.clean_once(now_ms=T0).tp in {("a", 0), ("b", 0)}
    second = cleaner.clean_once(now_ms=T0)
    assert second is not None and second.tp in {("a", 0), ("b", 0)}
    assert cleaner.clean_once(now_ms=T0) is None  # both clean; the delete-policy log is not ours
    # A little more dirt stays under the ratio.
    fill(a, [(b"k0", b"x")] * 6)
    assert cleaner.clean_once(now_ms=T0) is None
    assert 0 < cleaner.max_dirty_ratio < 0.5


def test_a_follower_stores_a_cleaned_leaders_batches_with_their_gaps(tmp_path: Path) -> None:
    leader = open_log(tmp_path)
    fill(leader, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)])
    cleaner_for(leader).clean_once(now_ms=T0)
    follower = Log.open(tmp_path / "follower-0", COMPACT, clock=lambda: T0)
    while follower.log_end_offset < leader.log_end_offset:
        data = leader.read(follower.log_end_offset, 1 << 20).records
        follower.append_as_follower(data)
    follower.update_high_watermark(follower.log_end_offset)
    assert contents(follower) == contents(leader)
