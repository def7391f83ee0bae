"""Deferred leader-epoch changes are staged in the journal when made and owed until a sync has
written them: a LeaderAndIsr's new epochs cost one fdatasync, and none when nothing is owed."""

from __future__ import annotations

import errno
import os

import crc32c
import pytest

from services.broker_agent.log import LogManager
from services.broker_agent.log.epoch_file import EpochStore, LeaderEpochFileCache
from services.broker_agent.log.epoch_journal import (
    JOURNAL,
    EpochJournal,
    decode_records,
    encode_record,
)


def on_disk(data_dir) -> dict:
    return decode_records((data_dir / JOURNAL).read_bytes())[0]


@pytest.mark.parametrize(
    ("tp", "pairs", "body"),
    [
        (("t", 0), [], b"t 0 0"),
        (("orders.v2_x-y", 12), [(3, 0)], b"orders.v2_x-y 12 1 3 0"),
        (("a", 7), [(1, 0), (4, 17), (9, 1_000_000_000_000)], b"a 7 3 1 0 4 17 9 1000000000000"),
    ],
)
def test_the_record_format(tp, pairs, body):
    assert encode_record(tp, pairs) == b"%08x %s\n" % (crc32c.crc32c(body), body)


@pytest.fixture
def syncs(monkeypatch):
    """The fdatasync calls made from now on (they still happen)."""
    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (calls.append(fd), real(fd))[1])
    return calls


def test_records_are_numbered_and_synced_by_whichever_sync_comes(tmp_path):
    journal = EpochJournal(tmp_path)
    numbers = [journal.stage(("t", i), [(1, i)]) for i in range(3)]
    assert numbers == [1, 2, 3]
    assert [journal.is_synced(n) for n in numbers] == [False, False, False]
    journal.record(("u", 0), [(2, 0)])  # another partition's direct write takes them along
    assert [journal.is_synced(n) for n in (*numbers, 4)] == [True, True, True, True]
    later = journal.stage(("t", 0), [(1, 0), (5, 9)])
    assert (later, journal.is_synced(later)) == (5, False)
    journal.close()
    assert on_disk(tmp_path) == {
        ("t", 0): [(1, 0), (5, 9)],
        ("t", 1): [(1, 1)],
        ("t", 2): [(1, 2)],
        ("u", 0): [(2, 0)],
    }


def test_a_failed_sync_leaves_its_records_owed_for_good(tmp_path, monkeypatch):
    journal = EpochJournal(tmp_path)
    number = journal.stage(("t", 0), [(1, 0)])

    def eio(_fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fdatasync", eio)
    with pytest.raises(OSError):
        journal.sync()
    monkeypatch.undo()
    with pytest.raises(OSError):  # the journal refuses every later write
        journal.record(("t", 1), [(1, 0)])
    assert not journal.is_synced(number)
    journal.close()


@pytest.mark.parametrize(
    ("changes", "owed_after", "expected_on_disk"),
    [
        # A deferred assignment: staged at once, not on disk, owed.
        ([("assign", 2, 5, True)], True, [(1, 0)]),
        # ... then a direct change of the same log: both written, the newest state wins.
        ([("assign", 2, 5, True), ("truncate_from_end", 5)], False, [(1, 0)]),
        ([("assign", 2, 5, True), ("assign", 3, 9, False)], False, [(1, 0), (2, 5), (3, 9)]),
        # Two deferred ones: the second is the one owed.
        ([("assign", 2, 5, True), ("assign", 3, 9, True)], True, [(1, 0)]),
    ],
)
def test_a_deferred_change_is_staged_when_made(tmp_path, changes, owed_after, expected_on_disk):
    journal = EpochJournal(tmp_path)
    cache = LeaderEpochFileCache(tmp_path, EpochStore(journal, ("t", 0), []))
    cache.assign(1, 0)
    for name, *args in changes:
        getattr(cache, name)(*args)
    assert (cache.owed() is not None, cache.unsynced) == (owed_after, owed_after)
    assert on_disk(tmp_path)[("t", 0)] == expected_on_disk
    journal.sync()
    assert (cache.owed(), cache.unsynced) == (None, False)
    assert on_disk(tmp_path)[("t", 0)] == cache.pairs()
    journal.close()


@pytest.mark.parametrize(
    ("leaders", "followers", "fdatasyncs"),
    [(3, 3, 1), (1, 0, 1), (0, 4, 0)],
    ids=["both", "leader", "followers-only"],
)
def test_sync_pending_writes_the_owed_epochs_with_one_fdatasync(
    tmp_path, syncs, leaders, followers, fdatasyncs
):
    manager = LogManager(tmp_path)
    tps = [("t", i) for i in range(leaders + followers)]
    manager.create_logs(tps)
    manager.sync_pending(tps)  # the new directories
    syncs.clear()
    for topic, index in tps[:leaders]:
        manager.get(topic, index).assign_epoch_start_offset(4, 0, defer_sync=True)
    assert manager.sync_pending(tps) == {}
    assert len(syncs) == fdatasyncs
    assert [manager.get(*tp).epoch_record_owed() for tp in tps] == [None] * len(tps)
    assert on_disk(tmp_path) == {tp: [(4, 0)] for tp in tps[:leaders]}
    manager.close()


def test_a_failed_journal_fails_only_the_logs_that_owed_it(tmp_path, monkeypatch):
    manager = LogManager(tmp_path)
    tps = [("t", 0), ("t", 1), ("t", 2)]
    manager.create_logs(tps)
    manager.sync_pending(tps)
    manager.get("t", 0).assign_epoch_start_offset(1, 0, defer_sync=True)
    manager.get("t", 2).assign_epoch_start_offset(1, 0, defer_sync=True)

    def eio(_fd: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fdatasync", eio)
    assert sorted(manager.sync_pending(tps)) == [("t", 0), ("t", 2)]
    monkeypatch.undo()
    assert [manager.all_logs()[tp].is_offline for tp in tps] == [True, False, True]
    manager.close()
