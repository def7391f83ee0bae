"""The leader-epoch journal: records, torn tails, deferred batches, compaction, and the
LogManager's use of it (restart, deletion, logs from before the journal)."""

from __future__ import annotations

import errno
import os

import pytest

from services.broker_agent.log import Log, LogManager, Record, checkpoint
from services.broker_agent.log.epoch_file import (
    LEADER_EPOCH_CHECKPOINT,
    EpochStore,
    LeaderEpochFileCache,
)
from services.broker_agent.log.epoch_journal import (
    JOURNAL,
    EpochJournal,
    decode_records,
    encode_record,
)


def on_disk(data_dir) -> dict:
    """What a restart reads: the last record of every partition."""
    return decode_records((data_dir / JOURNAL).read_bytes())[0]


# ----------------------------------------------------------------- records


@pytest.mark.parametrize(
    "pairs", [[], [(0, 0)], [(1, 0), (4, 17), (9, 1_000_000_000_000)]], ids=["empty", "1", "3"]
)
def test_a_record_round_trips(pairs):
    data = encode_record(("orders.v2_x-y", 12), pairs)
    assert decode_records(data) == ({("orders.v2_x-y", 12): pairs}, len(data))


def test_the_last_record_of_a_partition_wins():
    data = b"".join(
        [
            encode_record(("a", 0), [(1, 0)]),
            encode_record(("b", 0), [(1, 0)]),
            encode_record(("a", 0), [(1, 0), (2, 5)]),
            encode_record(("b", 0), []),
        ]
    )
    assert decode_records(data)[0] == {("a", 0): [(1, 0), (2, 5)], ("b", 0): []}


