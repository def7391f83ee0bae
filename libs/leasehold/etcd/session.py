"""A Session is a lease kept alive in the background (etcd's concurrency.Session).

Keys written with ``session.lease_id`` vanish when the session ends, the way ZooKeeper's
ephemeral nodes vanish with their session. The lease is renewed by a thread of its own over a
gRPC channel of its own (``KeepAlive``), so a service whose event loop is busy for a while (a
100,000-partition request being decoded) never loses its session for it: the thread needs the
GIL only for a few microseconds per renewal, and Python hands it over every few milliseconds.

The session's state (``leasehold.etcd.lease``) is mirrored onto the owner's event loop:

- ``confirmed`` is set while etcd has confirmed the lease within the TTL;
- ``unconfirmed`` is set while it has not (etcd unreachable, restarting or paused): the lease
  may still live, and a holder that fences on it stops acting until it is confirmed again;
- ``done`` is set once etcd says the lease is gone (revoked, or expired while etcd was paused):
  the owner must stop acting on anything the lease guarded and start a new session.

After a failure the thread asks ``LeaseTimeToLive`` before renewing again, so a session survives
an etcd restart (etcd keeps leases and renews their TTL on its new leader) and a pause shorter
than the TTL with the same lease and keys. A paused *holder* only learns of its own lapse on
resuming, which is why every guarded write is also fenced by revision compares (ARCHITECTURE
§3).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable

import grpc
from aetcd import rpc

from leasehold.etcd.client import REQUIRE_LEADER, EtcdClient, EtcdError
from leasehold.etcd.lease import Ask, LeaseState, LeaseTracker

log = logging.getLogger(__name__)

# The one default TTL of broker and controller sessions, in seconds (see bench/README.md for
# the measurements behind it).
DEFAULT_TTL = 3


class Session:
    def __init__(self, client: EtcdClient, ttl: int = DEFAULT_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self.lease_id = 0
        self.done = asyncio.Event()
        self.confirmed = asyncio.Event()
        self.unconfirmed = asyncio.Event()
        self.state = LeaseState.CONFIRMED
        self.on_change: Callable[[LeaseState], None] = lambda state: None
        self._keeper: KeepAlive | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> Session:
        sent_at = time.monotonic()
        self.lease_id = await self.client.lease_grant(self.ttl)
        self._loop = asyncio.get_running_loop()
        self.confirmed.set()
        tracker = LeaseTracker(self.ttl, sent_at)
        self._keeper = KeepAlive(self.client, self.lease_id, tracker, self._from_thread)
        self._keeper.start()
        return self

    @property
    def min_margin(self) -> float:
        """The least time (seconds) the lease had left when a renewal was sent: how close the
        session came to lapsing."""
        return self._keeper.tracker.min_margin if self._keeper else float(self.ttl)

    async def __aenter__(self) -> Session:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _from_thread(self, state: LeaseState) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._moved, state)

    def _moved(self, state: LeaseState) -> None:
        """On the owner's loop: mirror the thread's state change."""
        if self.state is LeaseState.LOST:
            return
        self.state = state
        extra = {"lease": f"{self.lease_id:x}", "state": state.value}
        if state is LeaseState.LOST:
            log.warning("session lease lost", extra=extra)
            self.confirmed.clear()
            self.unconfirmed.clear()
            self.done.set()
        elif state is LeaseState.UNCONFIRMED:
            log.warning("session lease unconfirmed (etcd does not answer)", extra=extra)
            self.confirmed.clear()
            self.unconfirmed.set()
        else:
            log.info("session lease confirmed again", extra=extra)
            self.unconfirmed.clear()
            self.confirmed.set()
        self.on_change(state)

    def lost(self) -> None:
        """The owner learned from etcd that the lease is gone (a txn said 'lease not found')."""
        self._moved(LeaseState.LOST)

    async def abandon(self) -> None:
        """Stop renewing without revoking or telling anyone: the lease expires a TTL later, as
        a killed or paused process's would (for tests of what follows)."""
        if self._keeper is not None:
            keeper, self._keeper = self._keeper, None
            await asyncio.to_thread(keeper.stop)

    async def close(self, *, revoke: bool = True) -> None:
        """Stop keeping the lease alive and (by default) revoke it so its keys go at once."""
        lost = self.done.is_set()
        if self._keeper is not None:
            keeper, self._keeper = self._keeper, None
            await asyncio.to_thread(keeper.stop)
        self.state = LeaseState.LOST  # closed: no longer confirmed, and not a loss to report
        self.confirmed.clear()
        self.unconfirmed.clear()
        self.done.set()
        if revoke and self.lease_id and not lost:
            with contextlib.suppress(EtcdError, TimeoutError):
                async with asyncio.timeout(self.client.timeout):
                    await self.client.lease_revoke(self.lease_id)


