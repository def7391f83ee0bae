"""Batched durable writes: the BatchWriter, deferred epoch checkpoints, LogManager's batch path."""

from __future__ import annotations

import errno
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services.broker_agent.log import KafkaStorageError, LogConfig, LogManager, checkpoint
from services.broker_agent.log.durable import BATCH_TMP_SUFFIX, BatchWriter, PendingFile
from services.broker_agent.log.epoch_file import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from services.broker_agent.log.manager import PARTITION_METADATA


@pytest.fixture
def pool():
    with ThreadPoolExecutor(max_workers=3) as executor:
        yield executor


# Both strategies, each above and below the syncfs threshold.
STRATEGIES = [(True, 3), (True, 80), (False, 3), (False, 80)]


@pytest.mark.parametrize(("use_syncfs", "count"), STRATEGIES)
def test_every_file_replaced_and_no_temporaries_left(tmp_path, pool, use_syncfs, count):
    files = []
    for i in range(count):
        directory = tmp_path / f"d{i % 7}"
        directory.mkdir(exist_ok=True)
        (directory / f"f{i}").write_bytes(b"old")
        files.append(PendingFile(directory / f"f{i}", f"new {i}".encode(), key=i))
    failures = BatchWriter(pool, use_syncfs).write_batch(files, extra_dirs=[tmp_path])
    assert failures == {}
    assert [f.path.read_bytes() for f in files] == [f"new {i}".encode() for i in range(count)]
    assert list(tmp_path.rglob(f"*{BATCH_TMP_SUFFIX}")) == []


@pytest.mark.parametrize(("use_syncfs", "count"), STRATEGIES)
def test_a_failing_file_is_reported_under_its_key_only(tmp_path, pool, use_syncfs, count):
    files = [PendingFile(tmp_path / f"f{i}", b"x", key=("t", i)) for i in range(count)]
    files[1] = PendingFile(tmp_path / "missing-dir" / "f1", b"x", key=("t", 1))
    failures = BatchWriter(pool, use_syncfs).write_batch(files)
    assert list(failures) == [("t", 1)]
    assert failures[("t", 1)].errno == errno.ENOENT
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"f{i}" for i in range(count) if i != 1
    )


@pytest.mark.parametrize("use_syncfs", [True, False])
def test_a_refused_commit_keeps_the_newer_content(tmp_path, pool, use_syncfs):
    lock = threading.Lock()
    stale = [PendingFile(tmp_path / f"f{i}", b"stale", i, lock, lambda: False) for i in range(70)]
    for f in stale:
        f.path.write_bytes(b"newer")
    assert BatchWriter(pool, use_syncfs).write_batch(stale) == {}
    assert {f.path.read_bytes() for f in stale} == {b"newer"}
    assert list(tmp_path.glob(f"*{BATCH_TMP_SUFFIX}")) == []


def test_deferred_assignment_waits_for_the_batch(tmp_path, pool):
    cache = LeaderEpochFileCache(tmp_path)
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache.assign(1, 0)
    assert checkpoint.read_epoch_entries(path) == [(1, 0)]
    assert cache.pending() is None
    assert cache.assign(2, 5, defer=True)
    assert cache.unsynced
    assert checkpoint.read_epoch_entries(path) == [(1, 0)]
    pending = cache.pending("tp")
    assert pending is not None and pending.key == "tp"
    assert BatchWriter(pool).write_batch([pending]) == {}
    assert not cache.unsynced
    assert checkpoint.read_epoch_entries(path) == [(1, 0), (2, 5)]
    assert LeaderEpochFileCache(tmp_path).pairs() == [(1, 0), (2, 5)]


def test_a_direct_write_wins_over_an_older_batch_snapshot(tmp_path, pool):
    cache = LeaderEpochFileCache(tmp_path)
    cache.assign(3, 10, defer=True)
    old_snapshot = cache.pending()
    cache.truncate_from_end(0)  # written directly: the cache is now empty
    assert not cache.unsynced
    assert BatchWriter(pool).write_batch([old_snapshot]) == {}
    assert checkpoint.read_epoch_entries(tmp_path / LEADER_EPOCH_CHECKPOINT) == []


# ----------------------------------------------------------------- LogManager


def test_topic_config_applies_to_that_topic_only_and_once(tmp_path):
    manager = LogManager(tmp_path)
    manager.get_or_create("a", 0)
    manager.get_or_create("b", 0)
    small = LogConfig(segment_bytes=4096)
    manager.update_topic_config("a", small)
    assert manager.get("a", 0).config == small
    assert manager.get("b", 0).config == LogConfig()
    manager.get("a", 0).config = LogConfig(segment_bytes=8192)  # not through the manager
    manager.update_topic_config("a", small)  # unchanged for the manager: nothing walked
    assert manager.get("a", 0).config == LogConfig(segment_bytes=8192)
    manager.close()


def test_batch_path_makes_topic_ids_and_epochs_durable(tmp_path):
    manager = LogManager(tmp_path)
    tps = [("t", i) for i in range(5)]
    assert manager.create_logs([*tps, ("t", 0)]) == {}
    for topic, index in tps:
        log = manager.get_or_create(topic, index, "id-1", defer_sync=True)
        log.assign_epoch_start_offset(4, 0, defer_sync=True)
    directory = tmp_path / "t-0"
    assert not (directory / PARTITION_METADATA).exists()
    assert not (directory / LEADER_EPOCH_CHECKPOINT).exists()
    assert manager.sync_pending(tps) == {}
    assert manager.sync_pending(tps) == {}  # nothing owed any more
    manager.close()
    epochs = [
        checkpoint.read_epoch_entries(tmp_path / f"t-{i}" / LEADER_EPOCH_CHECKPOINT)
        for i in range(5)
    ]
    assert epochs == [[(4, 0)]] * 5
    reopened = LogManager(tmp_path)
    assert [reopened.topic_id(*tp) for tp in tps] == ["id-1"] * 5
    reopened.close()


def test_a_failed_batch_file_takes_its_log_offline(tmp_path, monkeypatch):
    manager = LogManager(tmp_path)
    manager.create_logs([("t", 0), ("t", 1)])
    for index in (0, 1):
        manager.get_or_create("t", index, "id-1", defer_sync=True)
    eio = OSError(errno.EIO, "I/O error")
    monkeypatch.setattr(manager._writer, "write_batch", lambda files, extra: {("t", 1): eio})
    reasons = manager.sync_pending([("t", 0), ("t", 1)])
    assert list(reasons) == [("t", 1)]
    assert "I/O error" in reasons[("t", 1)]
    assert manager.get("t", 0) is not None
    with pytest.raises(KafkaStorageError):
        manager.get("t", 1)
    manager.close()


def test_create_logs_reports_an_unusable_directory(tmp_path):
    manager = LogManager(tmp_path)
    (tmp_path / "t-1").write_text("a file where the log directory should be")
    failures = manager.create_logs([("t", 0), ("t", 1)])
    assert list(failures) == [("t", 1)]
    assert isinstance(failures[("t", 1)], KafkaStorageError)
    assert manager.get("t", 0) is not None
    manager.close()


def test_data_dir_entry_of_new_logs_is_synced(tmp_path, monkeypatch):
    manager = LogManager(tmp_path)
    seen: list[list[Path]] = []
    real = manager._writer.write_batch
    monkeypatch.setattr(
        manager._writer,
        "write_batch",
        lambda files, extra: seen.append(list(extra)) or real(files, extra),
    )
    manager.create_logs([("t", 0)])
    manager.sync_pending([("t", 0)])
    manager.sync_pending([("t", 0)])
    assert seen == [[tmp_path], []]
    manager.close()
