"""The single controller event loop (Kafka's ControllerEventManager / ControllerEventThread).

One asyncio task takes events from an unbounded queue and awaits the handler for each, so
controller state is only ever touched by one event at a time and needs no locks. Producers (the
watch task, the election task, gRPC handlers, broker channels, timers) only ``put``.

The loop keeps what the metrics need: the queue size and, per event, the time it waited in the
queue and the time its handler took (also reported to ``observer``). An event put with a trace
``parent`` (e.g. by a gRPC handler, under its server span) is handled with that context current,
so the event's span continues the caller's trace.

Watch batches arrive undecoded (``WatchDelivery``) and are decoded here, when the loop reaches
them: a batch received while an event is being handled waits, undecoded, so the etcd echo of a
big commit is not decoded while the same event still has requests to build and send. A batch
made only of partition-state changes (the echo of controller commits: 10,000 after a broker
failure) may further be *held* (``HoldPolicy``): decoded once the loop has had nothing else to
do for ``quiet_s``, or ``max_s`` after it was first held, so that neither the active controller
nor a standby spends its CPU on that echo in the second in which brokers apply the requests.
Holding never reorders: anything else the loop takes (another watch batch, an ``Elected``, a
broker's request) first releases every held batch, in order. So the events handled, and their
order, are exactly those without holding; only idle time moves. In particular a standby that is
elected has decoded everything before it bumps the epoch, and its failover still waits until
it has applied the watch up to the bump's revision.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from opentelemetry.context import Context

from leasehold import telemetry
from leasehold.clock import Clock, LoopClock, wait_for
from services.controller.events import ControllerEvent, WatchDelivery

log = logging.getLogger(__name__)

Handler = Callable[[ControllerEvent], Awaitable[None]]
# (event name, milliseconds queued, milliseconds handling)
Observer = Callable[[str, float, float], None]


@dataclass(frozen=True)
class HoldPolicy:
    """How long partition-state-only watch batches may wait, undecoded (module docstring)."""

    # Released once the loop has taken nothing else for this long (a broker failure's echo ends
    # well before the brokers have applied their LeaderAndIsr: keep out of that second) ...
    quiet_s: float = 1.0
    max_s: float = 3.0  # ... and at the latest this long after the first was held


# Queue entries: (time put, event or None to stop, trace parent).
_Item = tuple[float, ControllerEvent | None, Context | None]


@dataclass
class EventStats:
    """Running totals for metrics: events handled per type, last queue and handling times."""

    handled: dict[str, int] = field(default_factory=dict)
    last_queue_time_ms: float = 0.0
    last_handle_time_ms: float = 0.0
    errors: int = 0


class EventLoop:
    def __init__(
        self,
        handler: Handler,
        hold: HoldPolicy | None = HoldPolicy(),
        *,
        clock: Clock | None = None,
    ) -> None:
        self._clock = clock or LoopClock()
        self._handler = handler
        self._hold = hold
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._held: list[_Item] = []
        self._held_first = 0.0  # when the loop held the first of ``_held``
        self._held_last = 0.0  # ... and the last
        self._task: asyncio.Task | None = None
        self.stats = EventStats()
        self.current: ControllerEvent | None = None
        self.observer: Observer | None = None

    @property
    def queue_size(self) -> int:
        return self._queue.qsize() + len(self._held)

    @property
    def held(self) -> int:
        """Watch batches held back, undecoded."""
        return len(self._held)

    def put(self, event: ControllerEvent, parent: Context | None = None) -> None:
        self._queue.put_nowait((self._clock.now(), event, parent))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="controller-event-loop")

    async def stop(self) -> None:
        """Finish the event being handled, then stop; later events are dropped."""
        if self._task is None:
            return
        self._queue.put_nowait((self._clock.now(), None, None))
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
        except TimeoutError:
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        while True:
            item = await self._next()
            if item is None:  # the hold ran out
                await self._release()
                continue
            enqueued, event, parent = item
            if event is None:
                return
            if isinstance(event, WatchDelivery) and self._holds(event):
                now = self._clock.now()
                if not self._held:
                    self._held_first = now
                self._held_last = now
                self._held.append(item)
                continue
            await self._release()
            if isinstance(event, WatchDelivery):
                await self._expand(enqueued, event)
            else:
                await self._handle(enqueued, event, parent)

    def _holds(self, delivery: WatchDelivery) -> bool:
        return self._hold is not None and delivery.partition_states_only

    async def _next(self) -> _Item | None:
        """The next queue entry; None when the held batches are due first."""
        if not self._held:
            return await self._queue.get()
        assert self._hold is not None
        due = min(self._held_last + self._hold.quiet_s, self._held_first + self._hold.max_s)
        remaining = due - self._clock.now()
        if remaining <= 0:
            return None
        try:
            # A cancelled ``Queue.get`` leaves its item in the queue: nothing is lost.
            return await wait_for(self._clock, self._queue.get(), remaining)
        except TimeoutError:
            return None

    async def _release(self) -> None:
        """Decode and handle every held batch, in the order received."""
        held, self._held = self._held, []
        for enqueued, event, _ in held:
            assert isinstance(event, WatchDelivery)
            await self._expand(enqueued, event)

    async def _expand(self, enqueued: float, delivery: WatchDelivery) -> None:
        try:
            events = delivery.expand()
        except Exception:
            # The decoder skips undecodable keys itself; this is a bug, not bad data.
            self.stats.errors += 1
            log.exception("error while decoding a watch batch at revision %d", delivery.revision)
            return
        for event in events:
            await self._handle(enqueued, event, None)

    async def _handle(
        self, enqueued: float, event: ControllerEvent, parent: Context | None
    ) -> None:
        started = self._clock.now()
        self.stats.last_queue_time_ms = (started - enqueued) * 1000
        self.current = event
        try:
            with telemetry.attached(parent):
                await self._handler(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug in one handler must not stop the controller; the handler resigns on
            # anything that leaves the controller state unsafe.
            self.stats.errors += 1
            log.exception("error while handling controller event %s", event.name)
        finally:
            self.current = None
            self.stats.last_handle_time_ms = (self._clock.now() - started) * 1000
            self.stats.handled[event.name] = self.stats.handled.get(event.name, 0) + 1
            if self.observer is not None:
                self.observer(
                    event.name, self.stats.last_queue_time_ms, self.stats.last_handle_time_ms
                )

    def drain(self) -> list[ControllerEvent]:
        """Remove and return every queued event (used when stopping to fail waiting callers);
        held watch batches are dropped."""
        self._held.clear()
        out: list[ControllerEvent] = []
        while not self._queue.empty():
            _, event, _ = self._queue.get_nowait()
            if event is not None:
                out.append(event)
        return out
