"""Control requests before data requests on the broker's one event loop (Kafka's KIP-291).

Kafka gives the controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica) their own
listener and request queue, so they are not stuck behind produce, fetch and metadata requests
when a broker is busy. The agent serves everything on one asyncio loop: a control request that
yields the loop between slices of its work (``leader_and_isr.YIELD_EVERY``) or while its files
are synced on a worker thread lets whatever is ready run meanwhile, and after a broker failure
that is the replication just restarted: new followers' fetch rounds and the other survivor's
fetch sessions, thousands of partitions each. Without an order, a large LeaderAndIsr takes
several times its own CPU to answer, and every chunk of a failure's elections waits for the
answer to the previous one.

``ControlPriority`` is the queue order: while a control request is being handled, data-plane
work does not start (each Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch and Metadata
call, and each replica fetcher round, first awaits ``data_turn``); what already runs goes on
to its next await, and the long steps of replication (a leader's session fetch round, a
follower's handling of the answer) have one every ``SLICE`` partitions (``pause``).
Between two control requests (the controller sends one at a time per broker and waits for
each answer) the data plane runs, once ``LINGER_S`` has passed without another one, or at once
after a request the controller marked ``nothing_queued`` (the last of a spell: a linger after
it would only delay clients' first look at the new leaders). A control request holds the data
plane for ``MAX_HOLD_S`` at most: a 100,000-partition LeaderAndIsr takes seconds, and clients
are then served between its slices rather than not at all. The bound is per request, not per
spell of requests: a broker failure's few requests to a survivor take about a second together,
and letting the replication in halfway would slow the last ones as much as no priority.
Nothing a control request awaits depends on the data plane: its syncs and log creation run on
worker threads, and the fetchers it stops are cancelled, which ends a wait here too.

Time is the injected ``Clock`` (``leasehold.clock``): tests drive the linger and the hold.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from leasehold.channels import give_calls_a_turn
from leasehold.clock import Clock, LoopClock, wait_for

# How long the data plane still waits after a control request: the controller sends a broker's
# next request (the UpdateMetadata after a LeaderAndIsr, the next chunk of a failure's
# elections) as soon as it has the answer, a loop round trip later, and a fetch round started in
# between would hold it up for a round's length. 50 ms covers a busy controller's round trip and
# is short enough not to matter to clients. Metadata calls wait for it too: let through between
# two requests of a spell, they would rebuild the answers of every topic the spell had moved,
# and the next request would wait longer than the linger saves.
LINGER_S = 0.05
# The longest data-plane work waits after the start of the latest control request.
MAX_HOLD_S = 0.5
# Partitions a long data-plane step (a leader's session fetch round, a follower's handling of a
# fetch answer) handles between two preemption points (``ControlPriority.pause``): tens of
# milliseconds of the loop. Metadata answers are not cut (a poll of the topics a failure touched
# would then wait behind every replication slice), nor are requests being built.
SLICE = 500


class ControlPriority:
    def __init__(
        self,
        linger_s: float = LINGER_S,
        max_hold_s: float = MAX_HOLD_S,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._clock = clock or LoopClock()
        self._linger_s = linger_s
        self._max_hold_s = max_hold_s
        self._active = 0
        self._ended = 0  # control requests ended so far: a lingering wait is for the last one
        self._busy_since = 0.0  # loop time the latest control request began
        self._idle = asyncio.Event()
        self._idle.set()
        self.waits = 0  # data-plane entries that had to wait (a metric, and for tests)
        self.overheld = 0  # of which let through after ``max_hold_s``

    @property
    def busy(self) -> bool:
        """A control request is being handled (or has just ended: ``LINGER_S``)."""
        return not self._idle.is_set()

    @contextlib.contextmanager
    def control(self, *, linger: bool = True) -> Iterator[None]:
        """Around the handling of one control request (requests may overlap: each counts).

        ``linger`` False: the controller said nothing follows this request (its
        ``nothing_queued``), so the data plane runs again as soon as it is handled."""
        self._busy_since = self._clock.now()
        self._active += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._active -= 1
            self._ended += 1
            if not self._active:
                if linger and self._linger_s > 0:
                    ended = self._ended
                    self._clock.call_later(self._linger_s, self._open, ended)
                else:
                    self._idle.set()

    def _open(self, ended: int) -> None:
        if not self._active and self._ended == ended:  # no control request since
            self._idle.set()

    async def pause(self) -> None:
        """A preemption point inside long data-plane work (``SLICE``): the loop runs what is
        ready (a control request arriving takes several rounds to reach its handler), and the
        work goes on when the data plane's turn is back. Without it a full fetch session of
        thousands of partitions would hold the loop, and the UpdateMetadata behind it."""
        await give_calls_a_turn()
        await self.data_turn()

    async def data_turn(self) -> None:
        """Return at once when no control request is being handled; else when none is, or
        ``max_hold_s`` after the latest one began."""
        if self._idle.is_set():
            return
        self.waits += 1
        left = self._busy_since + self._max_hold_s - self._clock.now()
        try:
            await wait_for(self._clock, self._idle.wait(), left)
        except TimeoutError:
            self.overheld += 1
