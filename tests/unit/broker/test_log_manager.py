"""LogManager: lazy, bounded file handles; checkpoints; topic ids; deletion; retention."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.broker_agent.log import (
    InconsistentTopicIdError,
    KafkaStorageError,
    LogConfig,
    LogManager,
    Record,
    checkpoint,
    decode_records,
)
from services.broker_agent.log.checkpoint import read_partition_offsets
from services.broker_agent.log.manager import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    log_dir_name,
    parse_log_dir_name,
)

T0 = 1_000_000


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def manager(data_dir: Path, **kwargs: object) -> LogManager:
    return LogManager(data_dir, clock=lambda: T0, **kwargs)  # type: ignore[arg-type]


def test_two_thousand_logs_stay_within_the_handle_limit(tmp_path: Path) -> None:
    baseline = open_fds()
    logs = manager(tmp_path, max_open_files=32)
    peak = 0
    for i in range(2000):
        log = logs.get_or_create(f"t{i % 50}", i // 50, topic_id=f"id-{i % 50}")
        log.append_as_leader([Record(b"%d" % i)], 0)
        if i % 97 == 0:
            peak = max(peak, open_fds())
    assert logs.handles.open_count <= 32
    assert peak - baseline <= 32 + 4  # the cache plus a transient directory/temp fd

    # Every log still answers: closed handles are reopened on demand.
    for i in (0, 999, 1999):
        log = logs.get(f"t{i % 50}", i // 50)
        assert [r.value for r in decode_records(log.read(0, 1000).records)] == [b"%d" % i]
    assert open_fds() - baseline <= 32 + 4
    logs.close()
    assert open_fds() <= baseline

    reopened = manager(tmp_path, max_open_files=32)
    assert len(reopened.all_logs()) == 2000
    assert open_fds() - baseline <= 32 + 4
    assert reopened.get("t7", 13).log_end_offset == 1
    reopened.close()


def test_an_unchanged_offsets_checkpoint_is_not_rewritten(tmp_path: Path, monkeypatch) -> None:
    written: list[str] = []
    real_write = checkpoint.write_partition_offsets

    def counting_write(path: Path, offsets) -> None:
        written.append(path.name)
        real_write(path, offsets)

    monkeypatch.setattr(checkpoint, "write_partition_offsets", counting_write)
    logs = manager(tmp_path)
    log = logs.get_or_create("t", 0)
    log.append_as_leader([Record(b"x")] * 3, 1)
    logs.checkpoint_high_watermarks()
    logs.checkpoint_high_watermarks()  # nothing moved
    assert written == [HIGH_WATERMARK_CHECKPOINT]
    log.high_watermark = 2
    logs.checkpoint_high_watermarks()
    logs.checkpoint_log_start_offsets()  # another file: its own record of what it holds
    assert written == [HIGH_WATERMARK_CHECKPOINT] * 2 + [LOG_START_OFFSET_CHECKPOINT]
    assert read_partition_offsets(tmp_path / HIGH_WATERMARK_CHECKPOINT) == {("t", 0): 2}
    logs.close()


def test_high_watermark_and_log_start_checkpoints_survive_reopen(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    a = logs.get_or_create("orders", 0)
    b = logs.get_or_create("orders.v2", 3)
    for log in (a, b):
        log.append_as_leader([Record(b"x")] * 10, 1)
    a.high_watermark = 7
    b.high_watermark = 10
    b.maybe_increment_log_start_offset(4)
    logs.checkpoint_high_watermarks()
    logs.checkpoint_log_start_offsets()

    assert read_partition_offsets(tmp_path / HIGH_WATERMARK_CHECKPOINT) == {
        ("orders", 0): 7,
        ("orders.v2", 3): 10,
    }
    assert (tmp_path / LOG_START_OFFSET_CHECKPOINT).read_text() == (
        "0\n2\norders 0 0\norders.v2 3 4\n"
    )
    logs.close()

    reopened = manager(tmp_path)
    a2, b2 = reopened.get("orders", 0), reopened.get("orders.v2", 3)
    assert (a2.high_watermark, a2.log_start_offset, a2.log_end_offset) == (7, 0, 10)
    assert (b2.high_watermark, b2.log_start_offset, b2.log_end_offset) == (10, 4, 10)
    reopened.close()


def test_checkpoints_without_a_clean_close(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    log = logs.get_or_create("t", 0)
    log.append_as_leader([Record(b"x")] * 5, 1)
    log.high_watermark = 3
    logs.checkpoint_high_watermarks()
    log.high_watermark = 5  # not checkpointed: lost in the "crash"
    logs.handles.close_all()

    reopened = manager(tmp_path)
    assert (reopened.get("t", 0).high_watermark, reopened.get("t", 0).log_end_offset) == (3, 5)


def test_topic_id_is_recorded_and_enforced(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    logs.get_or_create("t", 0, topic_id="AAA")
    assert (tmp_path / "t-0" / "partition.metadata").read_text() == ("version: 0\ntopic_id: AAA\n")
    assert logs.get_or_create("t", 0, topic_id="AAA") is logs.get("t", 0)
    assert logs.get_or_create("t", 0) is logs.get("t", 0)  # unknown id: no check
    with pytest.raises(InconsistentTopicIdError):
        logs.get_or_create("t", 0, topic_id="BBB")
    logs.close()

    reopened = manager(tmp_path)
    assert reopened.topic_id("t", 0) == "AAA"
    with pytest.raises(InconsistentTopicIdError):
        reopened.get_or_create("t", 0, topic_id="BBB")


def test_delete_removes_the_directory_and_the_checkpoint_entries(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    logs.get_or_create("t", 0).append_as_leader([Record(b"x")], 0)
    logs.get_or_create("t", 1)
    assert logs.delete("t", 0) is True
    assert logs.delete("t", 0) is False
    assert logs.get("t", 0) is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["t-1"]
    logs.checkpoint_high_watermarks()
    assert read_partition_offsets(tmp_path / HIGH_WATERMARK_CHECKPOINT) == {("t", 1): 0}
    # Recreating starts from scratch.
    assert logs.get_or_create("t", 0).log_end_offset == 0


def test_an_interrupted_delete_is_finished_at_load(tmp_path: Path) -> None:
    leftover = tmp_path / "t-0.0123abcd-delete"
    leftover.mkdir()
    (leftover / f"{0:020d}.log").write_bytes(b"whatever")
    logs = manager(tmp_path)
    assert logs.all_logs() == {}
    assert not leftover.exists()


def test_per_topic_config_and_retention_across_logs(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    short = LogConfig(segment_ms=10, retention_ms=100)
    hot = logs.get_or_create("hot", 0, config=short)
    cold = logs.get_or_create("cold", 0)
    for i in range(4):
        hot.append_as_leader([Record(b"h")], 0, now_ms=T0 + 20 * i)
        cold.append_as_leader([Record(b"c")], 0, now_ms=T0 + 20 * i)
    hot.high_watermark = cold.high_watermark = 4
    assert hot.segment_base_offsets == [0, 1, 2, 3]
    assert cold.segment_base_offsets == [0]

    assert logs.run_retention(now_ms=T0 + 130) == {("hot", 0): 2}  # T0, T0+20 are > 100 ms old
    assert (hot.log_start_offset, cold.log_start_offset) == (2, 0)

    logs.update_topic_config("hot", {"retention.ms": "-1", "segment.ms": "10"})
    assert hot.config == LogConfig(retention_ms=-1, segment_ms=10)
    assert logs.run_retention(now_ms=T0 + 10**9) == {}
    with pytest.raises(ValueError):
        logs.update_topic_config("hot", {"retention.ms": "soon"})
    assert hot.config.retention_ms == -1
    assert logs.get_or_create("fresh", 0, config={"segment.bytes": "2048"}).config == LogConfig(
        segment_bytes=2048
    )


@pytest.mark.parametrize(
    ("topic", "partition"),
    [("../etc", 0), ("a/b", 1), ("", 0), ("..", 0), ("x" * 250, 0), ("t", -1)],
)
def test_hostile_names_are_refused(tmp_path: Path, topic: str, partition: int) -> None:
    with pytest.raises(ValueError):
        manager(tmp_path).get_or_create(topic, partition)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", ("orders", 0)),
        ("my-topic-12", ("my-topic", 12)),
        ("a.b_c-3", ("a.b_c", 3)),
        ("orders", None),
        ("orders-x", None),
        ("orders-0.5a2e-delete", None),
        ("-1", None),
    ],
)
def test_log_dir_names(name: str, expected: tuple[str, int] | None) -> None:
    assert parse_log_dir_name(name) == expected
    if expected is not None:
        assert log_dir_name(*expected) == name


def test_a_log_that_cannot_be_loaded_is_offline(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    logs.get_or_create("t", 0).append_as_leader([Record(b"x")], 1)
    logs.get_or_create("u", 0)
    logs.close()
    (tmp_path / "t-0" / "recovery-point").write_text("not a checkpoint")

    reopened = manager(tmp_path)
    with pytest.raises(KafkaStorageError):
        reopened.get("t", 0)
    with pytest.raises(KafkaStorageError):
        reopened.get_or_create("t", 0)
    assert reopened.get("u", 0) is not None
    # Deleting is how a broken replica gets cleaned up.
    assert reopened.delete("t", 0) is True
    assert reopened.offline == {}
    assert not (tmp_path / "t-0").exists()
    assert reopened.get_or_create("t", 0).log_end_offset == 0


def test_an_io_error_takes_only_that_log_offline(tmp_path: Path) -> None:
    logs = manager(tmp_path)
    broken = logs.get_or_create("t", 0)
    healthy = logs.get_or_create("u", 0)
    broken.append_as_leader([Record(b"x")], 0)
    for path in (tmp_path / "t-0").glob("*.log"):
        logs.handles.close(path)
        path.unlink()  # the disk "loses" the active segment

    with pytest.raises(KafkaStorageError):
        broken.append_as_leader([Record(b"y")], 0)
    with pytest.raises(KafkaStorageError):  # and it stays offline
        broken.read(0, 100)
    with pytest.raises(KafkaStorageError):
        logs.get("t", 0)
    healthy.append_as_leader([Record(b"ok")], 0)
    assert logs.run_retention(now_ms=T0) == {}
    logs.close()  # skips the offline log, still writes checkpoints
    assert read_partition_offsets(tmp_path / HIGH_WATERMARK_CHECKPOINT) == {
        ("t", 0): 0,
        ("u", 0): 0,
    }
