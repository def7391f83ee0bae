"""``FlowContext``: everything a flow may use, and nothing else.

A flow (seed 000 §6-10, seed 002, seed 003) reads the controller's context and the watch's
view, runs decisions of the core through the decide-commit-apply pipeline (``execute``), queues
broker requests (``batch``, ``flush``) and reads the clock. It reads the controller's role
(``role``: epoch, generation) but changes it only through the failover's two steps
(``elected``, ``take_office``). It never touches channels, encoders, caches, the garbage
collector or the event loop: what it asks of the brokers' side is said in its own words —
a bulk change is starting (``bulk_change``), more requests follow (``more_coming``), a step
ended so what was queued may leave (``step_done``), wait until the brokers have answered
(``requests_answered``) — and the delivery (``services.controller.delivery``) decides what
that means. Timers go through ``schedule`` and ``repeat`` on the injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from leasehold.clock import Cancellable, Clock
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    RequestBatch,
    StateChangePlan,
    TopicPartition,
)
from services.controller.core.role import ControllerRole
from services.controller.delivery import BrokerDelivery
from services.controller.statelog import StateChangeLog
from services.controller.store import ControllerStore, PendingPlan, Retry
from services.controller.view import ClusterView


class Host(Protocol):
    """What the context needs of the controller (``Controller`` is the one host)."""

    id: int
    config: ControllerConfig
    ctx: ControllerContext
    view: ClusterView
    store: ControllerStore
    statelog: StateChangeLog
    batch: RequestBatch
    role: ControllerRole
    time: Clock
    delivery: BrokerDelivery
    synced_revision: int
    failover_context: Any
    put: Callable[[ev.ControllerEvent], None]
    on_deposed: Callable[[], None]
    on_leader_elections: Callable[[int, int, float], None]

    def now_ms(self) -> int: ...
    async def execute(
        self, plan: StateChangePlan, *, retry: Retry | None = ..., attempts: int = ...
    ) -> StateChangePlan: ...
    def begin(self, plan: StateChangePlan) -> PendingPlan: ...
    async def complete(
        self, pending: PendingPlan, *, retry: Retry | None = ..., attempts: int = ...
    ) -> StateChangePlan: ...
    def holding_requests(
        self, held: list[StateChangePlan]
    ) -> contextlib.AbstractContextManager: ...
    async def refresh_partitions(self, tps: Sequence[TopicPartition]) -> None: ...
    def flush(self) -> bool: ...
    async def send_now(self) -> None: ...


class Timer:
    """A scheduled or repeating event; ``cancel`` stops it."""

    def __init__(self) -> None:
        self._handle: Cancellable | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self._handle is not None:
            self._handle.cancel()


class FlowContext:
    def __init__(self, host: Host) -> None:
        self._c = host
        self.flows: Any = None  # the sibling flows (``Flows`` sets itself here)

    # ---- what the flows read -----------------------------------------------------------------
    @property
    def id(self) -> int:
        return self._c.id

    @property
    def config(self) -> ControllerConfig:
        return self._c.config

    @property
    def ctx(self) -> ControllerContext:
        return self._c.ctx

    @property
    def view(self) -> ClusterView:
        return self._c.view

    @property
    def store(self) -> ControllerStore:
        """Fenced etcd writes: intents' results, topic keys, configs."""
        return self._c.store

    @property
    def statelog(self) -> StateChangeLog:
        return self._c.statelog

    @property
    def batch(self) -> RequestBatch:
        """Where the event's broker requests are queued (sent by ``flush``)."""
        return self._c.batch

    @property
    def role(self) -> ControllerRole:
        return self._c.role

    @property
    def epoch(self) -> int:
        return self._c.role.epoch

    @property
    def generation(self) -> int:
        return self._c.role.generation

    @property
    def active(self) -> bool:
        return self._c.role.in_office

    @property
    def synced_revision(self) -> int:
        return self._c.synced_revision

    @property
    def failover_context(self) -> Any:
        return self._c.failover_context

    @failover_context.setter
    def failover_context(self, value: Any) -> None:
        self._c.failover_context = value

    def on_leader_elections(self, elected: int, unclean: int, ms: float) -> None:
        self._c.on_leader_elections(elected, unclean, ms)

    def on_deposed(self) -> None:
        self._c.on_deposed()

    # ---- the clock ---------------------------------------------------------------------------
    def clock(self) -> float:
        """Seconds, monotonic."""
        return self._c.time.now()

    def now_ms(self) -> int:
        """Wall-clock milliseconds, for records and results."""
        return self._c.now_ms()

    # ---- decide, commit, apply, queue --------------------------------------------------------
    async def execute(
        self, plan: StateChangePlan, *, retry: Retry | None = None, attempts: int = 3
    ) -> StateChangePlan:
        return await self._c.execute(plan, retry=retry, attempts=attempts)

    def begin(self, plan: StateChangePlan) -> PendingPlan:
        return self._c.begin(plan)

    async def complete(
        self, pending: PendingPlan, *, retry: Retry | None = None
    ) -> StateChangePlan:
        return await self._c.complete(pending, retry=retry)

    async def abandon(self, pending: PendingPlan) -> None:
        """Stop a commit ``begin`` started that will not be completed (the event failed)."""
        if pending.commit is not None:
            pending.commit.cancel()
            await asyncio.gather(pending.commit, return_exceptions=True)

    def holding_requests(self, held: list[StateChangePlan]) -> contextlib.AbstractContextManager:
        return self._c.holding_requests(held)

    async def refresh_partitions(self, tps: Sequence[TopicPartition]) -> None:
        await self._c.refresh_partitions(tps)

    def flush(self) -> bool:
        """Queue the current batch's requests to the brokers now."""
        return self._c.flush()

    async def send_now(self) -> None:
        """``flush``, and let the requests leave before computing on."""
        await self._c.send_now()

    def put(self, event: ev.ControllerEvent) -> None:
        """Queue an event for the controller's event loop."""
        self._c.put(event)

    # ---- the failover's steps of the role ----------------------------------------------------
    def elected(self, epoch: int, epoch_revision: int, started: float) -> None:
        self._c.role.elected(epoch, epoch_revision, started)

    def take_office(self) -> float:
        """The role becomes active and the term's channels open to every registered broker
        (holding their requests while the office is suspended). Returns when the failover
        started."""
        started = self._c.role.activate()
        self._c.ctx.apply_controller(self._c.id, self._c.role.epoch)
        self._c.delivery.open(self._c.ctx.brokers.values(), held=self._c.role.suspended)
        return started

    # ---- the brokers' side, in the flows' words ----------------------------------------------
    def broker_added(self, info: BrokerInfo) -> None:
        self._c.delivery.add_broker(info)

    def broker_removed(self, broker_id: int) -> None:
        self._c.delivery.remove_broker(broker_id)

    def broker_updated(self, info: BrokerInfo) -> None:
        self._c.delivery.update_broker(info)

    def announce_deleted(self, topics: Sequence[str]) -> None:
        """Every registered broker drops ``topics`` from its metadata."""
        self._c.delivery.send_deleted_topics(self._c.ctx, topics)

    async def push_metadata(self) -> str:
        """Every partition to every registered broker before any other request (seed 003);
        what happened, for the log."""
        return await self._c.delivery.push_metadata(self._c.ctx)

    def brokers_up_to_date(self) -> frozenset[int]:
        """Brokers whose metadata was, by their answer to the failover's UpdateMetadata,
        exactly what the old controller had told them (``BrokerDelivery.brokers_up_to_date``)."""
        return self._c.delivery.brokers_up_to_date()

    def when_digest_answered(self, callback: Callable[[int, bool], None]) -> frozenset[int]:
        """Brokers that have not answered the failover's UpdateMetadata yet; as each does,
        ``callback(broker_id, differed)`` runs, ``differed`` if its metadata was not what the
        old controller had told it (``BrokerDelivery.when_digest_answered``)."""
        return self._c.delivery.when_digest_answered(callback)

    def bulk_change(self) -> contextlib.AbstractContextManager:
        """Around a change of thousands of partitions."""
        return self._c.delivery.bulk_change()

    @contextlib.contextmanager
    def more_coming(self) -> Iterator[Callable[[], None]]:
        """Within: the brokers are told more requests follow; the yielded call says the last
        ones are queued (also said on leaving)."""
        release = self._c.delivery.expect_more()
        try:
            yield release
        finally:
            release()

    async def step_done(self) -> None:
        """A step of a long change ended: what was queued and answered may move on."""
        await self._c.delivery.give_calls_a_turn()

    def queued_marks(self) -> dict[int, int]:
        """How many request batches each broker has been queued so far."""
        return self._c.delivery.queued_marks()

    async def requests_answered(
        self,
        timeout_s: float,
        upto: Mapping[int, int] | None = None,
        *,
        quiet_s: float | None = None,
    ) -> bool:
        """Wait until the brokers have answered what was queued, or what was queued by the
        time ``upto`` was taken (``queued_marks``); ``timeout_s`` at most, and with
        ``quiet_s`` no longer than that once no broker waited for has answered for as long."""
        return await self._c.delivery.wait_answered(timeout_s, upto, quiet_s=quiet_s)

    def requests_unanswered(self, upto: Mapping[int, int]) -> frozenset[int]:
        """The brokers that have not answered all that was queued by the time ``upto`` was
        taken (``queued_marks``)."""
        return self._c.delivery.unanswered(upto)

    async def answer_first(self) -> None:
        """Let an answer just set reach its caller before computing on."""
        await asyncio.sleep(0)

    # ---- timers ------------------------------------------------------------------------------
    def schedule(self, delay_s: float, event: ev.ControllerEvent) -> Timer:
        """Put ``event`` after ``delay_s``."""
        timer = Timer()
        timer._handle = self._c.time.call_later(delay_s, self._c.put, event)
        return timer

    def repeat(
        self, first_s: float, every_s: Callable[[], float], event: Callable[[], ev.ControllerEvent]
    ) -> Timer:
        """Put ``event()`` after ``first_s``, then every ``every_s()`` seconds, until
        cancelled."""
        timer = Timer()

        def fire() -> None:
            if timer.cancelled:
                return
            self._c.put(event())
            timer._handle = self._c.time.call_later(every_s(), fire)

        timer._handle = self._c.time.call_later(first_s, fire)
        return timer
