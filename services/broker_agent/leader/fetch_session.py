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
- a settled partition costs nothing per round: the follower's session requests count as fetches
  of it at its cached offset, as in Kafka, but the leader only notes the session on the
  partition (``SessionFetch``). When an append moves the leader's end past a follower still
  at the old end, the partition credits that follower with being caught up as of the
  session's last request: what Kafka, which records every session partition on every request,
  would have recorded. A follower
  outside the ISR is the exception: its settled partitions are re-read every ``retry_ms`` so
  a failed ISR expansion is retried (Kafka retries on every fetch).

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
    """Kafka's max.incremental.fetch.session.cache.slots and min...eviction.ms, plus how often
    a settled partition of a follower outside the ISR is re-read (see the module docstring)."""

    max_sessions: int = 1000
    idle_timeout_ms: int = 120_000
    retry_ms: int = 3_000

    @classmethod
    def for_lag(cls, replica_lag_time_max_ms: int) -> FetchSessionConfig:
        """Retry expansion ten times per replica.lag.time.max.ms (at most every 3 s, at least
        every 100 ms)."""
        return cls(retry_ms=max(100, min(3_000, replica_lag_time_max_ms // 10)))


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
    session: FetchSession | None = None
    callback: Callable[[asyncio.Future[None]], None] = lambda _future: None
    armed: asyncio.Future[None] | None = None
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1
    forgotten: bool = False

    def last_fetch_ms(self) -> int | None:
        """When the follower last fetched this partition at its cached offset: the session's
        last request (each request of a session counts as a fetch of all its partitions), or
        None once the partition left the session. A closed session keeps its last time."""
        if self.forgotten or self.session is None:
            return None
        return self.session.last_used_ms

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
    # Settled partitions whose follower is outside the ISR, by last read, oldest first: the
    # head is what the expansion retry reads next.
    retry_order: OrderedDict[CachedPartition, int] = field(default_factory=OrderedDict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    @property
    def is_follower(self) -> bool:
        return self.replica_id >= 0

    def put(self, tp: TopicPartition, request: object) -> CachedPartition:
        """Add or update a partition from a request."""
        cached = self.partitions.get(tp)
        if cached is None:
            cached = CachedPartition(tp, request, self)
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
        self.retry_order.pop(cached, None)

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

    def note_read(self, cached: CachedPartition, now_ms: int, *, retry: bool) -> None:
        """``cached`` was read at ``now_ms``; ``retry`` keeps it due again after the interval."""
        self.retry_order.pop(cached, None)
        if retry:
            self.retry_order[cached] = now_ms

    def take_dirty(self) -> set[CachedPartition]:
        dirty, self.dirty = self.dirty, set()
        self.wake.clear()
        return dirty

    def due_for_retry(self, now_ms: int, retry_ms: int) -> list[CachedPartition]:
        """Partitions not read for ``retry_ms`` (oldest first); O(what is due)."""
        due = []
        for cached, read_ms in self.retry_order.items():
            if now_ms - read_ms < retry_ms:
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
