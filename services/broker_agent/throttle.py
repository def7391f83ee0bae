"""Replication throttles (KIP-73): cap the bytes that catching-up replicas move per second.

Reassignment copies whole partitions to new replicas; without a cap that copy can starve
producers and in-sync followers. Kafka throttles only the replicas an operator lists in the
topic configs ``leader.replication.throttled.replicas`` (on the leader side) and
``follower.replication.throttled.replicas`` (on the follower side), each a list of
``partition:broker`` pairs or ``*``, and only while those replicas are out of sync. The rates are
the dynamic broker configs ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (this broker's, else the cluster default), which
``leasehold reassign --execute --throttle`` sets and ``--verify`` removes, as in Kafka.

On the leader a throttled read takes at most what keeps the measured rate at the bound
(``allowance``), so the copy moves in slices of about a fetch interval's worth rather than in
whole ``replica.fetch.max.bytes`` bursts; a follower skips its throttled partitions while its
own quota is exceeded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_MS = 1_000
SAMPLES = 11


@dataclass(frozen=True)
class ThrottledReplicas:
    """Which partitions of a topic a throttle config names for one broker."""

    everything: bool = False
    partitions: frozenset[int] = frozenset()

    def __contains__(self, partition: object) -> bool:
        return self.everything or partition in self.partitions


NOT_THROTTLED = ThrottledReplicas()
UNLIMITED = 0
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


def parse_rate(value: str | None) -> int:
    """A dynamic ``*.replication.throttled.rate`` in bytes/s; UNLIMITED when absent, not a
    positive integer, or Kafka's default Long.MAX_VALUE."""
    try:
        rate = int(value) if value is not None else UNLIMITED
    except ValueError:
        return UNLIMITED
    return rate if 0 < rate < 2**63 - 1 else UNLIMITED


def parse_throttled_replicas(value: str, broker_id: int) -> ThrottledReplicas:
    """Parse Kafka's ``0:101,1:102`` / ``*`` list, keeping the entries for ``broker_id``.

    Raises ValueError on a malformed entry so the admin path can refuse the config.
    """
    text = value.strip()
    if not text:
        return NOT_THROTTLED
    if text == "*":
        return ThrottledReplicas(everything=True)
    partitions: set[int] = set()
    for entry in text.split(","):
        partition_text, sep, broker_text = entry.strip().partition(":")
        if not sep:
            raise ValueError(f"throttled replica entry {entry!r} is not partition:broker")
        try:
            partition, broker = int(partition_text), int(broker_text)
        except ValueError:
            raise ValueError(f"throttled replica entry {entry!r} is not partition:broker") from None
        if partition < 0 or broker < 0:
            raise ValueError(f"throttled replica entry {entry!r} has a negative number")
        if broker == broker_id:
            partitions.add(partition)
    return ThrottledReplicas(partitions=frozenset(partitions))


class ReplicationQuota:
    """A byte rate over a sliding window of samples, with a bound that can change at runtime.

    ``is_exceeded`` compares the measured rate with the bound, as Kafka's quota managers do:
    once a throttled replica has moved more than its share, further throttled reads wait until
    the window slides.
    """

    def __init__(self, clock: Callable[[], int], bound_bytes_per_sec: int = 0) -> None:
        self._clock = clock
        self.bound = bound_bytes_per_sec
        self._samples: deque[tuple[int, int]] = deque()  # (window start ms, bytes)

    @property
    def enabled(self) -> bool:
        return self.bound > 0

    def record(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        now = self._clock()
        start = now - now % WINDOW_MS
        if self._samples and self._samples[-1][0] == start:
            self._samples[-1] = (start, self._samples[-1][1] + nbytes)
        else:
            self._samples.append((start, nbytes))
        self._expire(now)

    def rate(self) -> float:
        """Bytes per second over the retained samples (at least one window long)."""
        now = self._clock()
        self._expire(now)
        if not self._samples:
            return 0.0
        elapsed = max(now - self._samples[0][0], WINDOW_MS)
        return sum(n for _, n in self._samples) * 1000.0 / elapsed

    def is_exceeded(self) -> bool:
        allowance = self.allowance()
        return allowance is not None and allowance <= 0

    def allowance(self) -> int | None:
        """Bytes that may move now without the window's rate passing the bound (None when
        unlimited; at most one window's worth when nothing moved lately)."""
        if not self.enabled:
            return None
        now = self._clock()
        self._expire(now)
        if not self._samples:
            return self.bound * WINDOW_MS // 1000
        elapsed = max(now - self._samples[0][0], WINDOW_MS)
        return self.bound * elapsed // 1000 - sum(n for _, n in self._samples)

    def delay_s(self) -> float | None:
        """Seconds until the allowance turns positive; None when it is (or no bound is set).
        A throttled reader waits this long, not a whole fetch wait or backoff, so the copy
        keeps to the bound instead of falling below it."""
        allowance = self.allowance()
        if allowance is None or allowance > 0:
            return None
        return max(1 - allowance, 1) / self.bound + 0.001

    def _expire(self, now: int) -> None:
        horizon = now - SAMPLES * WINDOW_MS
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.popleft()
