"""Truncation, leader-epoch trimming, reopen, and crash recovery of torn tails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.broker_agent.log import (
    KafkaStorageError,
    Log,
    LogConfig,
    Record,
    build_batch,
    decode_records,
)
from services.broker_agent.log.epoch_file import LEADER_EPOCH_CHECKPOINT
from services.broker_agent.log.local_log import RECOVERY_POINT_FILE

T0 = 1_000_000
CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)


def open_log(directory: Path, config: LogConfig = CONFIG, **kwargs: int) -> Log:
    return Log.open(directory, config, clock=lambda: T0, **kwargs)


def fill(log: Log, batches: int, per_batch: int = 2, epoch_every: int = 5) -> None:
    for i in range(batches):
        records = [Record(b"%d-%d" % (i, j)) for j in range(per_batch)]
        log.append_as_leader(records, leader_epoch=i // epoch_every)


def all_records(log: Log) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = decode_records(log.read(offset, 10**6).records)
        out += [(r.offset, r.value) for r in chunk if r.offset >= offset]
        offset = chunk[-1].offset + 1
    return out


def epochs(log: Log) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in log.epoch_entries]


# ---------------------------------------------------------------- truncation


def test_truncate_to_inside_a_middle_segment(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 30)  # offsets 0..59, epochs 0..5 every 10 offsets
    log.high_watermark = 50
    assert len(log.segment_base_offsets) > 3
    expected = all_records(log)[:23]

    assert log.truncate_to(23) is True

    # Offset 22 and 23 share a batch: truncation drops whole batches.
    assert log.log_end_offset == 22
    assert all_records(log) == expected[:22]
    assert log.segment_base_offsets[-1] <= 22
    assert epochs(log) == [(0, 0), (1, 10), (2, 20)]
    assert log.high_watermark == 22
    assert log.end_offset_for_epoch(2) == (2, 22)
    # Appends continue at the new end, and reads see only them.
    log.append_as_leader([Record(b"new")], 7)
    assert all_records(log)[-1] == (22, b"new")
    assert epochs(log)[-1] == (7, 22)


def test_truncate_to_a_segment_boundary_keeps_that_segment_empty(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 30)
    boundary = log.segment_base_offsets[2]
    log.truncate_to(boundary)
    assert log.log_end_offset == boundary
    assert log.segment_base_offsets[-1] == boundary


def test_truncate_to_at_or_beyond_the_end_only_trims_the_epoch_cache(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 3)
    log.assign_epoch_start_offset(9, log.log_end_offset)  # a leader that never appended
    assert epochs(log) == [(0, 0), (9, 6)]
    assert log.truncate_to(6) is False
    assert log.truncate_to(100) is False
    assert (log.log_end_offset, epochs(log)) == (6, [(0, 0)])


def test_truncate_below_the_first_segment_truncates_fully(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 30)
    log.high_watermark = 60
    log.delete_old_segments(now_ms=T0 + 10**10)  # retention.ms default: 7 days
    first = log.segment_base_offsets[0]
    assert first > 0

    assert log.truncate_to(first - 1) is True
    assert log.segment_base_offsets == [first - 1]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (first - 1,) * 3
    assert epochs(log) == []


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 30)
    log.high_watermark = 40
    log.truncate_fully_and_start_at(500)

    assert log.segment_base_offsets == [500]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (500, 500, 500)
    assert epochs(log) == []
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{500:020d}.log"]
    log.append_as_follower(build_batch(500, 8, [Record(b"x")], T0))
    assert all_records(log) == [(500, b"x")]
    assert epochs(log) == [(8, 500)]


def test_truncation_survives_reopen_even_without_a_clean_close(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 30)
    log.flush()
    log.checkpoint_recovery_point()
    log.truncate_to(31)
    log.append_as_leader([Record(b"after")], 9)
    expected, expected_epochs = all_records(log), epochs(log)
    # The lowered recovery point was written at truncation time, before new appends.
    assert int((directory / RECOVERY_POINT_FILE).read_text().split()[2]) <= 30

    reopened = open_log(directory)  # "crash": the first instance is simply abandoned
    assert all_records(reopened) == expected
    assert epochs(reopened) == expected_epochs


# ------------------------------------------------------------------ reopen


def test_clean_close_and_reopen_restores_everything(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 40)
    log.high_watermark = 70
    log.maybe_increment_log_start_offset(13)
    expected, expected_epochs, bases = all_records(log), epochs(log), log.segment_base_offsets
    log.close()

    reopened = open_log(directory, high_watermark=70, log_start_offset=13)
    assert all_records(reopened) == expected
    assert epochs(reopened) == expected_epochs
    assert reopened.segment_base_offsets == bases
    assert (reopened.log_start_offset, reopened.high_watermark) == (13, 70)
    assert reopened.recovery_point == reopened.log_end_offset == 80


def test_checkpointed_values_are_clamped_to_the_recovered_log(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 5)
    log.close()
    reopened = open_log(directory, high_watermark=999, log_start_offset=999)
    assert (reopened.log_start_offset, reopened.high_watermark) == (10, 10)


def test_epoch_cache_is_trimmed_to_the_recovered_log_end(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 10)
    log.close()
    # A crash after the epoch checkpoint was written but before the batch reached the file.
    (directory / LEADER_EPOCH_CHECKPOINT).write_text("0\n4\n0 0\n1 10\n5 20\n6 25\n")
    reopened = open_log(directory)
    assert epochs(reopened) == [(0, 0), (1, 10)]
    assert (directory / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n1 10\n"


# ---------------------------------------------------------------- recovery


def _active_log_file(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def _last_batch_start(log: Log) -> int:
    segment = log._local.segments[-1]
    position, _ = segment.translate_offset(log.log_end_offset - 1)
    return position


@pytest.mark.parametrize(
    "damage",
    ["cut-mid-batch", "cut-mid-header", "garbage-appended", "zeroed-tail", "flipped-byte"],
)
@pytest.mark.parametrize("closed_cleanly", [False, True])
def test_recovery_drops_a_torn_tail(tmp_path: Path, damage: str, closed_cleanly: bool) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 22)
    if closed_cleanly:
        log.flush()
        log.checkpoint_recovery_point()
    last = _last_batch_start(log)
    whole = all_records(log)
    path = _active_log_file(directory)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        if damage == "cut-mid-batch":
            f.truncate(last + 30)
        elif damage == "cut-mid-header":
            f.truncate(last + 5)
        elif damage == "garbage-appended":
            f.seek(0, 2)
            f.write(b"\xde\xad\xbe\xef" * 40)
        elif damage == "zeroed-tail":
            f.seek(last)
            f.write(b"\0" * (size - last) + b"\0" * 100)
        else:  # a bit flipped inside the last batch's records: the CRC catches it
            f.seek(size - 2)
            byte = f.read(1)
            f.seek(size - 2)
            f.write(bytes([byte[0] ^ 0x40]))

    recovered = open_log(directory)

    survivors = whole if damage == "garbage-appended" else whole[:-2]
    assert all_records(recovered) == survivors
    assert recovered.log_end_offset == survivors[-1][0] + 1
    assert path.stat().st_size == (size if damage == "garbage-appended" else last)
    assert recovered.recovery_point == recovered.log_end_offset
    # It keeps working: the next append lands right after the last whole batch.
    recovered.append_as_leader([Record(b"next")], 4)
    assert all_records(recovered)[-1] == (recovered.log_end_offset - 1, b"next")


def test_recovery_deletes_segments_written_after_a_torn_one(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 40)
    bases = log.segment_base_offsets
    assert len(bases) >= 4
    # Tear the second segment: everything after it is unreachable garbage.
    victim = directory / f"{bases[1]:020d}.log"
    with open(victim, "r+b") as f:
        f.truncate(victim.stat().st_size - 3)

    recovered = open_log(directory)

    assert recovered.segment_base_offsets == bases[:2]
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{b:020d}.log" for b in bases[:2]]
    assert not list(directory.glob(f"{bases[2]:020d}.*"))
    assert recovered.log_end_offset < bases[2]


def test_damage_below_the_recovery_point_is_trusted_not_rescanned(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 40)
    log.close()
    first = directory / f"{0:020d}.log"
    # A flipped record byte in a flushed, older segment is not re-validated on open (Kafka
    # trusts data below the recovery point); the CRC still protects whoever reads it.
    with open(first, "r+b") as f:
        f.seek(first.stat().st_size - 1)
        f.write(b"\xff")
    reopened = open_log(directory)
    assert reopened.log_end_offset == 80


def test_an_empty_directory_with_stray_files_is_cleaned(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / f"{5:020d}.index").write_bytes(b"x" * 8)
    (directory / "leader-epoch-checkpoint.tmp").write_text("junk")
    log = open_log(directory, log_start_offset=5)
    assert log.segment_base_offsets == [5]
    assert not (directory / "leader-epoch-checkpoint.tmp").exists()
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)


def test_a_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, LogConfig(index_interval_bytes=64))
    fill(log, 30)
    log.close()
    index = directory / f"{0:020d}.index"
    good = index.read_bytes()
    assert len(good) >= 16
    index.write_bytes(good[:8] + b"\xff" * 8 + good[16:] + b"\x01\x02\x03")  # bad 2nd entry, torn
    reopened = open_log(directory, LogConfig(index_interval_bytes=64))
    assert [r[1] for r in all_records(reopened)] == [
        b"%d-%d" % (i, j) for i in range(30) for j in range(2)
    ]
    reopened.close()
    assert index.read_bytes() == good


_WRITER = """
import sys
from services.broker_agent.log import Log, LogConfig, Record
log = Log.open(sys.argv[1], LogConfig(segment_bytes=20_000, index_interval_bytes=512))
i = log.log_end_offset
print("ready", flush=True)
while True:
    log.append_as_leader([Record(b"%08d" % (i + j)) for j in range(3)], 1)
    i += 3
    if i % 60 == 0:
        log.flush()