@pytest.mark.parametrize(
    "damage",
    [
        lambda r: r[:-1],  # no newline: torn
        lambda r: r[: len(r) // 2],  # torn mid-line
        lambda r: r.replace(b" 5\n", b" 6\n"),  # bit rot: the CRC no longer matches
        lambda r: b"zz" + r[2:],  # not a CRC
    ],
    ids=["no-newline", "half", "crc-mismatch", "bad-crc-field"],
)
def test_replay_stops_at_a_damaged_record(damage):
    good = encode_record(("a", 0), [(1, 0)])
    bad = damage(encode_record(("a", 0), [(1, 0), (2, 5)]))
    assert decode_records(good + bad) == ({("a", 0): [(1, 0)]}, len(good))


def test_a_torn_tail_is_cut_before_the_next_append(tmp_path):
    good = encode_record(("a", 0), [(1, 0)])
    (tmp_path / JOURNAL).write_bytes(good + encode_record(("a", 0), [(2, 3)])[:7])
    journal = EpochJournal(tmp_path)
    assert journal.snapshot == {("a", 0): [(1, 0)]}
    journal.record(("b", 1), [(3, 4)])
    journal.close()
    assert (tmp_path / JOURNAL).read_bytes() == good + encode_record(("b", 1), [(3, 4)])


def test_staged_records_are_durable_only_after_sync(tmp_path):
    journal = EpochJournal(tmp_path)
    journal.stage(("a", 0), [(1, 0)])
    journal.stage(("a", 1), [(1, 0)])
    assert on_disk(tmp_path) == {}
    journal.sync()
    assert on_disk(tmp_path) == {("a", 0): [(1, 0)], ("a", 1): [(1, 0)]}
    journal.close()


def test_after_a_failed_fsync_every_later_write_is_refused(tmp_path, monkeypatch):
    journal = EpochJournal(tmp_path)

    def eio(fd):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fdatasync", eio)
    with pytest.raises(OSError, match="I/O error"):
        journal.record(("a", 0), [(1, 0)])
    monkeypatch.undo()
    with pytest.raises(OSError, match="journal failed"):
        journal.record(("a", 1), [(1, 0)])
    journal.close()


# ------------------------------------------------------------------ compaction


def test_compaction_keeps_live_state_and_records_written_meanwhile(tmp_path):
    journal = EpochJournal(tmp_path)
    for epoch in range(1, 50):
        journal.record(("a", 0), [(epoch, epoch * 10)])
    journal.record(("gone", 0), [(1, 0)])
    before = (tmp_path / JOURNAL).stat().st_size

    def capture():
        # A change lands while the capture runs: it must survive after the captured state.
        journal.record(("a", 0), [(50, 500)])
        return [(("a", 0), [(49, 490)]), (("b", 0), [(2, 0)])]

    journal.compact(capture)
    journal.record(("b", 0), [(2, 0), (3, 7)])
    journal.close()
    assert on_disk(tmp_path) == {("a", 0): [(50, 500)], ("b", 0): [(2, 0), (3, 7)]}
    assert (tmp_path / JOURNAL).stat().st_size < before
    assert not list(tmp_path.glob("*.tmp"))


def test_a_reopened_journal_counts_only_last_records_as_live(tmp_path, monkeypatch):
    monkeypatch.setattr("services.broker_agent.log.epoch_journal.COMPACT_MIN_BYTES", 1000)
    journal = EpochJournal(tmp_path)
    while (tmp_path / JOURNAL).stat().st_size <= 1000:
        journal.record(("a", 0), [(1, 0)])
    journal.close()
    reopened = EpochJournal(tmp_path)  # one live record in a file of many stale ones
    assert reopened.needs_compaction()
    reopened.close()


def test_compaction_is_due_only_when_large_and_mostly_stale(tmp_path, monkeypatch):
    monkeypatch.setattr("services.broker_agent.log.epoch_journal.COMPACT_MIN_BYTES", 1000)
    journal = EpochJournal(tmp_path)
    journal.record(("a", 0), [(1, 0)])
    assert not journal.needs_compaction()
    while (tmp_path / JOURNAL).stat().st_size <= 1000:
        journal.record(("a", 0), [(1, 0)])
    assert journal.needs_compaction()
    journal.compact(lambda: [(("a", 0), [(1, 0)])])
    assert not journal.needs_compaction()
    journal.close()


# --------------------------------------------------------- the journaled cache


def test_a_deferred_assignment_is_owed_until_the_journal_is_synced(tmp_path):
    journal = EpochJournal(tmp_path)
    cache = LeaderEpochFileCache(tmp_path, EpochStore(journal, ("t", 0), []))
    cache.assign(1, 0)  # direct: durable at once
    assert on_disk(tmp_path) == {("t", 0): [(1, 0)]}
    assert cache.owed() is None
    assert cache.assign(2, 5, defer=True)
    assert cache.unsynced
    assert on_disk(tmp_path) == {("t", 0): [(1, 0)]}
    number = cache.owed()
    assert number is not None and not journal.is_synced(number)
    journal.sync()
    assert journal.is_synced(number)
    assert not cache.unsynced and cache.owed() is None
    assert on_disk(tmp_path) == {("t", 0): [(1, 0), (2, 5)]}
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()
    journal.close()


def test_a_direct_change_after_a_deferred_one_writes_the_newest_state(tmp_path):
    journal = EpochJournal(tmp_path)
    cache = LeaderEpochFileCache(tmp_path, EpochStore(journal, ("t", 0), []))
    cache.assign(3, 10, defer=True)
    cache.truncate_from_end(0)
    assert not cache.unsynced
    assert on_disk(tmp_path) == {("t", 0): []}
    journal.close()


def test_a_standalone_cache_writes_its_own_file_even_when_asked_to_defer(tmp_path):
    cache = LeaderEpochFileCache(tmp_path)
    cache.assign(2, 5, defer=True)
    assert not cache.unsynced
    assert checkpoint.read_epoch_entries(tmp_path / LEADER_EPOCH_CHECKPOINT) == [(2, 5)]
    assert LeaderEpochFileCache(tmp_path).pairs() == [(2, 5)]


# ------------------------------------------------------------------ LogManager


def test_epochs_survive_a_restart_through_the_journal(tmp_path):
    manager = LogManager(tmp_path)
    log = manager.get_or_create("t", 0)
    log.assign_epoch_start_offset(3, 0)
    log.append_as_leader([Record(b"a"), Record(b"b")], 3)
    log.assign_epoch_start_offset(5, 2, defer_sync=True)
    assert manager.sync_pending([("t", 0)]) == {}
    log.append_as_leader([Record(b"c")], 5)
    manager.close()
    reopened = LogManager(tmp_path)
    assert reopened.get("t", 0).epoch_pairs() == [(3, 0), (5, 2)]
    reopened.close()


def test_a_deleted_log_leaves_nothing_for_a_new_one_of_the_same_name(tmp_path):
    manager = LogManager(tmp_path)
    manager.get_or_create("t", 0).assign_epoch_start_offset(3, 0)
    assert on_disk(tmp_path) == {("t", 0): [(3, 0)]}
    manager.delete("t", 0)
    assert manager.get_or_create("t", 0).epoch_pairs() == []
    manager.close()
    assert on_disk(tmp_path) == {("t", 0): []}  # the tombstone, written at the latest on close
    reopened = LogManager(tmp_path)
    assert reopened.get("t", 0).epoch_pairs() == []
    reopened.close()


def test_deleting_many_logs_costs_no_fsync_each(tmp_path, monkeypatch):
    manager = LogManager(tmp_path)
    for index in range(20):
        manager.get_or_create("t", index).assign_epoch_start_offset(1, 0)
    syncs = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: syncs.append(fd))
    for index in range(20):
        manager.delete("t", index)
    assert syncs == []
    manager.get_or_create("t", 0).assign_epoch_start_offset(2, 0)  # one sync takes all
    assert len(syncs) == 1
    monkeypatch.undo()
    manager.close()
    assert on_disk(tmp_path) == {("t", 0): [(2, 0)], **{("t", i): [] for i in range(1, 20)}}


