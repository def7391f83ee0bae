"""Change signals: how delayed produce and fetch requests learn that a partition moved on.

Kafka parks such requests in purgatories keyed by partition and re-checks them when an append,
a high-watermark move or a leadership change touches that partition. Here each partition owns a
``ChangeSignal``; a waiting request awaits the signals of its partitions (up to its deadline)
and then re-checks its condition itself. A notification wakes every waiter at once and is never
lost: a waiter takes the current future before checking, so a change that happens between the
check and the wait still completes that future.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


class ChangeSignal:
    """A one-shot future per generation; ``notify`` completes it and starts the next."""

    __slots__ = ("_future",)

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def future(self) -> asyncio.Future[None]:
        """The future the next ``notify`` completes (take it *before* checking a condition)."""
        if self._future is None or self._future.done():
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    def notify(self) -> None:
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)
        self._future = None


async def wait_any(futures: Iterable[asyncio.Future[None]], timeout: float) -> bool:
    """Wait until one of ``futures`` completes or ``timeout`` seconds pass; True if woken."""
    pending = [f for f in futures]
    if any(f.done() for f in pending):
        return True
    if timeout <= 0 or not pending:
        return False
    done, _ = await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)
