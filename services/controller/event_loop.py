"""The single controller event loop (Kafka's ControllerEventManager / ControllerEventThread).

One asyncio task takes events from an unbounded queue and awaits the handler for each, so
controller state is only ever touched by one event at a time and needs no locks. Producers (the
watch task, the election task, gRPC handlers, broker channels, timers) only ``put``.

The loop keeps what the metrics need: the queue size and, per event, the time it waited in the
queue and the time its handler took (also reported to ``observer``). An event put with a trace
``parent`` (e.g. by a gRPC handler, under its server span) is handled with that context current,
so the event's span continues the caller's trace.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from opentelemetry.context import Context

from leasehold import telemetry
from services.controller.events import ControllerEvent

log = logging.getLogger(__name__)

Handler = Callable[[ControllerEvent], Awaitable[None]]
# (event name, milliseconds queued, milliseconds handling)
Observer = Callable[[str, float, float], None]


@dataclass
class EventStats:
    """Running totals for metrics: events handled per type, last queue and handling times."""

    handled: dict[str, int] = field(default_factory=dict)
    last_queue_time_ms: float = 0.0
    last_handle_time_ms: float = 0.0
    errors: int = 0


class EventLoop:
    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._queue: asyncio.Queue[tuple[float, ControllerEvent | None, Context | None]] = (
            asyncio.Queue()
        )
        self._task: asyncio.Task | None = None
        self.stats = EventStats()
        self.current: ControllerEvent | None = None
        self.observer: Observer | None = None

    @property
    def queue_size(self) -> int:
        return self._queue.qsize()

    def put(self, event: ControllerEvent, parent: Context | None = None) -> None:
        self._queue.put_nowait((time.monotonic(), event, parent))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="controller-event-loop")

    async def stop(self) -> None:
        """Finish the event being handled, then stop; later events are dropped."""
        if self._task is None:
            return
        self._queue.put_nowait((time.monotonic(), None, None))
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
        except TimeoutError:
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        while True:
            enqueued, event, parent = await self._queue.get()
            if event is None:
                return
            started = time.monotonic()
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
                self.stats.last_handle_time_ms = (time.monotonic() - started) * 1000
                self.stats.handled[event.name] = self.stats.handled.get(event.name, 0) + 1
                if self.observer is not None:
                    self.observer(
                        event.name, self.stats.last_queue_time_ms, self.stats.last_handle_time_ms
                    )

    def drain(self) -> list[ControllerEvent]:
        """Remove and return every queued event (used when stopping to fail waiting callers)."""
        out: list[ControllerEvent] = []
        while not self._queue.empty():
            _, event, _ = self._queue.get_nowait()
            if event is not None:
                out.append(event)
        return out
