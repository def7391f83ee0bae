"""A log's producer state: deduplication, gaps and fencing on append, carried to a follower by
replication, rebuilt after a restart (snapshot, or a scan without one) and after truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from leasehold.records import BatchBuilder, parse_header
from services.broker_agent.log import CorruptRecordError, InvalidRecordError, Log, LogConfig
from services.broker_agent.log import producer_snapshot as snapshots
from services.broker_agent.log.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)

T0 = 1_000_000
PID = 42


def batch(seq: int, count: int = 2, epoch: int = 0, pid: int = PID, value: bytes = b"v") -> bytes:
    builder = BatchBuilder()
    for _ in range(count):
        builder.append(value, T0)
    return builder.build(0, -1, pid, epoch, seq)


def open_log(path: Path, **config: int) -> Log:
    return Log.open(path, LogConfig(**config), clock=lambda: T0)


def test_a_retried_batch_is_stored_once_and_answered_with_its_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    first = log.append_batch_as_leader(batch(0), 1)
    second = log.append_batch_as_leader(batch(2), 1)
    again = log.append_batch_as_leader(batch(0), 1)

    assert (first.first_offset, second.first_offset) == (0, 2)
    assert (again.duplicate, again.first_offset, again.last_offset) == (True, 0, 1)
    assert log.log_end_offset == 4


def test_gaps_and_fenced_epochs_append_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_batch_as_leader(batch(0, epoch=3), 1)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_batch_as_leader(batch(5, epoch=3), 1)
    with pytest.raises(InvalidProducerEpochError):
        log.append_batch_as_leader(batch(2, epoch=2), 1)
    assert log.log_end_offset == 2
    assert log.append_batch_as_leader(batch(0, epoch=4), 1).first_offset == 2  # a bumped epoch


def test_produced_batches_are_checked_but_not_decoded(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    good = batch(0)
    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        log.append_batch_as_leader(bytes(corrupt), 1)
    with pytest.raises(CorruptRecordError, match="exactly one whole batch"):
        log.append_batch_as_leader(good + good, 1)
    half = BatchBuilder()
    half.append(b"v", T0)
    with pytest.raises(InvalidRecordError, match="base sequence must be -1"):
        log.append_batch_as_leader(half.build(0, -1, -1, -1, 3), 1)
    assert log.log_end_offset == 0


def test_the_leader_stamps_offset_and_epoch_and_keeps_the_rest(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append_batch_as_leader(batch(0), 1)
    sent = batch(2)
    log.append_batch_as_leader(sent, 9)
    stored = log.read(2, 10_000).records
    header = parse_header(stored)
    assert (header.base_offset, header.partition_leader_epoch) == (2, 9)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PID, 0, 2)
    assert stored[16:] == sent[16:]  # from the magic byte on: the producer's bytes


def test_a_follower_holds_the_state_when_it_becomes_leader(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader" / "t-0")
    follower = open_log(tmp_path / "follower" / "t-0")
    for seq in (0, 2, 4):
        leader.append_batch_as_leader(batch(seq), 1)
    follower.append_as_follower(leader.read(0, 100_000).records)

    assert follower.append_batch_as_leader(batch(4), 2).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        follower.append_batch_as_leader(batch(7), 2)
    assert follower.append_batch_as_leader(batch(6), 2).first_offset == 6


@pytest.mark.parametrize("snapshot", [True, False], ids=["from-snapshot", "by-scan"])
def test_state_survives_a_restart(tmp_path: Path, snapshot: bool) -> None:
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append_batch_as_leader(batch(0), 1)
    log.append_batch_as_leader(batch(0, pid=PID + 1), 1)
    log.close()
    assert snapshots.list_snapshots(path) == [4]
    if not snapshot:
        snapshots.delete_all(path)

    reopened = open_log(path)
    assert reopened.append_batch_as_leader(batch(0), 1).duplicate
    assert reopened.append_batch_as_leader(batch(0, pid=PID + 1), 1).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_batch_as_leader(batch(5), 1)


def test_a_corrupt_snapshot_is_ignored_and_the_log_scanned(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append_batch_as_leader(batch(0), 1)
    log.close()
    (file,) = path.glob("*.snapshot")
    file.write_bytes(file.read_bytes()[:-1] + b"\x00")

    reopened = open_log(path)
    assert reopened.append_batch_as_leader(batch(0), 1).duplicate
    assert not file.exists() or snapshots.read_latest(path, 10) is None


def test_rolling_a_segment_snapshots_the_state(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = open_log(path, segment_bytes=200)
    for seq in range(0, 20, 2):
        log.append_batch_as_leader(batch(seq, value=b"x" * 40), 1)
    assert len(log.segment_base_offsets) > 2
    assert snapshots.list_snapshots(path)[-1] == log.segment_base_offsets[-1]
    assert len(snapshots.list_snapshots(path)) == snapshots.KEEP


def test_truncation_forgets_the_batches_it_cut(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = open_log(path, segment_bytes=300)
    for seq in range(0, 12, 2):
        log.append_batch_as_leader(batch(seq, value=b"x" * 40), 1)
    log.truncate_to(6)  # keeps sequences 0-5

    assert log.log_end_offset == 6
    assert all(offset <= 6 for offset in snapshots.list_snapshots(path))
    assert not log.append_batch_as_leader(batch(6, value=b"x" * 40), 1).duplicate
    assert log.append_batch_as_leader(batch(4, value=b"x" * 40), 1).duplicate


def test_producers_whose_batches_are_gone_are_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = open_log(path)
    log.append_batch_as_leader(batch(0), 1)
    log.append_batch_as_leader(batch(0, pid=PID + 1), 1)
    log.update_high_watermark(4)
    log.maybe_increment_log_start_offset(2)
    # PID's batches are below the log start: it is unknown, and restarts its sequences.
    with pytest.raises(UnknownProducerIdError):
        log.append_batch_as_leader(batch(40), 1)
    assert log.append_batch_as_leader(batch(0, epoch=1), 1).first_offset == 4
    with pytest.raises(OutOfOrderSequenceError):
        log.append_batch_as_leader(batch(9, pid=PID + 1), 1)


def test_idle_producers_expire(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(producer_id_expiration_ms=10), clock=lambda: T0)
    log.append_batch_as_leader(batch(0), 1)
    log.delete_old_segments(now_ms=T0 + 100)
    with pytest.raises(UnknownProducerIdError):
        log.append_batch_as_leader(batch(2), 1)
    assert log.append_batch_as_leader(batch(0, epoch=1), 1).first_offset == 2
