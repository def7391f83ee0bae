"""Incremental fetch sessions on the leader (KIP-227; Kafka's FetchSession / FetchSessionCache).

A follower fetching 10,000 partitions used to name all of them in every request, and the leader
read and answered all of them: O(partitions) per round even when nothing moved. In a session the
leader keeps each partition's last request (fetch offset, epochs, log start) and the watermarks
it last answered, so the follower sends only partitions whose fetch state changed (or that it
drops, as *forgotten*), and the leader answers only partitions with records, a moved high
watermark or log start, a diverging epoch or an error.

The leader must still learn everything a full fetch would tell it:

- a partition the request omits keeps its last fetch offset in the session; a follower whose
  offset advanced sends it, so follower log end offsets and the high watermark stay exact;
- a partition whose leader state moves (append, high watermark, leadership) is marked *dirty*
  by a callback on its ``ChangeSignal``, so it is read in the next (or the waiting) round
  without the leader touching idle partitions at all;
- a partition read with data still to send, or an error, stays *unsettled* and is read every
  round until the follower's request shows it settled (as a full fetch would re-read it);
- an idle partition is re-recorded as fetched (same offset) at least every ``refresh_ms``,
  which keeps the follower's caught-up time fresh for the ISR shrink check and retries ISR
  expansion. This is the one approximation: Kafka refreshes it every round, so a follower that
  stops keeping up after an idle spell may leave the ISR up to ``refresh_ms`` earlier.

Session ids are random, epochs count requests (a request must carry the expected one). The cache
is bounded: sessions idle past ``idle_timeout_ms`` are dropped first; when full, a follower's new
session may evict the least recently used consumer session, as Kafka privileges followers;
otherwise the request is answered without a session and the client keeps fetching in full.
"""