class KeepAlive(threading.Thread):
    """The renewal thread: its own channel to etcd, a lease tracker, state changes reported
    through ``report`` (called on this thread)."""

    def __init__(
        self,
        client: EtcdClient,
        lease_id: int,
        tracker: LeaseTracker,
        report: Callable[[LeaseState], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name=f"lease-{lease_id:x}", daemon=True)
        self.lease_id = lease_id
        self.tracker = tracker
        self._report = report
        self._clock = clock
        self._stopping = threading.Event()
        self.lateness = 0.0  # how late (s) the thread has woken up at worst: GIL starvation
        self.unanswered = 0  # calls without an answer since the last one answered
        self.answered_at = clock()
        self._channel = client.sync_channel()
        self._stub = rpc.LeaseStub(self._channel)

    def stop(self) -> None:
        """Stop and wait for the thread (an answer in flight is cut off by closing the
        channel)."""
        self._stopping.set()
        self._channel.close()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5.0)

    def run(self) -> None:
        tracker = self.tracker
        last_sent = self._clock()
        try:
            while not self._stopping.is_set():
                self._note(tracker.check(self._clock()))
                step = tracker.next_step(self._clock(), last_sent)
                if step is None:
                    return
                planned = self._clock() + step.wait_s
                if step.wait_s > 0 and self._stopping.wait(step.wait_s):
                    return
                self.lateness = max(self.lateness, self._clock() - planned)
                self._note(tracker.check(self._clock()))
                last_sent = self._clock()
                self._note(self._ask(step.ask, last_sent, step.timeout_s))
        except Exception:  # never leave the session silently unrenewed
            log.exception("lease keep-alive thread failed")
            self._report(LeaseState.LOST)

    def _ask(self, ask: Ask, sent_at: float, timeout: float) -> LeaseState | None:
        tracker = self.tracker
        try:
            if ask is Ask.KEEP_ALIVE:
                ttl = self._keep_alive_once(timeout)
            else:
                req = rpc.LeaseTimeToLiveRequest(ID=self.lease_id)
                ttl = self._stub.LeaseTimeToLive(req, timeout=timeout, metadata=REQUIRE_LEADER).TTL
        except grpc.RpcError as e:
            if self._stopping.is_set():
                return None
            if _lease_not_found(e):
                return tracker.gone()
            log.debug("lease %s failed: %s", ask.value, e)
            self.unanswered += 1
            return tracker.unanswered(self._clock())
        self.unanswered = 0
        self.answered_at = self._clock()
        if ttl <= 0:
            return tracker.gone()
        margin = tracker.deadline - sent_at
        if tracker.state is LeaseState.CONFIRMED and margin < tracker.ttl / 2:
            # The thread was held back (the GIL, a loaded machine): how close it came.
            log.warning("lease renewed late", extra={"lease": f"{self.lease_id:x}",
                                                     "left_s": round(margin, 3)})  # fmt: skip
        return tracker.alive(sent_at, ttl)

    def _keep_alive_once(self, timeout: float) -> int:
        """One renewal on a stream of its own (as etcd's KeepAliveOnce): the TTL granted."""
        request = rpc.LeaseKeepAliveRequest(ID=self.lease_id)
        answers = self._stub.LeaseKeepAlive(
            iter((request,)), timeout=timeout, metadata=REQUIRE_LEADER
        )
        try:
            for answer in answers:
                return answer.TTL
        finally:
            answers.cancel()
        raise _NoAnswer()

    def _note(self, moved: LeaseState | None) -> None:
        if moved is None:
            return
        if moved is LeaseState.UNCONFIRMED:
            log.warning(
                "lease renewals unanswered",
                extra={
                    "lease": f"{self.lease_id:x}",
                    "last_answer_s_ago": round(self._clock() - self.answered_at, 3),
                    "calls_unanswered": self.unanswered,
                    "thread_late_s": round(self.lateness, 3),
                },
            )
        self._report(moved)


class _NoAnswer(grpc.RpcError):
    """The keep-alive stream closed without an answer."""


def _lease_not_found(error: grpc.RpcError) -> bool:
    code = getattr(error, "code", None)
    details = getattr(error, "details", None)
    text = details() if callable(details) else ""
    return callable(code) and code() == grpc.StatusCode.NOT_FOUND or "not found" in (text or "")
