"""Becoming the controller: epoch bump, then failover in the order of seed 003 / seed 000 §9.

1. ``on_elected``: bump ``/controller_epoch`` fenced on our election key (contract 3).
2. ``failover`` runs once the context has seen every change up to the bump's revision, so the
   context is the cluster at one revision (a hot standby is already there; a cold start waits
   for its first load):
   topics being deleted queued; UpdateMetadata to all live brokers *before* the state machines
   start (brokers must know the live brokers before they act on LeaderAndIsr); deletion
   intents answered and ineligible topics marked; replica state machine startup, then partition
   state machine startup; pending reassignments resumed; topic deletion tried; pending
   elections run; the auto-rebalance scheduler started.
Resignation (``Controller.deactivate``) undoes all of it.

Brokers learn the new epoch from that UpdateMetadata, so it must leave at once, not after the
state machines (seconds of computing at 100,000 partitions): ``FlowContext.push_metadata``
returns once it is on its way. How it goes is the delivery's business
(``services.controller.delivery``): the fast delivery sends it from the standby's encoded cache,
digest-first (a broker the old controller kept up to date takes the new epoch without decoding
every partition again), and waits until gRPC has every broker's copy.

The replica state machine's startup moves every live replica Online -> Online to resend
LeaderAndIsr; those self-transitions change nothing and are not written to the state-change
log one record per replica (Kafka logs them at trace level), only counted in the controller
log. A broker whose cache took the failover's digest is left out of that resend: it had
applied every UpdateMetadata of the old controller, and a broker answers its requests in queue
order, each change's LeaderAndIsr before its UpdateMetadata, so it had answered every
LeaderAndIsr too. At a million partitions the resend is three million partition states
decoded and ignored by brokers (equal leader epochs), and most of the failover's CPU. A broker
that has not answered yet is left out as well, and sent its LeaderAndIsr only if its answer,
when it comes, says its metadata differed (``ResendLeaderAndIsr``): at a thousand brokers a
busy fleet's answers can take longer than the failover waits, and nearly all of them agree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from leasehold import telemetry
from services.controller import statelog
from services.controller.core import (
    LeaderSelector,
    PartitionState,
    ReplicaState,
    partitions_to_trigger_online,
)
from services.controller.core.role import Phase
from services.controller.core.startup import initial_partition_states, initial_replica_states
from services.controller.events import Elected, Heartbeat, ResendLeaderAndIsr
from services.controller.flows.common import move_partitions, move_replicas
from services.controller.store import NotElectedError

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext, Timer

log = logging.getLogger(__name__)


class Failover:
    def __init__(self, c: FlowContext) -> None:
        self.c = c
        self._heartbeat: Timer | None = None
        # Brokers whose answer to the failover's UpdateMetadata came after the replica startup
        # and differed: their LeaderAndIsr is due (``resend_to_late_brokers``).
        self._late: set[int] = set()

    async def on_elected(self, event: Elected) -> None:
        c = self.c
        if event.generation != c.role.campaign:
            return  # a campaign that has since ended
        if c.role.phase is not Phase.STANDBY:  # in office, electing, or stopping
            return
        started = c.clock()
        started_ms = statelog.now_ms()
        with telemetry.span("controller.epoch_bump", controller_id=c.id) as span:
            try:
                epoch, revision = await c.store.bump_epoch(
                    event.election_key, event.election_revision, c.id
                )
            except NotElectedError as e:
                log.warning("elected but could not bump the epoch: %s", e)
                span.set_attributes(telemetry.attrs(outcome="not_elected"))
                c.on_deposed()
                return
            span.set_attributes(telemetry.attrs(controller_epoch=epoch, outcome="ok"))
        c.elected(epoch, revision, started)
        # Stamped when handling began, the instant the failover's duration is measured from, so
        # the record and ``failover_done``'s duration agree; ``detected_ms`` is the win itself.
        c.statelog.controller(
            statelog.ELECTED,
            epoch,
            ts_ms=started_ms,
            detected_ms=event.won_ms or -1,
            lease_ttl_ms=event.predecessor_ttl_ms or -1,
        )
        log.info("elected controller with epoch %d (revision %d)", epoch, revision)
        c.failover_context = telemetry.current_context()
        if c.synced_revision >= revision:
            await self.failover()

    async def failover(self) -> None:
        parent, self.c.failover_context = self.c.failover_context, None
        with telemetry.span(
            "controller.failover",
            parent=parent,
            controller_id=self.c.id,
            controller_epoch=self.c.epoch,
        ) as span:
            await self._failover()
            span.set_attributes(telemetry.attrs(partition_count=len(self.c.ctx.all_partitions())))

    async def _failover(self) -> None:
        c = self.c
        # Active, with a channel to every registered broker (holding its requests if the lease
        # went unconfirmed before the failover ran).
        started = c.take_office()
        ctx = c.ctx

        # Topics being deleted first: the UpdateMetadata shows them with leader -2.
        answered = c.flows.deletion.queue_pending()

        # UpdateMetadata to every live broker before any LeaderAndIsr, on the wire now.
        await self._push_metadata(started)

        # Deletions in progress: intents answered (delete.topic.enable=false), ineligibility.
        await c.flows.deletion.init(answered)

        # Replica state machine startup: initial states, then every live replica online,
        # LeaderAndIsr resent to its broker, except to brokers whose metadata was what the old
        # controller had told them: they had answered every LeaderAndIsr it sent before.
        online, offline = ctx.online_and_offline_replicas()
        for pr, replica_state in initial_replica_states(online, offline):
            ctx.apply_replica_state(pr, replica_state)
        up_to_date = c.brokers_up_to_date()
        self._late = set()
        unanswered = c.when_digest_answered(self._answered_late(c.generation))
        left_out = up_to_date | unanswered
        resend = [r for r in online if r.replica not in left_out] if left_out else online
        await move_replicas(c, resend, ReplicaState.ONLINE, record_unchanged=False)
        log.info(
            "replica state machine started: %d replicas online (LeaderAndIsr resent for %d; "
            "brokers %s up to date, %s not answered yet), %d ineligible",
            len(online),
            len(resend),
            _brokers(up_to_date),
            _brokers(unanswered),
            len(offline),
        )
        c.flush()

        # Partition state machine startup: initial states, then New/Offline -> Online.
        live = ctx.live_broker_ids
        for tp, state in initial_partition_states(ctx.all_partitions(), ctx.leader_and_isr, live):
            ctx.apply_partition_state(tp, state)
        await move_partitions(
            c,
            partitions_to_trigger_online(ctx),
            PartitionState.ONLINE,
            selector=LeaderSelector.OFFLINE,
        )
        c.flush()

        await c.flows.reassignment.resume_all()
        c.flush()
        await c.flows.deletion.resume()
        c.flush()
        await c.flows.elections.process_pending()
        c.flush()
        c.flows.elections.start_scheduler()
        self.start_heartbeat()

        duration_ms = (c.clock() - started) * 1000
        c.statelog.controller(statelog.FAILOVER_DONE, c.epoch, duration_ms=duration_ms)
        log.info(
            "failover done as controller %d epoch %d in %.1f ms (%d partitions, %d brokers)",
            c.id,
            c.epoch,
            duration_ms,
            len(ctx.all_partitions()),
            len(ctx.brokers),
        )

    def _answered_late(self, generation: int) -> Callable[[int, bool], None]:
        """What a broker's answer to the failover's UpdateMetadata, arriving after the replica
        startup, does: nothing if it took the digest (it was up to date); else the broker is
        noted for ``resend_to_late_brokers``, in one event for however many answer so."""

        def answered(broker_id: int, differed: bool) -> None:
            if not differed or generation != self.c.generation:
                return
            if not self._late:
                self.c.put(ResendLeaderAndIsr(generation))
            self._late.add(broker_id)

        return answered

    async def resend_to_late_brokers(self) -> None:
        """The replica startup's LeaderAndIsr, to the brokers it left out as not yet answered
        whose metadata then differed from the old controller's."""
        c = self.c
        brokers, self._late = self._late, set()
        ctx = c.ctx
        replicas = [  # online as the startup counts them: shutting down included
            r
            for r in ctx.replicas_on_brokers(brokers)
            if ctx.is_replica_online(r.replica, r.tp, include_shutting_down=True)
        ]
        await move_replicas(c, replicas, ReplicaState.ONLINE, record_unchanged=False)
        c.flush()
        log.info(
            "LeaderAndIsr resent for %d replicas to brokers %s, whose metadata differed",
            len(replicas),
            _brokers(brokers),
        )

    # ---- heartbeat -------------------------------------------------------------------------
    def start_heartbeat(self) -> None:
        """While active, a ``heartbeat`` record every ``heartbeat_interval_s`` (0: none),
        queued as an event so that it also proves the event loop was turning."""
        self.stop_heartbeat()
        interval = self.c.config.heartbeat_interval_s
        if interval > 0:
            generation = self.c.generation
            self._heartbeat = self.c.repeat(
                interval, lambda: interval, lambda: Heartbeat(generation)
            )

    def on_heartbeat(self, event: Heartbeat) -> None:
        c = self.c
        if c.active and event.generation == c.generation:
            c.statelog.controller(statelog.HEARTBEAT, c.epoch)

    def stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    async def _push_metadata(self, started: float) -> None:
        """Every partition to every registered broker, on the wire before anything else; a
        ``metadata_pushed`` record dates it (where a slow failover's time went: before the
        push, in it, or after)."""
        c = self.c
        began, began_ms = c.clock(), statelog.now_ms()
        outcome = await c.push_metadata()
        took_ms = (c.clock() - began) * 1000
        c.statelog.controller(
            statelog.METADATA_PUSHED, c.epoch, ts_ms=began_ms, duration_ms=took_ms
        )
        log.info(
            "UpdateMetadata %s, %.1f ms into the failover (%.1f ms pushing)",
            outcome,
            (c.clock() - started) * 1000,
            took_ms,
        )


def _brokers(ids: Iterable[int]) -> str:
    """Broker ids for the log: listed up to 20, else counted."""
    ids = sorted(ids)
    return str(ids) if len(ids) <= 20 else f"{len(ids)}"
