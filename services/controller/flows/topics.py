"""Topic creation and partition addition: New -> Online for partitions and replicas.

Admin writes ``/topics/<name>`` (a new key for a new topic, a compare-and-set adding partitions
to an existing one). The controller moves the new partitions NonExistent -> New, their replicas
NonExistent -> New, the partitions New -> Online (first live replica leads, the live replicas
form the ISR; the state keys are created in batched fenced transactions) and the replicas
New -> Online, as Kafka's ``onNewPartitionCreation``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from services.controller import codec
from services.controller.core import (
    LeaderSelector,
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from services.controller.events import PartitionStateChange, TopicChange
from services.controller.flows.common import intent_span, move_partitions, move_replicas

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

log = logging.getLogger(__name__)


# New partitions decided, committed and sent per step of ``on_new_partition_creation``.
CREATION_CHUNK = 20_000
# How long a creation step waits for the brokers to answer the step before the one just sent
# (one step in flight): a thousand brokers take longer over a step's UpdateMetadata than the
# controller takes to decide it, and its requests piled up in their queues without this. A
# broker that does not answer (stopped, partitioned) holds one step this long at most, and is
# not waited for again in that creation; its requests are retried as before.
CREATION_WAIT_S = 30.0


class TopicFlows:
    def __init__(self, c: FlowContext) -> None:
        self.c = c

    async def on_topic_change(self, event: TopicChange) -> None:
        c = self.c
        ctx = c.ctx
        created: list[TopicPartition] = []
        deleted: list[str] = []
        for u in event.updates:
            topic = u.topic
            if u.assignment is None:
                if topic in ctx.all_topics:
                    log.warning("topic key of %s was deleted outside a topic deletion", topic)
                    ctx.apply_remove_topic(topic)
                    deleted.append(topic)
                continue
            replicas = codec.topic_replicas(u.assignment)
            if topic in ctx.all_topics and ctx.topic_id(topic) != u.assignment.topic_id:
                log.error(
                    "topic %s changed id from %s to %s while still known; ignoring the change",
                    topic,
                    ctx.topic_id(topic),
                    u.assignment.topic_id,
                )
                continue
            added = {
                p: codec.compose_assignment(r)
                for p, r in replicas.items()
                if ctx.assignment(TopicPartition(topic, p)) is None
            }
            if not added:
                continue  # our own reassignment write, or nothing new
            if ctx.is_topic_queued_for_deletion(topic):
                log.warning(
                    "not adding partitions %s to %s: it is being deleted", sorted(added), topic
                )
                continue
            ctx.apply_topic(
                topic, u.assignment.topic_id, added, c.view.effective_topic_config(topic)
            )
            created.extend(TopicPartition(topic, p) for p in sorted(added))
        if deleted:
            c.flows.deletion.announce_deleted(deleted)
        if created:
            contexts = [u.assignment.trace_context for u in event.updates if u.assignment]
            with intent_span("controller.new_partitions", contexts, partition_count=len(created)):
                await self.on_new_partition_creation(created)

    async def on_new_partition_creation(self, tps: Sequence[TopicPartition]) -> None:
        """Kafka's ``onNewPartitionCreation``, ``CREATION_CHUNK`` partitions at a time: each
        chunk New, then Online with its replicas, its requests sent before the next is decided,
        and the chunk before it answered (``CREATION_WAIT_S`` at most, once per broker). A
        million partitions created at once would otherwise hold every plan, request and record
        of all of them in memory together (gigabytes), and tell brokers nothing until the last
        is decided; and a controller deciding chunks faster than its brokers take them in would
        queue them without bound."""
        c = self.c
        log.info(
            "new partitions: %s", ", ".join(map(str, tps[:20])) + ("..." if len(tps) > 20 else "")
        )
        sent_before: dict[int, int] | None = None  # the queues as the step before was sent
        slow: set[int] = set()  # brokers that let a wait run out: not waited for again
        for start in range(0, len(tps), CREATION_CHUNK):
            if start:
                await c.send_now()
                if sent_before is not None and not await c.requests_answered(
                    CREATION_WAIT_S, upto=sent_before
                ):
                    slow |= c.requests_unanswered(sent_before)
                sent_before = {b: n for b, n in c.queued_marks().items() if b not in slow}
            chunk = tps[start : start + CREATION_CHUNK]
            replicas = c.ctx.replicas_for_partitions(chunk)
            await move_partitions(c, chunk, PartitionState.NEW)
            await move_replicas(c, replicas, ReplicaState.NEW)
            await move_partitions(c, chunk, PartitionState.ONLINE, selector=LeaderSelector.OFFLINE)
            await move_replicas(c, replicas, ReplicaState.ONLINE)

    def on_partition_state_change(self, event: PartitionStateChange) -> None:
        """Our own writes come back through the watch and are ignored; anything newer was not
        written by us (it cannot be, while our fence holds) and is adopted with a warning."""
        ctx = self.c.ctx
        for u in event.updates:
            if u.state is None or ctx.assignment(u.tp) is None:
                continue
            current = ctx.leader_and_isr(u.tp)
            if current is not None and u.mod_revision <= current.partition_epoch:
                continue
            log.warning("partition state of %s changed outside this controller; adopting it", u.tp)
            ctx.apply_leader_and_isr(u.tp, u.state.leader_and_isr)
