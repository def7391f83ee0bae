"""Becoming the controller: epoch bump, then failover in the order of seed 003 / seed 000 §9.

1. ``on_elected``: bump ``/controller_epoch`` fenced on our election key (contract 3).
2. ``failover`` runs once the context has seen every change up to the bump's revision, so the
   context is the cluster at one revision (a hot standby is already there; a cold start waits
   for its first load):
   deletions in progress; UpdateMetadata to all live brokers *before* the state machines start
   (brokers must know the live brokers before they act on LeaderAndIsr); replica state machine
   startup, then partition state machine startup; pending reassignments resumed; topic deletion
   tried; pending elections run; the auto-rebalance scheduler started.
Resignation (``Controller.deactivate``) undoes all of it.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from leasehold import telemetry
from services.controller import statelog
from services.controller.core import (
    LeaderSelector,
    PartitionState,
    ReplicaState,
    partitions_to_trigger_online,
)
from services.controller.events import Elected
from services.controller.flows.common import move_partitions, move_replicas
from services.controller.store import NotElectedError

if TYPE_CHECKING:
    from services.controller.controller import Controller

log = logging.getLogger(__name__)


class Failover:
    def __init__(self, c: Controller) -> None:
        self.c = c

    async def on_elected(self, event: Elected) -> None:
        c = self.c
        if event.generation != c.election_generation:
            return  # a campaign that has since ended
        if c.active or c.pending_failover is not None:
            return
        started = time.monotonic()
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
        c.epoch, c.epoch_revision = epoch, revision
        c.statelog.controller(statelog.ELECTED, epoch)
        log.info("elected controller with epoch %d (revision %d)", epoch, revision)
        c.pending_failover = (revision, started)
        if c.synced_revision >= revision:
            await self.failover()

    async def failover(self) -> None:
        with telemetry.span(
            "controller.failover", controller_id=self.c.id, controller_epoch=self.c.epoch
        ) as span:
            await self._failover()
            span.set_attributes(telemetry.attrs(partition_count=len(self.c.ctx.all_partitions())))

    async def _failover(self) -> None:
        c = self.c
        assert c.pending_failover is not None
        _, started = c.pending_failover
        c.pending_failover = None
        c.active = True
        c.generation += 1
        ctx = c.ctx
        ctx.apply_controller(c.id, c.epoch)
        c.channels = c.new_channels()
        for info in ctx.brokers.values():
            c.channels.add_broker(info)

        # Deletions in progress (and delete.topic.enable=false answered).
        await c.flows.deletion.init()

        # UpdateMetadata to every live broker before any LeaderAndIsr.
        c.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, ctx.all_partitions())
        c.flush()

        # Replica state machine startup: initial states, then every live replica online.
        online, offline = ctx.online_and_offline_replicas()
        for pr in online:
            ctx.apply_replica_state(pr, ReplicaState.ONLINE)
        for pr in offline:
            ctx.apply_replica_state(pr, ReplicaState.REPLICA_DELETION_INELIGIBLE)
        await move_replicas(c, online, ReplicaState.ONLINE)
        c.flush()

        # Partition state machine startup: initial states, then New/Offline -> Online.
        for tp in ctx.all_partitions():
            lai = ctx.leader_and_isr(tp)
            if lai is None:
                state = PartitionState.NEW
            elif lai.has_leader and lai.leader in ctx.live_broker_ids:
                state = PartitionState.ONLINE
            else:
                state = PartitionState.OFFLINE
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

        duration_ms = (time.monotonic() - started) * 1000
        c.statelog.controller(statelog.FAILOVER_DONE, c.epoch, duration_ms=duration_ms)
        log.info(
            "failover done as controller %d epoch %d in %.1f ms (%d partitions, %d brokers)",
            c.id,
            c.epoch,
            duration_ms,
            len(ctx.all_partitions()),
            len(ctx.brokers),
        )
