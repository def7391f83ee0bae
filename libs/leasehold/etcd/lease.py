"""What a session knows about its lease, and what it does next: pure, driven by given instants.

A lease is **confirmed** while etcd has told us, within the last TTL, that it lives: a
keep-alive answer or a ``LeaseTimeToLive`` answer with time left, counted from when the request
was *sent* (the lease lives at least that long after the send). When that deadline passes
without a new answer, the lease is **unconfirmed**: it may still live in etcd (etcd keeps leases
across a restart and renews their TTL on a new leader), but its holder can no longer be sure,
so a holder that fences on it (the active controller) stops acting. On the next answer from
etcd the lease is either confirmed again (the same lease lives: the holder may carry on, keys
and all) or **lost** (etcd says it is gone: revoked, or expired while etcd was paused). Lost is
final. After any failure, the first question is ``LeaseTimeToLive``, which reads without
renewing, so a lease etcd has already expired is never mistaken for a renewed one.

``LeaseTracker`` is the state; ``next_step`` is the keep-alive loop's policy. Neither sleeps or
reads a clock, so every transition is tested with plain numbers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class LeaseState(enum.Enum):
    CONFIRMED = "confirmed"
    UNCONFIRMED = "unconfirmed"
    LOST = "lost"


class Ask(enum.Enum):
    KEEP_ALIVE = "keep-alive"  # renew (LeaseKeepAlive, one request on a stream)
    TIME_TO_LIVE = "time-to-live"  # ask whether it lives, without renewing (LeaseTimeToLive)


@dataclass(frozen=True)
class Step:
    """The keep-alive loop's next move: wait ``wait_s``, then ask ``ask`` with a deadline of
    ``timeout_s``."""

    ask: Ask
    wait_s: float
    timeout_s: float


# Seconds between attempts while etcd does not answer: short, so a restarted etcd is seen at once.
RETRY_S = 0.2
# The longest any single call may take while the lease is not confirmed.
UNCONFIRMED_TIMEOUT_S = 1.0
# The shortest deadline a call gets.
MIN_TIMEOUT_S = 0.1


def keep_alive_interval(ttl: float) -> float:
    """Seconds between renewals: a sixth of the TTL, at most 0.5 s (etcd's clients use a third;
    renewing more often keeps a lease alive across a longer etcd pause, at the cost of one small
    call per interval)."""
    return min(ttl / 6.0, 0.5)


class LeaseTracker:
    """The lease's state and the instant (monotonic seconds) until which it is known to live."""

    def __init__(self, ttl: float, granted_at: float) -> None:
        self.ttl = ttl
        self.deadline = granted_at + ttl
        self.state = LeaseState.CONFIRMED
        self.failed = False  # the last call did not get an answer
        # etcd's last answer: the lease lives with under a second left (``answered``)
        self.expiring = False
        self.min_margin = float(ttl)  # the least time left on the lease when it was renewed

    def answered(self, ask: Ask, sent_at: float, ttl: int) -> LeaseState | None:
        """etcd's answer to ``ask``, sent at ``sent_at``: a TTL in whole seconds. A keep-alive
        answers 0 for a lease etcd does not have; ``LeaseTimeToLive`` answers -1 for it, and 0
        for a lease that lives with under a second left (it truncates). That lease is renewed
        at once (``next_step``), its state and deadline left as they are: the answer confirms
        no time beyond its own send."""
        if ttl < 0 or (ttl == 0 and ask is Ask.KEEP_ALIVE):
            return self.gone()
        if ttl == 0:
            if self.state is not LeaseState.LOST:
                self.failed = False
                self.expiring = True
            return None
        return self.alive(sent_at, ttl)

    def alive(self, sent_at: float, ttl_left: float) -> LeaseState | None:
        """etcd answered that the lease lives ``ttl_left`` more seconds (keep-alive or
        TimeToLive sent at ``sent_at``). Returns the new state if it changed."""
        if self.state is LeaseState.LOST:
            return None
        self.failed = False
        self.expiring = False
        if self.state is LeaseState.CONFIRMED:
            self.min_margin = min(self.min_margin, self.deadline - sent_at)
        self.deadline = max(self.deadline, sent_at + ttl_left)
        return self._move(LeaseState.CONFIRMED)

    def gone(self) -> LeaseState | None:
        """etcd answered that the lease does not exist (a keep-alive's TTL 0, ``LeaseTimeToLive``'s
        -1, or 'lease not found')."""
        self.failed = False
        self.expiring = False
        return self._move(LeaseState.LOST)

    def unanswered(self, now: float) -> LeaseState | None:
        """A call failed or timed out at ``now`` (etcd unreachable, paused or restarting)."""
        self.failed = True
        return self.check(now)

    def check(self, now: float) -> LeaseState | None:
        """The passage of time: confirmed becomes unconfirmed once the deadline has passed."""
        if self.state is LeaseState.CONFIRMED and now >= self.deadline:
            return self._move(LeaseState.UNCONFIRMED)
        return None

    def _move(self, to: LeaseState) -> LeaseState | None:
        if self.state is to or self.state is LeaseState.LOST:
            return None
        self.state = to
        return to

    def next_step(self, now: float, last_sent: float) -> Step | None:
        """What the loop does next (None once the lease is lost): renew every interval while
        confirmed and answered; after a failure or past the deadline, ask TimeToLive every
        ``RETRY_S`` until etcd answers; renew at once when it answered that the lease has under
        a second left."""
        if self.state is LeaseState.LOST:
            return None
        if self.expiring and not self.failed:
            return Step(Ask.KEEP_ALIVE, 0.0, UNCONFIRMED_TIMEOUT_S)
        if self.failed or self.state is LeaseState.UNCONFIRMED:
            wait = max(0.0, last_sent + RETRY_S - now)
            return Step(Ask.TIME_TO_LIVE, wait, UNCONFIRMED_TIMEOUT_S)
        interval = keep_alive_interval(self.ttl)
        wait = max(0.0, min(last_sent + interval, self.deadline) - now)
        # A renewal may take until the deadline; past it nothing it says keeps us confirmed.
        timeout = max(MIN_TIMEOUT_S, min(self.deadline - (now + wait), UNCONFIRMED_TIMEOUT_S))
        return Step(Ask.KEEP_ALIVE, wait, timeout)