from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.signals import ChangeSignal

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a full fetch that opens a session
FINAL_EPOCH = -1  # a full fetch outside any session (closing one, if named)
MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """Kafka's nextEpoch: epochs count up from 1 and wrap back to 1, never to 0 or -1."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(frozen=True)
class FetchSessionConfig:
    """Kafka's max.incremental.fetch.session.cache.slots and min...eviction.ms, plus our
    idle refresh interval (see the module docstring)."""

    max_sessions: int = 1000
    idle_timeout_ms: int = 120_000
    refresh_ms: int = 3_000

    @classmethod
    def for_lag(cls, replica_lag_time_max_ms: int) -> FetchSessionConfig:
        """Refresh idle partitions ten times per replica.lag.time.max.ms (at most every 3 s,
        at least every 100 ms), so the caught-up time the shrink check reads is never more
        than a tenth of the allowed lag old."""
        return cls(refresh_ms=max(100, min(3_000, replica_lag_time_max_ms // 10)))


class PartitionAnswer(Protocol):
    """What a session compares with what it last answered (the fetch handler's result)."""

    error: int
    records: bytes
    diverging_epoch: object | None
    high_watermark: int
    log_start_offset: int


@dataclass(eq=False)
class CachedPartition:
    """One partition of a session: its last request and what the leader last answered.

    ``request`` is the fetch handler's own spec value (opaque here). ``callback`` is attached to
    the partition signal's current future (``armed``); it marks the partition dirty. The
    session's sets are keyed by these objects (identity hashing) rather than by TopicPartition,
    whose generated hash costs more than the rest of an idle partition's bookkeeping.
    """

    tp: TopicPartition
    request: object
    callback: Callable[[asyncio.Future[None]], None] = lambda _future: None
    armed: asyncio.Future[None] | None = None
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1
    forgotten: bool = False

    def has_news(self, answer: PartitionAnswer) -> bool:
        """Kafka's incremental rule: data, an error, a divergence or moved watermarks."""
        return bool(
            answer.error
            or answer.records
            or answer.diverging_epoch is not None
            or answer.high_watermark != self.sent_high_watermark
            or answer.log_start_offset != self.sent_log_start_offset
        )


@dataclass
class FetchSession:
    """A session's partitions and the bookkeeping that picks what each round reads."""

    id: int
    replica_id: int
    epoch: int  # the epoch the next incremental request must carry
    last_used_ms: int
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)
    dirty: set[CachedPartition] = field(default_factory=set)
    unsettled: set[CachedPartition] = field(default_factory=set)
    # Partitions by last read, oldest first: the head is what the idle refresh reads next.
    read_order: OrderedDict[CachedPartition, int] = field(default_factory=OrderedDict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    @property
    def is_follower(self) -> bool:
        return self.replica_id >= 0

    def put(self, tp: TopicPartition, request: object) -> CachedPartition:
        """Add or update a partition from a request."""
        cached = self.partitions.get(tp)
        if cached is None:
            cached = CachedPartition(tp, request)
            cached.callback = self._callback_for(cached)
            self.partitions[tp] = cached
        else:
            cached.request = request
        return cached

    def forget(self, tp: TopicPartition) -> None:
        cached = self.partitions.pop(tp, None)
        if cached is None:
            return
        cached.forgotten = True
        self._disarm(cached)
        self.dirty.discard(cached)
        self.unsettled.discard(cached)
        self.read_order.pop(cached, None)

    def _callback_for(self, cached: CachedPartition) -> Callable[[asyncio.Future[None]], None]:
        def changed(future: asyncio.Future[None]) -> None:
            if self.closed or cached.armed is not future:
                return
            cached.armed = None
            self.dirty.add(cached)
            self.wake.set()

        return changed

    def arm(self, cached: CachedPartition, signal: ChangeSignal) -> None:
        """Be told of the partition's next change (take the future *before* reading it)."""
        future = signal.future()
        if future is cached.armed:
            return
        self._disarm(cached)
        future.add_done_callback(cached.callback)
        cached.armed = future

    @staticmethod
    def _disarm(cached: CachedPartition) -> None:
        if cached.armed is not None:
            cached.armed.remove_done_callback(cached.callback)
            cached.armed = None

    def note_read(self, cached: CachedPartition, now_ms: int) -> None:
        self.read_order.pop(cached, None)
        self.read_order[cached] = now_ms

    def take_dirty(self) -> set[CachedPartition]:
        dirty, self.dirty = self.dirty, set()
        self.wake.clear()
        return dirty

    def due_for_refresh(self, now_ms: int, refresh_ms: int) -> list[CachedPartition]:
        """Partitions not read for ``refresh_ms`` (oldest first); O(what is due)."""
        due = []
        for cached, read_ms in self.read_order.items():
            if now_ms - read_ms < refresh_ms:
                break
            due.append(cached)
        return due

    def close(self) -> None:
        self.closed = True
        for cached in self.partitions.values():
            self._disarm(cached)
        self.wake.set()


@dataclass(frozen=True)
class SessionLookup:
    """What a request's session fields resolve to: an error, or a session (None: sessionless)
    and whether the request is full (lists every partition) or incremental."""

    error: Code = Code.NONE
    session: FetchSession | None = None
    full: bool = True


class FetchSessionCache:
    """All sessions of this leader, by id, least recently used first."""

    def __init__(
        self,
        config: FetchSessionConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config or FetchSessionConfig()
        self._rng = rng or random.Random()
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def lookup(
        self,
        replica_id: int,
        session_id: int,
        epoch: int,
        forgotten: Iterable[TopicPartition],
        now_ms: int,
    ) -> SessionLookup:
        """Resolve a request's session fields (Kafka's FetchManager.newContext).

        The full-fetch forms (epoch 0 or -1) close the named session first; epoch 0 then opens
        a new one (if the cache has room). An incremental request must name a live session of
        the same replica and carry its expected epoch; its forgotten partitions leave it.
        """
        self._expire(now_ms)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionLookup()
            return SessionLookup(session=self._create(replica_id, now_ms))
        if epoch < FINAL_EPOCH:
            return SessionLookup(Code.INVALID_FETCH_SESSION_EPOCH)
        session = self._sessions.get(session_id)
        if session is None or session.replica_id != replica_id:
            return SessionLookup(Code.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionLookup(Code.INVALID_FETCH_SESSION_EPOCH)
        session.epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        self._sessions.move_to_end(session_id)
        for tp in forgotten:
            session.forget(tp)
        return SessionLookup(session=session, full=False)

    def remove(self, session_id: int) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.close()

    def close_all(self) -> None:
        for session_id in list(self._sessions):
            self.remove(session_id)

    def _expire(self, now_ms: int) -> None:
        while self._sessions:
            session_id, session = next(iter(self._sessions.items()))
            if now_ms - session.last_used_ms < self.config.idle_timeout_ms:
                return
            self.remove(session_id)

    def _create(self, replica_id: int, now_ms: int) -> FetchSession | None:
        if len(self._sessions) >= self.config.max_sessions:
            victim = None
            if replica_id >= 0:
                victim = next((s.id for s in self._sessions.values() if not s.is_follower), None)
            if victim is None:
                return None
            self.remove(victim)
        session_id = self._rng.randint(1, MAX_EPOCH)
        while session_id in self._sessions:
            session_id = self._rng.randint(1, MAX_EPOCH)
        session = FetchSession(session_id, replica_id, next_epoch(INITIAL_EPOCH), now_ms)
        self._sessions[session_id] = session
        return session
