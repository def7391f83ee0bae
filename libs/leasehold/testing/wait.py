"""Polling helpers: wait for a condition with a deadline instead of sleeping for correctness."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def until(
    probe: Callable[[], Awaitable[T]], *, timeout: float, interval: float = 0.1, what: str = ""
) -> T:
    """Await ``probe()`` until it returns a truthy value (returned); errors count as "not yet"."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = await probe()
            if value:
                return value
        except Exception as e:  # the condition may not be checkable yet (service starting)
            last_error = e
        if time.monotonic() >= deadline:
            detail = f"; last error: {last_error!r}" if last_error else ""
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}{detail}")
        await asyncio.sleep(interval)
