"""A Session is a lease kept alive in the background (etcd's concurrency.Session).

Keys written with ``session.lease_id`` vanish when the session ends, the way ZooKeeper's
ephemeral nodes vanish with their session. The lease is renewed by a thread of its own over a
gRPC channel of its own (``Renewer``), so a service whose event loop is busy for a while (a
100,000-partition request being decoded) never loses its session for it: the thread needs the
GIL only for a few microseconds per renewal, and Python hands it over every few milliseconds.
Sessions of one process may share a renewer (``Session(..., renewer=...)``): its thread renews
every lease due at once on one stream.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import grpc
from aetcd import rpc

from leasehold.etcd.client import REQUIRE_LEADER, EtcdClient, EtcdError
from leasehold.etcd.keepalive import BatchedKeepAlive, KeepAliveError
from leasehold.etcd.lease import Ask, LeaseState, LeaseTracker, Step

log = logging.getLogger(__name__)

# The one default TTL of broker and controller sessions, in seconds (see bench/README.md for
# the measurements behind it).
DEFAULT_TTL = 3


class LeaseRenewer(Protocol):
    """What a session needs of whatever renews its lease: a ``Renewer`` thread, or a
    ``RenewalProcess`` (``leasehold.etcd.renewal_process``) standing in for one."""

    def add(
        self, lease_id: int, tracker: LeaseTracker, report: Callable[[LeaseState], None]
    ) -> object: ...

    def remove(self, lease_id: int) -> None: ...

    def stop(self) -> None: ...


class Session:
    def __init__(
        self, client: EtcdClient, ttl: int = DEFAULT_TTL, *, renewer: LeaseRenewer | None = None
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.lease_id = 0
        self.done = asyncio.Event()
        self.confirmed = asyncio.Event()
        self.unconfirmed = asyncio.Event()
        self.state = LeaseState.CONFIRMED
        self.on_change: Callable[[LeaseState], None] = lambda state: None
        # A renewer shared with other sessions of the process, or None: one of its own.
        self._shared = renewer
        self._renewer: LeaseRenewer | None = None
        self._tracker: LeaseTracker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> Session:
        sent_at = time.monotonic()
        self.lease_id = await self.client.lease_grant(self.ttl)
        self._loop = asyncio.get_running_loop()
        self.confirmed.set()
        self._tracker = LeaseTracker(self.ttl, sent_at)
        renewer = self._shared
        if renewer is None:
            renewer = Renewer(self.client, name=f"lease-{self.lease_id:x}")
        self._renewer = renewer
        renewer.add(self.lease_id, self._tracker, self._from_thread)
        return self

    @property
    def min_margin(self) -> float:
        """The least time (seconds) the lease had left when a renewal was sent: how close the
        session came to lapsing."""
        return self._tracker.min_margin if self._tracker else float(self.ttl)

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
        await self._stop_renewing()

    async def _stop_renewing(self) -> None:
        renewer, self._renewer = self._renewer, None
        if renewer is None:
            return
        renewer.remove(self.lease_id)
        if renewer is not self._shared:
            await asyncio.to_thread(renewer.stop)

    async def close(self, *, revoke: bool = True) -> None:
        """Stop keeping the lease alive and (by default) revoke it so its keys go at once."""
        lost = self.done.is_set()
        await self._stop_renewing()
        self.state = LeaseState.LOST  # closed: no longer confirmed, and not a loss to report
        self.confirmed.clear()
        self.unconfirmed.clear()
        self.done.set()
        if revoke and self.lease_id and not lost:
            # Unrenewed, the lease is gone within its TTL anyway: a revoke etcd has not
            # answered by then is not worth waiting for (a broker stopping while etcd is
            # unreachable would otherwise wait out the client's whole timeout).
            with contextlib.suppress(EtcdError, TimeoutError):
                async with asyncio.timeout(min(self.client.timeout, self.ttl)):
                    await self.client.lease_revoke(self.lease_id)


@dataclass(eq=False)
class Held:
    """One lease a ``Renewer`` keeps alive: its tracker, where its state changes go (called on
    the renewer's thread), and what the thread noted of it."""

    lease_id: int
    tracker: LeaseTracker
    report: Callable[[LeaseState], None]
    last_sent: float
    step: Step | None = None
    planned_at: float = 0.0  # when ``step`` was due
    lateness: float = 0.0  # how late (s) it was renewed at worst: GIL starvation
    unanswered: int = 0  # calls without an answer since the last one answered
    answered_at: float = 0.0


def due_now(held: Iterable[Held], now: float, slack: float) -> tuple[float, list[Held]]:
    """The renewer's batching policy, on steps already computed at ``now``: the leases to ask
    at once (every one due within ``slack`` of the earliest), and how long to wait first."""
    steps = [h for h in held if h.step is not None]
    if not steps:
        return -1.0, []
    first = min(h.step.wait_s for h in steps)  # type: ignore[union-attr]
    return first, [h for h in steps if h.step.wait_s <= first + slack]  # type: ignore[union-attr]


# How often a renewer whose holder is stopped looks again (``may_renew``).
HOLDER_STOPPED_POLL_S = 0.1


class Renewer(threading.Thread):
    """The renewal thread: keeps any number of leases alive over one gRPC channel of its own.

    Each lease has its own ``LeaseTracker`` (its state and policy, ``leasehold.etcd.lease``);
    the thread asks for every lease that is due at about the same moment together: the
    keep-alives on one ``LeaseKeepAlive`` stream (one request and one answer per lease, as
    etcd's ``KeepAliveOnce`` for each), the ``LeaseTimeToLive`` questions concurrently. A
    session owns a renewer of its own unless it is given one: a process holding many sessions
    (a fleet of simulated brokers) shares one, so a thousand leases cost one stream per round
    instead of a thousand streams and threads. A renewal may go up to ``GROUP_S`` (a renewal
    interval at the default TTL) before its time to join the batch: a lease renewed early is
    only confirmed for longer, and leases started at different moments fall into step after
    one round, so a renewer opens one stream per interval, not one per lease's phase.
    """

    GROUP_S = 0.5

    def __init__(
        self,
        client: EtcdClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        name: str = "lease-renewer",
        batched: bool = False,
        may_renew: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        # False while the leases' holder cannot act (a renewal process's service is stopped):
        # nothing is renewed meanwhile, so the leases lapse as the holder's own thread's would.
        self._may_renew = may_renew
        # Keep-alives framed by hand, all of a round in one write (``leasehold.etcd.keepalive``):
        # for a renewer of many leases; one of a single lease uses the gRPC library.
        self._batched = BatchedKeepAlive(client.endpoints, client.tls) if batched else None
        self._clock = clock
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self._channel = client.sync_channel()
        self._stub = rpc.LeaseStub(self._channel)

    def add(
        self, lease_id: int, tracker: LeaseTracker, report: Callable[[LeaseState], None]
    ) -> Held:
        """Keep ``lease_id`` alive from now on (granted when ``tracker`` says)."""
        held = Held(lease_id, tracker, report, last_sent=self._clock(), answered_at=self._clock())
        with self._lock:
            self._held[lease_id] = held
        if not self.is_alive() and not self._stopping.is_set():
            with contextlib.suppress(RuntimeError):  # started by another caller meanwhile
                self.start()
        self._wake.set()
        return held

    def remove(self, lease_id: int) -> None:
        """Stop renewing ``lease_id`` (an answer in flight for it is not reported)."""
        with self._lock:
            self._held.pop(lease_id, None)
        self._wake.set()

    def __len__(self) -> int:
        return len(self._held)

    def stop(self) -> None:
        """Stop and wait for the thread (an answer in flight is cut off by closing the
        channel)."""
        self._stopping.set()
        self._wake.set()
        self._channel.close()
        if self._batched is not None:
            self._batched.close()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=5.0)

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._round()
        except Exception:  # never leave a session silently unrenewed
            log.exception("lease keep-alive thread failed")
            with self._lock:
                held = list(self._held.values())
            for h in held:
                h.report(LeaseState.LOST)

    def _current(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    def _round(self) -> None:
        """Wait for the next leases due, then ask for them all."""
        now = self._clock()
        held = self._current()
        for h in held:
            self._note(h, h.tracker.check(now))
            h.step = h.tracker.next_step(now, h.last_sent)
            if h.step is None:  # lost: nothing more to ask
                self.remove(h.lease_id)
            else:
                h.planned_at = now + h.step.wait_s
        wait, batch = due_now(held, now, self.GROUP_S)
        self._wake.clear()
        if not batch:
            self._wake.wait(1.0)  # until a lease is added
            return
        if wait > 0 and self._wake.wait(wait):
            return  # a lease came or went: plan again
        if self._stopping.is_set():
            return
        if self._may_renew is not None and not self._may_renew():
            self._wake.wait(HOLDER_STOPPED_POLL_S)
            return
        sent_at = self._clock()
        keep, ask_ttl = [], []
        for h in batch:
            h.lateness = max(h.lateness, sent_at - h.planned_at)
            self._note(h, h.tracker.check(sent_at))
            h.last_sent = sent_at
            assert h.step is not None
            (keep if h.step.ask is Ask.KEEP_ALIVE else ask_ttl).append(h)
        outcomes: dict[int, int | grpc.RpcError] = {}
        if keep:
            outcomes.update(self._keep_alive(keep))
        if ask_ttl:
            outcomes.update(self._time_to_live(ask_ttl))
        late = 0
        with self._lock:
            current = dict(self._held)
        for h in batch:
            if current.get(h.lease_id) is not h:
                continue  # removed meanwhile
            margin = h.tracker.deadline - sent_at
            moved = self._outcome(h, sent_at, outcomes.get(h.lease_id, _NoAnswer()))
            if h.unanswered == 0 and h.tracker.state is LeaseState.CONFIRMED:
                # Renewed with less than half the TTL left: the thread was held back (the
                # GIL, a loaded machine).
                late += margin < h.tracker.ttl / 2
            self._note(h, moved)
        if late:
            log.warning("lease renewed late", extra={"leases": late, "asked": len(batch)})

    def _keep_alive(self, batch: list[Held]) -> dict[int, int | grpc.RpcError]:
        """One renewal per lease on one stream: the TTL etcd granted each (0: gone), or the
        stream's error for those it did not answer."""
        timeout = min(h.step.timeout_s for h in batch)  # type: ignore[union-attr]
        if self._batched is not None:
            try:
                return dict(self._batched.keep_alive([h.lease_id for h in batch], timeout))
            except KeepAliveError as e:
                log.debug("%s", e)
                return {}  # every lease unanswered: each asks LeaseTimeToLive of its own next
        requests = [rpc.LeaseKeepAliveRequest(ID=h.lease_id) for h in batch]
        out: dict[int, int | grpc.RpcError] = {}
        answers = self._stub.LeaseKeepAlive(
            iter(requests), timeout=timeout, metadata=REQUIRE_LEADER
        )
        try:
            for answer in answers:
                out[answer.ID] = answer.TTL
                if len(out) == len(requests):
                    break
        except grpc.RpcError as e:
            # Alone, the lease's own error ("not found": it is gone); in a batch, each lease
            # unanswered asks LeaseTimeToLive of its own next.
            error = e if len(batch) == 1 else _NoAnswer()
            for h in batch:
                out.setdefault(h.lease_id, error)
        finally:
            answers.cancel()
        return out

    def _time_to_live(self, batch: list[Held]) -> dict[int, int | grpc.RpcError]:
        """``LeaseTimeToLive`` of each lease, asked concurrently."""
        timeout = min(h.step.timeout_s for h in batch)  # type: ignore[union-attr]
        calls = [
            (
                h.lease_id,
                self._stub.LeaseTimeToLive.future(
                    rpc.LeaseTimeToLiveRequest(ID=h.lease_id),
                    timeout=timeout,
                    metadata=REQUIRE_LEADER,
                ),
            )
            for h in batch
        ]
        out: dict[int, int | grpc.RpcError] = {}
        for lease_id, call in calls:
            try:
                out[lease_id] = call.result().TTL
            except grpc.RpcError as e:
                out[lease_id] = e
        return out

    def _outcome(self, h: Held, sent_at: float, answer: int | grpc.RpcError) -> LeaseState | None:
        tracker = h.tracker
        if isinstance(answer, grpc.RpcError):
            if self._stopping.is_set():
                return None
            if _lease_not_found(answer):
                return tracker.gone()
            log.debug("lease %x: %s failed: %s", h.lease_id, h.step and h.step.ask.value, answer)
            h.unanswered += 1
            return tracker.unanswered(self._clock())
        h.unanswered = 0
        h.answered_at = self._clock()
        assert h.step is not None
        moved = tracker.answered(h.step.ask, sent_at, answer)
        if tracker.expiring:
            # A near loss: the renewals before went unanswered until the lease's last second.
            log.warning(
                "lease in its last second: renewing at once",
                extra={"lease": f"{h.lease_id:x}", "thread_late_s": round(h.lateness, 3)},
            )
        return moved

    def _note(self, h: Held, moved: LeaseState | None) -> None:
        if moved is None:
            return
        if moved is LeaseState.LOST:
            # etcd says the lease is gone. Where the deadline (the last confirmation's send plus
            # the TTL) stood, how long etcd took to answer this call and how late this thread
            # ever ran tell an answer held back past the deadline (etcd slow) from renewals
            # never sent (this process), or from a lease etcd dropped early (a revoke).
            now = self._clock()
            log.warning(
                "lease gone (etcd no longer has it)",
                extra={
                    "lease": f"{h.lease_id:x}",
                    "deadline_in_s": round(h.tracker.deadline - now, 3),
                    "answered_after_s": round(now - h.last_sent, 3),
                    "thread_late_s": round(h.lateness, 3),
                },
            )
        elif moved is LeaseState.UNCONFIRMED:
            log.warning(
                "lease renewals unanswered",
                extra={
                    "lease": f"{h.lease_id:x}",
                    "last_answer_s_ago": round(self._clock() - h.answered_at, 3),
                    "calls_unanswered": h.unanswered,
                    "thread_late_s": round(h.lateness, 3),
                },
            )
        h.report(moved)


class _NoAnswer(grpc.RpcError):
    """The keep-alive stream closed without an answer."""


def _lease_not_found(error: grpc.RpcError) -> bool:
    code = getattr(error, "code", None)
    details = getattr(error, "details", None)
    text = details() if callable(details) else ""
    return callable(code) and code() == grpc.StatusCode.NOT_FOUND or "not found" in (text or "")