def test_records_of_logs_that_no_longer_exist_are_dropped_at_start(tmp_path):
    journal = EpochJournal(tmp_path)
    journal.record(("gone", 0), [(1, 0)])  # its directory was removed before the tombstone
    journal.close()
    manager = LogManager(tmp_path)
    manager.close()
    assert on_disk(tmp_path) == {}


def test_a_log_from_before_the_journal_is_read_from_its_file_then_journaled(tmp_path):
    directory = tmp_path / "t-0"
    directory.mkdir()
    standalone = Log.open(directory)
    standalone.assign_epoch_start_offset(1, 0)
    standalone.append_as_leader([Record(b"a")] * 3, 1)
    standalone.assign_epoch_start_offset(2, 3)
    standalone.append_as_leader([Record(b"b")], 2)
    standalone.close()
    assert checkpoint.read_epoch_entries(directory / LEADER_EPOCH_CHECKPOINT) == [(1, 0), (2, 3)]
    manager = LogManager(tmp_path)
    assert manager.get("t", 0).epoch_pairs() == [(1, 0), (2, 3)]
    manager.close()
    assert on_disk(tmp_path) == {("t", 0): [(1, 0), (2, 3)]}
    (directory / LEADER_EPOCH_CHECKPOINT).unlink()  # the journal alone is read from now on
    reopened = LogManager(tmp_path)
    assert reopened.get("t", 0).epoch_pairs() == [(1, 0), (2, 3)]
    reopened.close()


def test_a_failed_journal_sync_takes_the_batch_offline(tmp_path, monkeypatch):
    manager = LogManager(tmp_path)
    tps = [("t", 0), ("t", 1)]
    manager.create_logs(tps)
    for topic, index in tps:
        manager.get_or_create(topic, index).assign_epoch_start_offset(1, 0, defer_sync=True)

    def eio():
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(manager._journal, "sync", eio)
    reasons = manager.sync_pending(tps)
    assert sorted(reasons) == tps
    assert all(manager.all_logs()[tp].is_offline for tp in tps)
    manager.close()
