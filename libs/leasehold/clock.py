"""Time for timing policies, injected: the event loop's clock in services, a manual one in tests.

A policy that waits (a hold, a linger, a grace, a retry timer) reads ``now``, schedules with
``call_later`` and bounds a wait with ``wait_for``; given a ``ManualClock``, a test moves time
with ``advance`` and sees exactly what fires, with no real sleeps and no margins.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, monotonic."""
        ...

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Cancellable:
        """Run ``callback(*args)`` ``delay`` seconds from now (on the running event loop)."""
        ...


class LoopClock:
    """The running event loop's own clock and timers."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:  # outside a loop (set-up code): the same monotonic clock
            return time.monotonic()

    def call_later(
        self, delay: float, callback: Callable[..., Any], *args: Any
    ) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(delay, callback, *args)


class _Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """Time that moves only when a test says so (``advance``); due callbacks run then, in the
    order they are due."""

    def __init__(self, start: float = 1_000.0) -> None:
        self._now = start
        self._due: list[tuple[float, int, _Timer, Callable[..., Any], tuple]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> _Timer:
        timer = _Timer()
        heapq.heappush(
            self._due, (self._now + max(delay, 0.0), next(self._seq), timer, callback, args)
        )
        return timer

    def advance(self, seconds: float) -> None:
        """Move time on by ``seconds``, running every callback due meanwhile."""
        until = self._now + seconds
        while self._due and self._due[0][0] <= until:
            due, _, timer, callback, args = heapq.heappop(self._due)
            self._now = max(self._now, due)
            if not timer.cancelled:
                callback(*args)
        self._now = until

    @property
    def pending(self) -> int:
        """Callbacks scheduled and not cancelled."""
        return sum(1 for entry in self._due if not entry[2].cancelled)


def being_cancelled() -> bool:
    """The running task has been asked to stop (``Task.cancel``), as opposed to something it
    awaited having been cancelled under it (a timer's cancel, a gRPC call's): both raise
    ``CancelledError``, and only the first must never be handled and gone on from."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def wait_for(clock: Clock, awaitable: Awaitable[T], timeout: float) -> T:
    """``asyncio.wait_for`` on ``clock``: TimeoutError once ``timeout`` has passed on it."""
    task = asyncio.ensure_future(awaitable)
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    handle = clock.call_later(max(timeout, 0.0), expire)
    try:
        return await task
    except asyncio.CancelledError:
        if expired and not being_cancelled():
            # Timed out, and the caller itself was not cancelled meanwhile (a loop held past
            # the timeout runs the timer in the same turn as a cancellation): a cancellation
            # is never turned into a timeout the caller would handle and go on from.
            raise TimeoutError from None
        raise
    finally:
        handle.cancel()
        if not task.done():
            task.cancel()


async def sleep(clock: Clock, seconds: float) -> None:
    """``asyncio.sleep`` on ``clock``."""
    done = asyncio.get_running_loop().create_future()
    handle = clock.call_later(max(seconds, 0.0), _resolve, done)
    try:
        await done
    finally:
        handle.cancel()


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


async def turns(count: int = 10) -> None:
    """Let ready tasks run ``count`` rounds of the event loop (after ``ManualClock.advance``)."""
    for _ in range(count):
        await asyncio.sleep(0)
