"""``leasehold.clock.wait_for``: a timeout on an injected clock that never hides a cancellation."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.clock import ManualClock, wait_for


async def test_a_wait_past_its_timeout_raises_timeout_error() -> None:
    clock = ManualClock()
    waiting = asyncio.ensure_future(wait_for(clock, asyncio.Event().wait(), 1.0))
    await asyncio.sleep(0)
    clock.advance(0.9)
    await asyncio.sleep(0)
    assert not waiting.done()
    clock.advance(0.2)
    with pytest.raises(TimeoutError):
        await waiting


async def test_a_cancellation_in_the_turn_its_timeout_fires_stays_a_cancellation() -> None:
    """A loop held past the timeout runs the timer in the same turn as a cancellation of the
    waiter (a controller stopping its event loop): the waiter must see it cancelled, not a
    timeout it would handle and carry on from."""
    clock = ManualClock()
    waiting = asyncio.ensure_future(wait_for(clock, asyncio.Event().wait(), 1.0))
    await asyncio.sleep(0)
    waiting.cancel()
    clock.advance(2.0)  # before the waiter runs again
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert waiting.cancelled()
