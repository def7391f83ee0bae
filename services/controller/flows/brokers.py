"""Broker startup and failure (seed 000 §8.2.3), driven by registration keys coming and going.

A registration whose create revision changed is a bounce (KIP-380: a new broker epoch): it is
handled as a failure followed by a startup, so stale requests queued for the old incarnation are
dropped with its channel. The exception is a broker that lost its registration in an etcd outage
and registered again from the same process (``BrokerChange.resumed``, see ``role``): it is
handled as a startup alone, so no partition changes leader.

A failure re-elects the dead brokers' partitions in chunks (``ELECTION_CHUNK``): each chunk's
requests are sent as soon as its commit is applied, and the next chunk is decided and its commit
started while that commit is in flight (``common.elect_in_chunks``). The brokers' requests stay
in Kafka's order per broker (LeaderAndIsr, then UpdateMetadata for the same partitions), every
LeaderAndIsr still follows the commit of its partitions' states, and the brokers apply one chunk
while the controller works on the next instead of waiting for the whole event.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from services.controller import statelog
from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    LeaderSelector,
    PartitionReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
    partitions_to_trigger_online,
)
from services.controller.events import BrokerChange
from services.controller.flows.common import elect_in_chunks, move_partitions, move_replicas

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

log = logging.getLogger(__name__)

# Partitions a broker failure moves Offline and elects again per step. Each chunk's LeaderAndIsr
# and UpdateMetadata are handed to gRPC once its commit is applied, so the surviving brokers
# apply the first leaders while the controller decides and commits the rest, rather than
# everything at once at the end.
ELECTION_CHUNK = 5_000
# How long a failure's replica step waits for the brokers to answer the elections' requests,
# or whatever else is in flight (``FlowContext.requests_answered``): as long as answers keep
# coming, ``ANSWERS_WAIT_S`` at most, and ``ANSWERS_QUIET_S`` after the last answer. A broker
# failure leading 10,000 partitions is answered in about half a second, and telling a thousand
# brokers of one leading 100 takes this 2-core machine's simulated fleet about two seconds,
# which the replica step's own requests would only lengthen; a broker that does not answer
# (stopped, partitioned) holds the rest of the event ``ANSWERS_QUIET_S`` past the others'
# answers, and its requests are retried as before.
ANSWERS_WAIT_S = 5.0
ANSWERS_QUIET_S = 1.0


class BrokerFlows:
    def __init__(self, c: FlowContext) -> None:
        self.c = c

    async def on_broker_change(self, event: BrokerChange) -> None:
        c = self.c
        ctx = c.ctx
        known = dict(ctx.brokers)
        registered_ids = {info.id for info in event.registered}
        gone = set(event.deregistered)
        new: list[BrokerInfo] = []
        bounced: list[BrokerInfo] = []
        resumed: list[BrokerInfo] = []
        for info in event.registered:
            old = known.get(info.id)
            if info.id in event.resumed and old is not None:
                resumed.append(info)
            elif old is None:
                new.append(info)
            elif old.epoch != info.epoch or info.id in gone:
                bounced.append(info)
            elif old != info:
                ctx.apply_broker_registered(info)
                c.broker_updated(info)
                c.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        dead = sorted(b for b in gone if b in known and b not in registered_ids)
        log.info(
            "broker change: new %s, bounced %s, dead %s, back after an etcd outage %s",
            sorted(i.id for i in new),
            sorted(i.id for i in bounced),
            dead,
            sorted(i.id for i in resumed),
        )
        if resumed:
            # Same process, new broker epoch: it is told everything again under the new epoch,
            # as a starting broker is; nothing is elected (``role.OutageGrace``).
            for info in resumed:
                self._add(info)
            await self.on_broker_startup(sorted(i.id for i in resumed))
        if new:
            for info in new:
                self._add(info)
            await self.on_broker_startup(sorted(i.id for i in new))
        if bounced:
            for info in bounced:
                self._remove(known[info.id], event.received_ms)
            await self.on_broker_failure(sorted(i.id for i in bounced))
            for info in bounced:
                self._add(info)
            await self.on_broker_startup(sorted(i.id for i in bounced))
        if dead:
            for broker_id in dead:
                self._remove(known[broker_id], event.received_ms)
            await self.on_broker_failure(dead)

    def _add(self, info: BrokerInfo) -> None:
        c = self.c
        c.ctx.apply_broker_registered(info)
        c.broker_added(info)
        c.statelog.broker(
            statelog.BROKER_REGISTERED,
            info.id,
            c.epoch,
            registered_ms=info.registered_at_ms or -1,
        )

    def _remove(self, info: BrokerInfo, received_ms: int) -> None:
        """Forget a broker whose registration is gone; the record keeps what dates the loss
        (when the watch delivered it, the lease TTL, the lost incarnation's registration)."""
        c = self.c
        c.ctx.apply_broker_removed(info.id)  # also ends a controlled shutdown in progress
        c.broker_removed(info.id)
        c.statelog.broker(
            statelog.BROKER_EXPIRED,
            info.id,
            c.epoch,
            detected_ms=received_ms or -1,
            lease_ttl_ms=info.session_ttl_ms or -1,
            registered_ms=info.registered_at_ms or -1,
        )

    async def on_broker_startup(self, new_ids: Sequence[int]) -> None:
        c = self.c
        ctx = c.ctx
        new_set = set(new_ids)
        existing = ctx.live_or_shutting_down_broker_ids - new_set
        # Existing brokers learn the new broker list; new brokers get every partition.
        c.batch.add_update_metadata(existing)
        c.flush()
        c.batch.add_update_metadata(new_set, ctx.all_partitions())
        c.flush()
        replicas = ctx.replicas_on_brokers(new_set)
        await move_replicas(c, replicas, ReplicaState.ONLINE)
        await move_partitions(
            c,
            partitions_to_trigger_online(ctx),
            PartitionState.ONLINE,
            selector=LeaderSelector.OFFLINE,
        )
        c.flush()
        await c.flows.reassignment.resume_where(
            lambda a: any(r in new_set for r in a.target_replicas)
        )
        deleting = {r.topic for r in replicas if ctx.is_topic_queued_for_deletion(r.topic)}
        if deleting:
            await c.flows.deletion.resume_for(sorted(deleting))

    async def on_broker_failure(self, dead_ids: Sequence[int]) -> None:
        """Kafka's ``onBrokerFailure``, sending each state machine's batch as its step ends
        (``handleStateChanges``): the re-elected partitions' LeaderAndIsr and UpdateMetadata
        leave before the replica step (StopReplica, ISR shrink) is even decided, and that step
        waits until the brokers have answered them (``ANSWERS_WAIT_S`` at most).

        The partitions the dead brokers led move Offline and are elected again
        ``ELECTION_CHUNK`` at a time, pipelined (module docstring); then whatever else is New
        or Offline is brought online, as Kafka's ``triggerOnlinePartitionStateChange`` does.
        """
        c = self.c
        ctx = c.ctx
        with c.bulk_change():
            without_leader = _partitions_without_leader(ctx)
            await elect_in_chunks(
                c,
                (
                    without_leader[i : i + ELECTION_CHUNK]
                    for i in range(0, len(without_leader), ELECTION_CHUNK)
                ),
                LeaderSelector.OFFLINE,
                prepare=lambda chunk: move_partitions(c, chunk, PartitionState.OFFLINE),
            )
            tried = set(without_leader)  # those that failed to elect are not tried twice
            await move_partitions(
                c,
                [tp for tp in partitions_to_trigger_online(ctx) if tp not in tried],
                PartitionState.ONLINE,
                selector=LeaderSelector.OFFLINE,
            )
            await c.send_now()
            # The replica step below computes for a while on the event loop, and an answer
            # arriving meanwhile would wait for it, and with it the rest of each broker's chain
            # (UpdateMetadata, the next chunk): let the brokers answer the elections first.
            # With nothing to elect, what follows (ISR shrinks, the broker gone from the live
            # set) is not urgent, and what is in flight may be: a controlled shutdown's
            # leadership moves, still reaching a thousand brokers when the broker they let go
            # has stopped. Sent between, this event's requests would hold their tail back.
            await c.requests_answered(ANSWERS_WAIT_S, quiet_s=ANSWERS_QUIET_S)
            # The dead brokers' replicas (the context keeps them by broker); after the
            # elections, which change no assignment.
            replicas = ctx.replicas_on_brokers(dead_ids)
            deleting = ctx.is_topic_queued_for_deletion
            for_deletion = [r for r in replicas if deleting(r.tp.topic)]
            others = [r for r in replicas if not deleting(r.tp.topic)]
            # Dead replicas leave the ISR (the dead leader's partitions were re-elected above),
            # a chunk at a time: between chunks the brokers' answers are taken, so the
            # election chunks still queued behind them leave meanwhile.
            for i, chunk in enumerate(_by_partition_chunks(others, ELECTION_CHUNK)):
                if i:
                    await c.step_done()
                await move_replicas(c, chunk, ReplicaState.OFFLINE)
            if for_deletion:
                await c.flows.deletion.fail_replica_deletion(for_deletion)
            if not without_leader:
                c.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)


def _by_partition_chunks(
    replicas: Sequence[PartitionReplica], size: int
) -> list[Sequence[PartitionReplica]]:
    """``replicas`` (sorted, so a partition's replicas are adjacent) cut into runs of at least
    ``size``, never between two replicas of one partition: a partition losing several
    replicas at once shrinks its ISR in one write."""
    chunks: list[Sequence[PartitionReplica]] = []
    start = 0
    for i in range(1, len(replicas)):
        if i - start >= size and replicas[i].tp != replicas[i - 1].tp:
            chunks.append(replicas[start:i])
            start = i
    if start < len(replicas):
        chunks.append(replicas[start:])
    return chunks


def _partitions_without_leader(ctx: ControllerContext) -> list[TopicPartition]:
    """Partitions whose leader is not online (dead, or its replica on a failed log directory),
    of topics not queued for deletion."""
    deleting = ctx.is_topic_queued_for_deletion
    return [tp for tp in ctx.partitions_with_offline_leader() if not deleting(tp.topic)]