"""


def test_kill_minus_nine_at_any_moment_recovers_to_the_last_whole_batch(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    root = Path(__file__).resolve().parents[3]
    for delay in (0.05, 0.2, 0.35):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(directory)],
            cwd=root,
            stdout=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
            time.sleep(delay)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log = open_log(directory, LogConfig(segment_bytes=20_000, index_interval_bytes=512))
        records = all_records(log)
        assert records, delay
        assert records == [(i, b"%08d" % i) for i in range(log.log_end_offset)]
        assert log.log_end_offset % 3 == 0
        log.close()


def test_segments_are_deleted_in_crash_safe_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.broker_agent.log.segment import LogSegment

    deleted: list[int] = []
    real_delete = LogSegment.delete

    def recording_delete(self: LogSegment) -> None:
        deleted.append(self.base_offset)
        real_delete(self)

    monkeypatch.setattr(LogSegment, "delete", recording_delete)
    log = open_log(tmp_path / "t-0")
    fill(log, 40)
    bases = log.segment_base_offsets
    log.high_watermark = 80
    # Retention removes oldest first: a crash half-way leaves a contiguous suffix.
    log.delete_old_segments(now_ms=T0 + 10**10)
    assert deleted == bases[:-1]
    deleted.clear()
    fill(log, 40)
    later = log.segment_base_offsets
    # Truncation removes newest first: a crash half-way leaves a contiguous prefix.
    log.truncate_to(later[1])
    assert deleted == sorted(later[2:], reverse=True)


def test_unreadable_data_below_the_recovery_point_is_a_storage_error(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, LogConfig(index_interval_bytes=64))
    fill(log, 10)
    log.close()
    with open(directory / f"{0:020d}.log", "r+b") as f:
        f.seek(16)
        f.write(b"\x09")  # the first batch's magic: not a batch any more
    with pytest.raises(KafkaStorageError):
        open_log(directory, LogConfig(index_interval_bytes=64))
