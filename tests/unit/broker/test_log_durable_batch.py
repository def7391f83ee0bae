"""Batched durable writes: the BatchWriter and LogManager's batch path (epochs: see
test_log_epoch_journal)."""

from __future__ import annotations

import errno
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services.broker_agent.log import KafkaStorageError, LogConfig, LogManager
from services.broker_agent.log.durable import BATCH_TMP_SUFFIX, BatchWriter, PendingFile
from services.broker_agent.log.epoch_journal import JOURNAL, decode_records
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


# ----------------------------------------------------------------- LogManager


def journal_entries(data_dir: Path) -> dict:
    """What a restart would read from the epoch journal."""
    return decode_records((data_dir / JOURNAL).read_bytes())[0]


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
    assert journal_entries(tmp_path) == {}
    assert manager.sync_pending(tps) == {}
    assert journal_entries(tmp_path) == {tp: [(4, 0)] for tp in tps}
    assert manager.sync_pending(tps) == {}  # nothing owed any more
    manager.close()
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
