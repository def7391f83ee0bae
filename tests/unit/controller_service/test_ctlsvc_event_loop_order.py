"""The event loop decodes watch batches when it reaches them and may hold partition-state-only
batches for a bounded time; the events handled, and their order, never change."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.clock import ManualClock, turns
from services.controller import events as ev
from services.controller.event_loop import EventLoop, HoldPolicy

QUIET = HoldPolicy(quiet_s=0.05, max_s=0.3)


class Recorder:
    """A handler noting (what, when) for every event, and deliveries noting their expansion,
    on a manual clock."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.handled: list[tuple[str, float]] = []
        self.expanded: list[tuple[int, float]] = []

    async def handle(self, event: ev.ControllerEvent) -> None:
        label = f"synced-{event.revision}" if isinstance(event, ev.Synced) else event.name
        self.handled.append((label, self.clock.now()))

    def delivery(self, revision: int, states_only: bool) -> ev.WatchDelivery:
        def expand() -> list[ev.ControllerEvent]:
            self.expanded.append((revision, self.clock.now()))
            return [ev.Synced(revision)]

        return ev.WatchDelivery(revision, 1, states_only, expand)

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.handled]


async def run_until(rec: Recorder, count: int) -> None:
    """Let the loop run (no time passes) until ``count`` events are handled."""
    for _ in range(100):
        if len(rec.handled) >= count:
            return
        await turns()
    raise AssertionError(f"only {rec.labels} handled")


# (what is put, in order: (revision, partition states only) or a control event's name;
#  the order handled, which is the order put, whatever is held)
ORDER_CASES = [
    ([(1, True), (2, True)], ["synced-1", "synced-2"]),
    ([(1, True), (2, False), (3, True)], ["synced-1", "synced-2", "synced-3"]),
    ([(1, True), "Resign", (2, True)], ["synced-1", "Resign", "synced-2"]),
    ([(1, False), (2, True), "Resign"], ["synced-1", "synced-2", "Resign"]),
]


@pytest.mark.parametrize(("put", "expected"), ORDER_CASES)
@pytest.mark.parametrize("hold", [None, QUIET])
async def test_holding_never_reorders(put, expected, hold):
    rec = Recorder()
    loop = EventLoop(rec.handle, hold, clock=rec.clock)
    loop.start()
    for item in put:
        if item == "Resign":
            loop.put(ev.Resign("test"))
        else:
            loop.put(rec.delivery(*item))
    await turns()
    rec.clock.advance(QUIET.max_s)  # whatever is held is due by now
    await run_until(rec, len(expected))
    await loop.stop()
    assert rec.labels == expected


async def test_states_only_batches_wait_for_a_quiet_loop_then_go_together():
    rec = Recorder()
    loop = EventLoop(rec.handle, QUIET, clock=rec.clock)
    loop.start()
    put_at = rec.clock.now()
    loop.put(rec.delivery(1, True))
    loop.put(rec.delivery(2, True))
    await turns()
    rec.clock.advance(QUIET.quiet_s - 0.001)
    await turns()
    assert rec.expanded == [] and loop.held == 2 and loop.queue_size == 2
    rec.clock.advance(0.001)
    await run_until(rec, 2)
    await loop.stop()
    assert [r for r, _ in rec.expanded] == [1, 2]
    assert rec.expanded[0][1] - put_at == pytest.approx(QUIET.quiet_s)
    assert loop.held == 0


async def test_anything_else_releases_the_held_batches_at_once():
    rec = Recorder()
    loop = EventLoop(rec.handle, HoldPolicy(quiet_s=30.0, max_s=60.0), clock=rec.clock)
    loop.start()
    loop.put(rec.delivery(1, True))
    await turns()
    assert loop.held == 1
    loop.put(rec.delivery(2, False))  # e.g. the epoch key of a new controller
    await run_until(rec, 2)  # no time passes
    await loop.stop()
    assert rec.labels == ["synced-1", "synced-2"]


async def test_a_steady_stream_is_held_no_longer_than_max_s():
    rec = Recorder()
    policy = HoldPolicy(quiet_s=0.1, max_s=0.2)
    loop = EventLoop(rec.handle, policy, clock=rec.clock)
    loop.start()
    started = rec.clock.now()
    for revision in range(1, 51):  # a batch every 20 ms for a second: never quiet for 100 ms
        loop.put(rec.delivery(revision, True))
        await turns()
        rec.clock.advance(0.02)
    rec.clock.advance(policy.max_s)
    await run_until(rec, 50)
    await loop.stop()
    # Released at max_s (seen at the end of the 20 ms step it fell in), not at the end.
    held_for = rec.expanded[0][1] - started
    assert policy.max_s <= held_for <= policy.max_s + 0.02
    assert rec.labels == [f"synced-{r}" for r in range(1, 51)]


async def test_a_batch_received_during_an_event_is_decoded_after_it():
    rec = Recorder()
    gate = asyncio.Event()
    decoded_during: list[bool] = []

    async def handle(event: ev.ControllerEvent) -> None:
        if isinstance(event, ev.Resign):
            await gate.wait()  # an event awaiting etcd, say
        await rec.handle(event)

    loop = EventLoop(handle, None, clock=rec.clock)
    loop.start()
    loop.put(ev.Resign("busy"))
    await turns()
    loop.put(rec.delivery(7, False))
    await turns()
    decoded_during.append(bool(rec.expanded))
    gate.set()
    await run_until(rec, 2)
    await loop.stop()
    assert decoded_during == [False]
    assert rec.labels == ["Resign", "synced-7"]


async def test_a_failing_expansion_is_counted_and_the_loop_goes_on():
    rec = Recorder()
    loop = EventLoop(rec.handle, None, clock=rec.clock)
    loop.start()

    def broken() -> list[ev.ControllerEvent]:
        raise RuntimeError("bug")

    loop.put(ev.WatchDelivery(1, 1, False, broken))
    loop.put(rec.delivery(2, False))
    await run_until(rec, 1)
    await loop.stop()
    assert rec.labels == ["synced-2"] and loop.stats.errors == 1


async def test_stop_and_drain_drop_held_batches():
    rec = Recorder()
    loop = EventLoop(rec.handle, HoldPolicy(quiet_s=30.0, max_s=60.0), clock=rec.clock)
    loop.start()
    loop.put(rec.delivery(1, True))
    await turns()
    await asyncio.wait_for(loop.stop(), 5.0)  # no time passes on the loop's clock
    assert loop.drain() == [] and loop.held == 0 and rec.expanded == []
