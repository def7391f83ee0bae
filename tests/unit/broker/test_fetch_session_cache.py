"""The leader's fetch session cache (KIP-227): session fields, epochs, eviction, and the per-
session bookkeeping that decides which partitions a round reads."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import pytest

from services.broker_agent.leader.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    MAX_EPOCH,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    FetchSessionConfig,
    next_epoch,
)
from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.signals import ChangeSignal

A, B, C = (TopicPartition("t", p) for p in range(3))
FOLLOWER, OTHER_FOLLOWER, CONSUMER = 2, 3, -1


def seeded_cache(**config) -> FetchSessionCache:
    return FetchSessionCache(FetchSessionConfig(**config), random.Random(7))


def first_ids(count: int) -> list[int]:
    rng = random.Random(7)
    return [rng.randint(1, MAX_EPOCH) for _ in range(count)]


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [(0, 1), (1, 2), (41, 42), (MAX_EPOCH - 1, MAX_EPOCH), (MAX_EPOCH, 1)],
)
def test_next_epoch_counts_up_and_wraps_to_one(epoch, expected):
    assert next_epoch(epoch) == expected


def test_sessionless_request_gets_no_session():
    cache = seeded_cache()
    found = cache.lookup(FOLLOWER, 0, FINAL_EPOCH, [], 0)
    assert (found.error, found.session, found.full, len(cache)) == (Code.NONE, None, True, 0)


def test_initial_epoch_opens_a_session_expecting_epoch_one():
    cache = seeded_cache()
    found = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 100)
    session = found.session
    assert (found.error, found.full) == (Code.NONE, True)
    assert (session.id, session.replica_id, session.epoch, session.last_used_ms) == (
        first_ids(1)[0],
        FOLLOWER,
        1,
        100,
    )
    assert cache.get(session.id) is session


@pytest.mark.parametrize(
    ("replica_id", "epoch", "known_id", "error"),
    [
        (FOLLOWER, 1, False, Code.FETCH_SESSION_ID_NOT_FOUND),  # no such session
        (OTHER_FOLLOWER, 1, True, Code.FETCH_SESSION_ID_NOT_FOUND),  # someone else's
        (FOLLOWER, 2, True, Code.INVALID_FETCH_SESSION_EPOCH),  # skipped an epoch
        (FOLLOWER, -2, True, Code.INVALID_FETCH_SESSION_EPOCH),  # not an epoch at all
        (FOLLOWER, 1, True, Code.NONE),
    ],
)
def test_incremental_requests_need_the_session_and_its_epoch(replica_id, epoch, known_id, error):
    cache = seeded_cache()
    session = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 0).session
    session_id = session.id if known_id else session.id + 1
    found = cache.lookup(replica_id, session_id, epoch, [], 10)
    assert found.error == error
    if error == Code.NONE:
        assert (found.session, found.full, session.epoch, session.last_used_ms) == (
            session,
            False,
            2,
            10,
        )
    else:
        assert (found.session, session.epoch) == (None, 1)


def test_incremental_request_forgets_partitions():
    cache = seeded_cache()
    session = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 0).session
    cached = {tp: session.put(tp, f"spec-{tp.partition}") for tp in (A, B, C)}
    session.unsettled.add(cached[B])
    session.note_read(cached[B], 0, retry=True)
    cache.lookup(FOLLOWER, session.id, 1, [B, TopicPartition("gone", 0)], 0)
    assert list(session.partitions) == [A, C]
    assert (session.unsettled, list(session.retry_order)) == (set(), [])
    assert [cached[tp].forgotten for tp in (A, B, C)] == [False, True, False]


@pytest.mark.parametrize(("epoch", "reopens"), [(INITIAL_EPOCH, True), (FINAL_EPOCH, False)])
def test_full_requests_close_the_named_session(epoch, reopens):
    cache = seeded_cache()
    old = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 0).session
    found = cache.lookup(FOLLOWER, old.id, epoch, [], 0)
    assert old.closed and cache.get(old.id) is None
    assert (found.session is not None, len(cache)) == (reopens, 1 if reopens else 0)


def test_sessions_idle_past_the_timeout_are_dropped():
    cache = seeded_cache(idle_timeout_ms=1_000)
    idle = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 0).session
    busy = cache.lookup(OTHER_FOLLOWER, 0, INITIAL_EPOCH, [], 500).session
    cache.lookup(OTHER_FOLLOWER, busy.id, 1, [], 1_200)
    found = cache.lookup(FOLLOWER, idle.id, 1, [], 1_200)
    assert found.error == Code.FETCH_SESSION_ID_NOT_FOUND
    assert (idle.closed, busy.closed, len(cache)) == (True, False, 1)


@pytest.mark.parametrize(
    ("holders", "newcomer", "evicted", "opened"),
    [
        # A follower may take a consumer's place, the least recently used one first.
        ([CONSUMER, CONSUMER], FOLLOWER, 0, True),
        ([FOLLOWER, CONSUMER], OTHER_FOLLOWER, 1, True),
        # Followers are never evicted for anyone; consumers never evict.
        ([FOLLOWER, OTHER_FOLLOWER], FOLLOWER, None, False),
        ([CONSUMER, CONSUMER], CONSUMER, None, False),
    ],
)
def test_a_full_cache_privileges_followers(holders, newcomer, evicted, opened):
    cache = seeded_cache(max_sessions=2)
    sessions = [cache.lookup(r, 0, INITIAL_EPOCH, [], i).session for i, r in enumerate(holders)]
    found = cache.lookup(newcomer, 0, INITIAL_EPOCH, [], 10)
    assert (found.error, found.session is not None) == (Code.NONE, opened)
    assert [s.closed for s in sessions] == [i == evicted for i in range(len(holders))]
    assert len(cache) == 2


def test_retry_picks_partitions_read_longest_ago():
    session = FetchSession(1, FOLLOWER, 1, 0)
    for tp, read_ms in ((A, 100), (C, 200), (B, 300)):  # reads happen in time order
        session.note_read(session.put(tp, "spec"), read_ms, retry=True)
    session.note_read(session.partitions[A], 400, retry=True)  # read again: goes to the back

    def due(now_ms: int) -> list[TopicPartition]:
        return [cached.tp for cached in session.due_for_retry(now_ms, 1_000)]

    assert (due(1_100), due(1_250), due(1_300), due(1_400)) == ([], [C], [C, B], [C, B, A])
    session.note_read(session.partitions[C], 1_400, retry=False)  # no longer needs a retry
    assert due(2_000) == [B, A]


def test_a_partition_is_fetched_at_each_request_of_its_session_until_forgotten():
    cache = seeded_cache()
    session = cache.lookup(FOLLOWER, 0, INITIAL_EPOCH, [], 100).session
    cached = {tp: session.put(tp, "spec") for tp in (A, B)}
    assert [cached[tp].last_fetch_ms() for tp in (A, B)] == [100, 100]
    cache.lookup(FOLLOWER, session.id, 1, [B], 250)  # names neither; forgets B
    assert [cached[tp].last_fetch_ms() for tp in (A, B)] == [250, None]
    cache.remove(session.id)  # closed: the last request stays the last fetch
    cache.lookup(OTHER_FOLLOWER, 0, INITIAL_EPOCH, [], 900)
    assert (session.closed, cached[A].last_fetch_ms()) == (True, 250)


async def test_a_change_signal_marks_the_partition_dirty_once_armed():
    session = FetchSession(1, FOLLOWER, 1, 0)
    signals = {tp: ChangeSignal() for tp in (A, B)}
    cached = {tp: session.put(tp, "spec") for tp in (A, B)}
    for tp in (A, B):
        session.arm(cached[tp], signals[tp])
    session.arm(cached[A], signals[A])  # arming twice attaches one callback
    signals[A].notify()
    signals[A].notify()  # nobody re-armed: the second change is not seen twice
    await asyncio.sleep(0)
    assert (session.dirty, session.wake.is_set(), cached[A].armed) == ({cached[A]}, True, None)
    assert session.take_dirty() == {cached[A]}
    assert (session.dirty, session.wake.is_set()) == (set(), False)
    session.forget(B)
    signals[B].notify()  # forgotten: its callback was removed
    await asyncio.sleep(0)
    assert session.dirty == set()


async def test_a_closed_session_ignores_changes_and_wakes_its_waiter():
    session = FetchSession(1, FOLLOWER, 1, 0)
    signal = ChangeSignal()
    session.arm(session.put(A, "spec"), signal)
    session.close()
    signal.notify()
    await asyncio.sleep(0)
    assert (session.dirty, session.wake.is_set()) == (set(), True)


@pytest.mark.parametrize(
    ("lag_ms", "retry_ms"), [(30_000, 3_000), (100_000, 3_000), (10_000, 1_000), (500, 100)]
)
def test_retry_interval_follows_the_allowed_lag(lag_ms, retry_ms):
    assert FetchSessionConfig.for_lag(lag_ms).retry_ms == retry_ms


@pytest.mark.parametrize(
    ("error", "records", "diverging", "hw", "log_start", "news"),
    [
        (Code.NONE, b"", None, 5, 0, False),  # what was last answered
        (Code.NONE, b"", None, 6, 0, True),  # the watermark moved
        (Code.NONE, b"", None, 5, 2, True),  # the log start moved
        (Code.NONE, b"x", None, 5, 0, True),
        (Code.NONE, b"", (3, 4), 5, 0, True),
        (Code.NOT_LEADER_OR_FOLLOWER, b"", None, -1, -1, True),
    ],
)
def test_what_an_incremental_answer_includes(error, records, diverging, hw, log_start, news):
    @dataclass(frozen=True)
    class Answer:
        error: int
        records: bytes
        diverging_epoch: object
        high_watermark: int
        log_start_offset: int

    cached = CachedPartition(A, "spec", sent_high_watermark=5, sent_log_start_offset=0)
    assert cached.has_news(Answer(error, records, diverging, hw, log_start)) is news
