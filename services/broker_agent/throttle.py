"""Replication throttles (KIP-73): cap the bytes that catching-up replicas move per second.

Reassignment copies whole partitions to new replicas; without a cap that copy can starve
producers and in-sync followers. Kafka throttles only the replicas an operator lists in the
topic configs ``leader.replication.throttled.replicas`` (on the leader side) and
``follower.replication.throttled.replicas`` (on the follower side), each a list of
``partition:broker`` pairs or ``*``, and only while those replicas are out of sync. The rate comes
from LeaderAndIsr.replication_throttle_bytes_per_sec (0 = unlimited).
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
        return self.enabled and self.rate() > self.bound

    def _expire(self, now: int) -> None:
        horizon = now - SAMPLES * WINDOW_MS
        while self._samples and self._samples[0][0] <= horizon:
            self._samples.popleft()
