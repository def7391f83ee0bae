"""Group commit: acks=all appends of one log share fsyncs instead of queueing one each.

An acks=all answer needs the leader's log durable up to the end of the appended batch
(``recovery_point >= end``). The flush starts right after the append, on a worker thread, and
runs while the followers replicate, so the leader's fsync is not added to the replication
round trip. One flush runs per log at a time; a request arriving meanwhile waits for it and, if
its batch came after that flush began, for one more, which covers every request that arrived
during the first: under load, one fsync acknowledges many requests.
"""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

from services.broker_agent.log import KafkaStorageError, Log


class GroupFlush:
    """At most one running flush per log; ``flushed_to`` waits until a flush covers an end."""

    def __init__(self) -> None:
        self._running: WeakKeyDictionary[Log, asyncio.Future[None]] = WeakKeyDictionary()

    async def flushed_to(self, log: Log, end: int) -> None:
        """Return once every record below ``end`` is on disk; KafkaStorageError if the disk
        failed. Two rounds always suffice (a flush started after the first one ended began
        after our append), unless the log was truncated below ``end`` meanwhile: that is
        KafkaStorageError too, though the caller's leadership check reports it first."""
        for _ in range(2):
            if log.recovery_point >= end:
                return
            running = self._running.get(log)
            if running is None or running.done():
                running = asyncio.ensure_future(asyncio.to_thread(log.flush))
                self._running[log] = running
            await asyncio.shield(running)
        if log.recovery_point < end:
            raise KafkaStorageError(f"log {log.directory} did not become durable to {end}")
