"""The controller: one object owning the context, driven only by the event loop.

``handle`` is the event loop's handler. Metadata events first update the ``ClusterView``; a
standby then copies them into its context (hot standby), the active controller runs the flow for
them. After each watch batch a standby also re-encodes what changed in its UpdateMetadata cache,
so a failover can push every partition at once (``metadata_cache``); when that is many
partitions (a broker's liveness changed, thousands of elections were committed) it does so
``CACHE_REFRESH_DELAY_S`` later instead, in one pass for everything that changed meanwhile, so
the standby does not compete for CPU with the active controller and the brokers while a broker
failure's elections are applied and told. A failover re-encodes whatever is still pending
before it sends. (The cache and its encoding belong to the delivery: ``delivery``.) A standby
also keeps a channel to every registered broker connected, its control stream open where the
controller sends on streams, and the term it wins starts on them (``delivery.keep_ready``).

``execute`` is the decide-commit-apply pipeline every flow uses (ARCHITECTURE §5): commit the
plan's partition-state writes in fenced batched transactions, apply the plan to the context with
the committed partition epochs, log its transitions, then queue its broker requests. Each event's
requests form one batch, sent per broker when the event is done (or earlier where a flow needs
an order, as failover does for UpdateMetadata, or where a state machine's batch must not wait
for the next step, as on a broker failure). The state-change log is flushed after every event,
once gRPC has the event's last requests (``send_now``): encoding tens of thousands of records is
not on the brokers' path, and it lets the broker senders run between slices, so the answers to
the event's first requests are taken and what waits behind them is sent meanwhile. How requests
reach the brokers (encoding, channels, pacing) is the delivery's business
(``services.controller.delivery``); flows see a ``FlowContext`` (``flows.context``). The role
(standby, electing, active, suspended, resigned) is one state machine this object owns
(``core.role``).

A ``FencedError`` anywhere means another controller has taken over: we resign at once.

Each event is one ``controller.event`` span. On the active controller, an event that carries
admin intents (or a new topic's assignment) continues the admin call's trace: the span is a child
of the first intent's stored context and links to the others, and the broker requests flushed at
the end of the event are sent under it, so brokers join the same trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from leasehold import telemetry
from leasehold.clock import Clock, LoopClock
from leasehold.etcd.client import EtcdError
from leasehold.etcd.fenced import FencedError
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.core import (
    ControllerContext,
    ElectionError,
    IllegalStateError,
    RequestBatch,
    StateChangePlan,
    TopicPartition,
)
from services.controller.core.role import ControllerRole
from services.controller.delivery import BrokerDelivery, make_delivery
from services.controller.delivery.channels import ControllerChannelManager
from services.controller.role import Office
from services.controller.statelog import StateChangeLog, now_ms
from services.controller.store import (
    ControllerStore,
    NotElectedError,
    PendingPlan,
    PlanCommit,
    Retry,
    WriteConflictError,
)
from services.controller.view import ClusterView, apply_warm

log = logging.getLogger(__name__)


# How long ``send_now`` waits for gRPC to take a batch from idle senders (normally a few loop
# iterations) before computing on anyway.
ISSUE_TIMEOUT_S = 0.5
# A standby re-encodes fewer changed partitions than this at once, more after the delay.
CACHE_REFRESH_AT_ONCE = 1_000
CACHE_REFRESH_DELAY_S = 3.0

_METADATA = (
    ev.BrokerChange,
    ev.TopicChange,
    ev.PartitionStateChange,
    ev.ConfigChange,
    ev.TopicDeletion,
    ev.ReassignmentRequest,
    ev.ElectionRequest,
    ev.ControllerEpochChange,
)


class Controller:
    def __init__(
        self,
        config: ControllerConfig,
        store: ControllerStore,
        statelog: StateChangeLog,
        snapshot: Callable[[], list[ev.ControllerEvent]],
        channel_factory: Callable[[], ControllerChannelManager],
        *,
        clock: Clock | None = None,
    ) -> None:
        from services.controller.flows import Flows  # the flows import this module for typing

        self.config = config
        self.id = config.controller_id
        self.store = store
        self.statelog = statelog
        self._snapshot = snapshot
        self.ctx = ControllerContext(self.id)
        self.view = ClusterView()
        self.batch = RequestBatch(self.ctx)
        # Encoding, channels and pacing: the flows never see them (``delivery``).
        self.delivery: BrokerDelivery = make_delivery(config.delivery, channel_factory)
        self.time: Clock = clock or LoopClock()  # every timer of the flows and the office
        self.role = ControllerRole()  # written here and by the failover and office only
        self.synced_revision = 0
        # The trace of the failover under way (from the ``controller.elected`` span).
        self.failover_context: Any = None
        self.on_deposed: Callable[[], None] = lambda: None
        # (partitions elected, of which unclean, milliseconds) per leader-electing batch.
        self.on_leader_elections: Callable[[int, int, float], None] = lambda n, u, ms: None
        self.put: Callable[[ev.ControllerEvent], None] = lambda e: None
        self.flows = Flows(self)
        self.office = Office(self)  # suspension through etcd outages, the brokers' grace
        # Set by ``holding_requests``: applied plans whose broker requests wait to be queued.
        self._held_plans: list[StateChangePlan] | None = None
        self._cache_refresh_due = False  # a RefreshStandbyCache is on its way

    # ---- the role, read-only (``core.role``) ----------------------------------------------
    @property
    def active(self) -> bool:
        return self.role.in_office

    @property
    def epoch(self) -> int:
        return self.role.epoch

    @property
    def epoch_revision(self) -> int:
        return self.role.epoch_revision

    @property
    def generation(self) -> int:
        return self.role.generation

    @property
    def pending_failover(self) -> tuple[int, float] | None:
        return self.role.pending_failover

    @property
    def channels(self) -> ControllerChannelManager | None:
        """The term's broker channels (tests and metrics read them)."""
        return self.delivery.channels

    @property
    def metadata_cache(self):
        return getattr(self.delivery, "metadata_cache", None)

    @property
    def heap(self):
        return self.delivery.heap

    # ---- the event handler -------------------------------------------------------------------
    async def handle(self, event: ev.ControllerEvent) -> None:
        try:
            self.batch.new_batch()
        except IllegalStateError as e:  # a bug: a previous event queued requests it never sent
            log.error("%s; dropping them", e)
            self.batch.clear()
        started = self.time.now()
        with self._event_span(event):
            try:
                await self.dispatch(event)
                await self.send_now()  # on gRPC's side before the records are encoded
            except (FencedError, NotElectedError) as e:
                log.warning("deposed while handling %s: %s", event.name, e)
                await self.deactivate(f"fenced: {e}")
                self.on_deposed()
            except (EtcdError, WriteConflictError) as e:
                # A write may have half-happened: only a fresh failover from etcd is safe now.
                if not self.role.holds_epoch:
                    raise
                log.error("etcd failed while handling %s (%s); resigning", event.name, e)
                await self.deactivate(f"etcd error: {e}")
                self.on_deposed()
            finally:
                self.batch.end_event()  # states sent twice in one event are sent once
                self.delivery.event_done()
                # The event's records reach the file in one write; broker senders run between
                # slices of the encoding (``StateChangeLog.flush_async``).
                await self.statelog.flush_async()
        self.delivery.after_event(self.time.now() - started)

    def _event_span(self, event: ev.ControllerEvent) -> contextlib.AbstractContextManager:
        """The event's span (none for the ``Synced`` marker that follows every watch batch, nor
        for a heartbeat: neither is work anyone asked for)."""
        if isinstance(event, ev.Heartbeat) or (
            isinstance(event, ev.Synced) and not self.role.electing
        ):
            return contextlib.nullcontext()
        carriers = self._intent_carriers(event) if self.active else []
        parent, links = telemetry.parent_and_links(carriers)
        if isinstance(event, ev.Elected):
            parent = event.trace_context  # the failover is one trace from the win on
        elif isinstance(event, ev.Synced) and self.failover_context is not None:
            parent = self.failover_context  # the watch caught up: the failover runs now
        return telemetry.span(
            "controller.event",
            parent=parent,
            links=links,
            event=event.name,
            controller_id=self.id,
            controller_epoch=self.epoch,
            active=self.active,
            intent_count=len(carriers) or None,
        )

    def _intent_carriers(self, event: ev.ControllerEvent) -> list[Mapping[str, str]]:
        """Trace contexts of the admin requests an event brings: intents, and topic keys that
        add partitions (not the controller's own reassignment rewrites of a topic key)."""
        return [dict(tc.carrier) for tc in _trace_contexts(event, self.ctx) if tc.carrier]

    async def dispatch(self, event: ev.ControllerEvent) -> None:
        f = self.flows
        if await self.office.intercept(event):  # role events; what a suspended office defers
            return
        if isinstance(event, _METADATA):
            if isinstance(event, ev.BrokerChange):
                event = self.office.through_grace(event)
            self.view.update(event)
            if isinstance(event, ev.ControllerEpochChange):
                await self._on_epoch_change(event)
            elif not self.active:
                apply_warm(self.ctx, self.view, event)
                if isinstance(event, ev.BrokerChange):
                    self.delivery.keep_ready(self.ctx.brokers.values())
            else:
                await f.on_metadata(event)
        elif isinstance(event, ev.Synced):
            self.synced_revision = max(self.synced_revision, event.revision)
            if not self.active:  # hot standby: keep the failover's UpdateMetadata warm
                self._keep_cache_warm()
            if self.role.electing and self.synced_revision >= self.role.epoch_revision:
                await f.failover.failover()
        elif isinstance(event, ev.RefreshStandbyCache):
            self._cache_refresh_due = False
            if not self.active:  # an active controller's cache is refreshed at failover
                self.delivery.refresh_metadata(self.ctx)
        elif isinstance(event, ev.Elected):
            await f.failover.on_elected(event)
        elif isinstance(event, ev.Resign):
            await self.deactivate(event.reason, rebuild=not event.stopping)
            if event.done is not None and not event.done.done():
                event.done.set_result(None)
        elif isinstance(event, ev.AlterPartition):
            await f.alter_partition.handle(event)
        elif isinstance(event, ev.ControlledShutdown):
            await f.shutdown.handle(event)
        elif not self.active:
            return
        elif isinstance(event, ev.Heartbeat):
            f.failover.on_heartbeat(event)
        elif isinstance(event, ev.ResendLeaderAndIsr) and event.generation == self.generation:
            await f.failover.resend_to_late_brokers()
        elif isinstance(event, ev.AutoRebalance) and event.generation == self.generation:
            await f.elections.auto_rebalance()
        elif isinstance(event, ev.StopReplicaResult) and event.controller_epoch == self.epoch:
            await f.deletion.on_stop_replica_result(event)
        elif isinstance(event, ev.RetryTopicDeletion) and event.generation == self.generation:
            await f.deletion.resume_for(event.topics)

    async def _on_epoch_change(self, event: ev.ControllerEpochChange) -> None:
        if self.role.holds_epoch and event.mod_revision > self.epoch_revision:
            log.warning(
                "controller epoch moved to %d (controller %d): we are deposed",
                event.epoch,
                event.controller_id,
            )
            await self.deactivate("a newer controller epoch was written")
            self.on_deposed()

    def _keep_cache_warm(self) -> None:
        """Re-encode the changed partitions' UpdateMetadata now, or, when many changed, in one
        pass ``CACHE_REFRESH_DELAY_S`` from now (module docstring)."""
        if self._cache_refresh_due:
            return  # everything pending goes with the refresh already due
        pending = self.ctx.metadata_changes_pending()
        if pending < CACHE_REFRESH_AT_ONCE:
            if pending:
                self.delivery.refresh_metadata(self.ctx)
            return
        self._cache_refresh_due = True
        self.time.call_later(CACHE_REFRESH_DELAY_S, self.put, ev.RefreshStandbyCache())

    # ---- decide, commit, apply ---------------------------------------------------------------
    def now_ms(self) -> int:
        return now_ms()

    async def execute(
        self, plan: StateChangePlan, *, retry: Retry | None = None, attempts: int = 3
    ) -> StateChangePlan:
        """Commit ``plan``'s writes, apply it, log it, queue its requests; return what applied.

        Partitions whose epoch changed in etcd behind our back are re-read and, when ``retry``
        is given, decided again (Kafka's zkVersion retry loop), at most ``attempts`` times.
        """
        return await self.complete(self.begin(plan), retry=retry, attempts=attempts)

    def begin(self, plan: StateChangePlan) -> PendingPlan:
        """The first half of ``execute``: log the plan's failures and start committing its
        writes, as a task, so that the caller can decide its next plan (other partitions)
        while etcd works; ``complete`` finishes it. Plans are completed in the order begun."""
        for f in plan.failures:
            quiet = f.election_error is ElectionError.ELECTION_NOT_NEEDED
            log.log(logging.INFO if quiet else logging.WARNING, "state change failed: %s", f.reason)
        if not plan.writes:
            return PendingPlan(plan, None)
        ctx = self.ctx
        offline: dict[TopicPartition, list[int]] = {}
        for w in plan.writes:
            online = ctx.replica_online_check(w.tp, include_shutting_down=True)
            offline[w.tp] = [r for r in w.assignment.replicas if not online(r)]
        return PendingPlan(plan, asyncio.ensure_future(self._commit(plan, offline)))

    async def complete(
        self, pending: PendingPlan, *, retry: Retry | None = None, attempts: int = 3
    ) -> StateChangePlan:
        """The second half of ``execute``: wait for the commit, then apply, log and queue."""
        plan = pending.plan
        result = PlanCommit() if pending.commit is None else await pending.commit
        applied = plan.drop_partitions(result.stale, "partition epoch changed in etcd")
        self.ctx.apply_plan(applied, result.epochs)
        self.statelog.write(applied.records)
        if self._held_plans is not None:
            self._held_plans.append(applied)
        else:
            self.batch.add_plan(applied)
        if result.stale:
            log.warning(
                "partition states changed behind our back: %s", list(map(str, result.stale))
            )
            await self.refresh_partitions(result.stale)
            if retry is not None and attempts > 1:
                await self.execute(retry(result.stale), retry=retry, attempts=attempts - 1)
        return applied

    @contextlib.contextmanager
    def holding_requests(self, held: list[StateChangePlan]) -> Iterator[None]:
        """Within: ``execute`` keeps applied plans in ``held`` instead of queueing their broker
        requests, so a flow can answer its caller first and queue them (``batch.add_plan``)
        after; the context already reflects them either way."""
        previous, self._held_plans = self._held_plans, held
        try:
            yield
        finally:
            self._held_plans = previous

    async def _commit(
        self, plan: StateChangePlan, offline: Mapping[TopicPartition, list[int]]
    ) -> PlanCommit:
        if not plan.writes:
            return PlanCommit()
        with telemetry.span(
            "controller.commit", write_count=len(plan.writes), controller_epoch=self.epoch
        ) as span:
            result = await self.store.commit_plan(plan, offline)
            span.set_attributes(
                telemetry.attrs(txn_count=result.transactions, stale_count=len(result.stale))
            )
        return result

    async def refresh_partitions(self, tps: Sequence[TopicPartition]) -> None:
        for tp, stored in (await self.store.read_partition_states(tps)).items():
            if stored is not None:
                self.ctx.apply_leader_and_isr(tp, stored.leader_and_isr)

    def flush(self) -> bool:
        """Send the current batch: one request of each kind per broker. True if any broker
        got something queued."""
        if not self.batch.has_pending:
            return False
        requests = self.batch.build()
        if not self.active or not requests:
            return False
        return self.delivery.send_batch(requests)

    async def send_now(self) -> None:
        """``flush``, then let every idle broker sender hand its part to gRPC before going on.

        Queued requests leave only when the event loop is free, and an event that computes on
        (the replica step of a broker failure, the state-change records at the end of every
        event) would otherwise hold them back; gRPC writes them from its own threads once it
        has them. Senders still waiting for an earlier answer are not waited for.
        """
        if self.flush():
            await self.delivery.wait_issued(ISSUE_TIMEOUT_S, idle_only=True)

    # ---- resignation ---------------------------------------------------------------------------
    async def deactivate(self, reason: str, *, rebuild: bool = True) -> None:
        """Undo everything failover did and (unless the process is stopping: ``rebuild``
        False) rebuild a standby context from the watch mirror."""
        was = self.role.resign()
        self.failover_context = None
        self.store.clear_fence()
        self.batch.clear()
        self.flows.stop()
        await self.delivery.close()
        if was:
            log.info("resigned as controller: %s", reason)
            self.statelog.controller("resigned", self.epoch)
            if rebuild:
                self._rebuild()
        if rebuild:
            self.role.standby()
            self.delivery.keep_ready(self.ctx.brokers.values())

    def _rebuild(self) -> None:
        """A fresh context without the active controller's volatile state (shutting-down
        brokers, replica/partition states, deletion queue), from the watch mirror."""
        started = time.monotonic()
        self.ctx = ControllerContext(self.id)
        self.batch = RequestBatch(self.ctx)
        self.delivery.reset_metadata()
        self.view = ClusterView()
        held = self.office.restore_held()  # brokers in their outage grace stay live
        for event in [*self._snapshot(), *([held] if held else [])]:
            if isinstance(event, _METADATA):
                self.view.update(event)
                apply_warm(self.ctx, self.view, event)
        self.delivery.refresh_metadata(self.ctx)
        log.info("standby context rebuilt in %.1f ms", (time.monotonic() - started) * 1000)


def _trace_contexts(event: ev.ControllerEvent, ctx: ControllerContext) -> Iterator:
    if isinstance(event, ev.TopicChange):
        for u in event.updates:
            a = u.assignment
            if a is not None and any(
                ctx.assignment(TopicPartition(u.topic, p)) is None for p in a.partitions
            ):
                yield a.trace_context
    elif isinstance(event, ev.TopicDeletion | ev.ReassignmentRequest | ev.ElectionRequest):
        for u in event.updates:
            if u.intent is not None:
                yield u.intent.trace_context
