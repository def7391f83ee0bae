"""Checkpoint files, topic config parsing, the retention decision, and the handle LRU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.broker_agent.log import FileHandleCache, KafkaStorageError, LogConfig
from services.broker_agent.log import checkpoint as cp
from services.broker_agent.log.retention import SegmentSummary, deletable_prefix

# ----------------------------------------------------------------- checkpoints


def test_partition_offsets_round_trip_in_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    cp.write_partition_offsets(path, {("b", 1): 7, ("a-x", 0): 12})
    assert path.read_text() == "0\n2\na-x 0 12\nb 1 7\n"
    assert cp.read_partition_offsets(path) == {("a-x", 0): 12, ("b", 1): 7}
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()


def test_missing_checkpoints_read_as_empty(tmp_path: Path) -> None:
    assert cp.read_partition_offsets(tmp_path / "nope") == {}
    assert cp.read_epoch_entries(tmp_path / "nope") == []
    assert cp.read_offset(tmp_path / "nope", default=42) == 42
    assert cp.read_topic_id(tmp_path / "nope") is None


def test_epoch_and_single_offset_files(tmp_path: Path) -> None:
    cp.write_epoch_entries(tmp_path / "e", [(1, 0), (4, 17)])
    assert (tmp_path / "e").read_text() == "0\n2\n1 0\n4 17\n"
    assert cp.read_epoch_entries(tmp_path / "e") == [(1, 0), (4, 17)]
    cp.write_offset(tmp_path / "r", 99)
    assert cp.read_offset(tmp_path / "r", default=0) == 99


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n0\n",  # unknown version
        "0\n2\nt 0 1\n",  # fewer entries than announced
        "0\n1\nt 0\n",  # wrong shape
        "0\n1\nt x 1\n",  # not a number
        "zero\n",
    ],
)
def test_malformed_checkpoints_are_storage_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(KafkaStorageError):
        cp.read_partition_offsets(path)


def test_atomic_write_replaces_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f"
    cp.atomic_write(path, b"old")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    cp.atomic_write(path, b"new")
    assert path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
    assert len(synced) == 2  # the temporary file, then the directory


def test_atomic_write_failure_leaves_the_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f"
    cp.atomic_write(path, b"old")

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "EIO")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        cp.atomic_write(path, b"new")
    assert path.read_bytes() == b"old"


def test_topic_id_file(tmp_path: Path) -> None:
    cp.write_topic_id(tmp_path / "partition.metadata", "q1w2e3")
    assert cp.read_topic_id(tmp_path / "partition.metadata") == "q1w2e3"
    (tmp_path / "bad").write_text("nothing here\n")
    with pytest.raises(KafkaStorageError):
        cp.read_topic_id(tmp_path / "bad")


# ---------------------------------------------------------------------- config


def test_config_from_kafka_properties() -> None:
    config = LogConfig.from_properties(
        {"segment.bytes": "1024", "retention.ms": "-1", "cleanup.policy": "delete"}
    )
    assert config == LogConfig(segment_bytes=1024, retention_ms=-1)
    assert config.to_properties()["segment.bytes"] == "1024"
    base = LogConfig(retention_bytes=10)
    assert LogConfig.from_properties({"segment.ms": 5}, base) == LogConfig(
        retention_bytes=10, segment_ms=5
    )


@pytest.mark.parametrize(
    "props",
    [
        {"segment.bytes": "abc"},
        {"segment.bytes": "10"},  # below Kafka's minimum of 14
        {"retention.ms": "-2"},
        {"index.interval.bytes": "-1"},
        {"segment.ms": "0"},
    ],
)
def test_invalid_configs_are_rejected(props: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        LogConfig.from_properties(props)


# ------------------------------------------------------------------- retention


def segs(*specs: tuple[int, int, int]) -> list[SegmentSummary]:
    return [SegmentSummary(*spec) for spec in specs]


FOUR = segs((0, 100, 1000), (10, 100, 2000), (20, 100, 3000), (30, 100, 4000))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # time: strictly older than retention.ms, a prefix only
        ({"now_ms": 3000, "retention_ms": 1000}, 1),
        ({"now_ms": 3001, "retention_ms": 1000}, 2),
        ({"now_ms": 10**9, "retention_ms": 1000}, 3),  # never the active segment
        ({"now_ms": 10**9, "retention_ms": -1}, 0),
        # size: delete while the whole segment fits into the excess
        ({"retention_bytes": 250}, 1),
        ({"retention_bytes": 200}, 2),
        ({"retention_bytes": 0}, 3),
        ({"retention_bytes": 400}, 0),
        # log start offset: segments wholly below it
        ({"log_start_offset": 19}, 1),
        ({"log_start_offset": 20}, 2),
        # the high watermark bounds everything
        ({"now_ms": 10**9, "retention_ms": 0, "high_watermark": 25}, 2),
        ({"retention_bytes": 0, "high_watermark": 9}, 0),
        ({"retention_bytes": 0, "high_watermark": 10}, 1),
        # the longest prefix of the three reasons wins
        ({"now_ms": 2500, "retention_ms": 1000, "retention_bytes": 200}, 2),
    ],
)
def test_deletable_prefix(kwargs: dict[str, int], expected: int) -> None:
    args = {
        "now_ms": 0,
        "retention_ms": -1,
        "retention_bytes": -1,
        "high_watermark": 10**9,
        "log_start_offset": 0,
    }
    args.update(kwargs)
    assert deletable_prefix(FOUR, **args) == expected


def test_a_single_segment_is_never_deleted() -> None:
    one = segs((0, 10**9, 0))
    assert (
        deletable_prefix(
            one,
            now_ms=10**9,
            retention_ms=0,
            retention_bytes=0,
            high_watermark=10**9,
            log_start_offset=10**9,
        )
        == 0
    )


# ----------------------------------------------------------------- handle LRU


def test_handle_cache_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = FileHandleCache(max_open=2)
    paths = [tmp_path / f"f{i}" for i in range(3)]
    for path in paths:
        with cache.use(path, create=True) as fd:
            os.write(fd, path.name.encode())
    assert cache.open_count == 2
    with cache.use(paths[1]):
        pass  # f1 is now the most recent
    with cache.use(paths[0]) as fd:  # reopened; evicts f2, not f1
        assert os.pread(fd, 10, 0) == b"f0"
    assert cache.opens == 4
    with cache.use(paths[1]):
        pass
    assert cache.opens == 4
    cache.close_all()
    assert cache.open_count == 0


def test_pinned_handles_are_never_closed_under_the_user(tmp_path: Path) -> None:
    cache = FileHandleCache(max_open=1)
    a, b = tmp_path / "a", tmp_path / "b"
    with cache.use(a, create=True) as fd_a:
        with cache.use(b, create=True) as fd_b:
            assert cache.open_count == 2  # over the limit while both are pinned
            os.write(fd_a, b"A")
            os.write(fd_b, b"B")
        assert cache.open_count == 1
        os.write(fd_a, b"A")
    assert a.read_bytes() == b"AA" and b.read_bytes() == b"B"


def test_handle_cache_refuses_to_create_unless_asked(tmp_path: Path) -> None:
    cache = FileHandleCache(max_open=4)
    with pytest.raises(FileNotFoundError):
        with cache.use(tmp_path / "missing"):
            pass
    assert cache.open_count == 0
