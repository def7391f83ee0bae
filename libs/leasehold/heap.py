"""Keeping a service's large, long-lived heap out of the cyclic garbage collector's way.

A broker agent hosting 10,000 partitions holds some 430,000 container objects that live as long
as their partitions do (logs, fetch states, metadata entries). CPython's full collection walks
all of them with the event loop stopped, hundreds of milliseconds. A LeaderAndIsr that changes
thousands of partitions allocates enough to set one off, so it lands inside the very request
whose latency matters, and delays the UpdateMetadata queued behind it.

``HeapFreezer.settle``, called after such a bulk change, first collects the young generations
(their garbage is not worth keeping), then moves every survivor into the permanent generation
(``gc.freeze``), which collections skip: later collections walk only what changed since. The
price: a reference cycle among frozen objects that later becomes garbage is not reclaimed until
the next ``thaw`` (unfreeze, one full collection, freeze again). ``maintain``, from a periodic
task, thaws at most once per ``thaw_interval_s``, so such garbage is bounded by what one
interval leaves; the full collection it runs is the one the process would have run anyway.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

# A request touching at least this many partitions is a bulk change worth settling after.
BULK_PARTITIONS = 1_000
THAW_INTERVAL_S = 3_600.0


class HeapFreezer:
    """Freezes after bulk changes, thaws periodically. A process-wide setting: only a
    service's main sets ``enabled`` (libraries and tests running services in-process keep
    the interpreter's default collector behaviour)."""

    def __init__(
        self,
        thaw_interval_s: float = THAW_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        *,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.thaw_interval_s = thaw_interval_s
        self._clock = clock
        self._thawed_at = clock()
        self.settles = 0
        self.thaws = 0

    def settle(self) -> None:
        """After a bulk change of long-lived state: freeze what survived it."""
        if not self.enabled:
            return
        gc.collect(1)
        gc.freeze()
        self.settles += 1

    def settle_after(self, partitions: int) -> None:
        """``settle`` if a request touched at least ``BULK_PARTITIONS`` partitions."""
        if partitions >= BULK_PARTITIONS:
            self.settle()

    def maintain(self) -> bool:
        """Reclaim garbage hidden in the frozen generation, at most once per interval.
        True if it ran."""
        if not self.enabled or self._clock() - self._thawed_at < self.thaw_interval_s:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._thawed_at = self._clock()
        self.thaws += 1
        return True
