"""Topic creation and partition addition: New -> Online for partitions and replicas.

Admin writes ``/topics/<name>`` (a new key for a new topic, a compare-and-set adding partitions
to an existing one). The controller moves the new partitions NonExistent -> New, their replicas
NonExistent -> New, the partitions New -> Online (first live replica leads, the live replicas
form the ISR; the state keys are created in batched fenced transactions) and the replicas
New -> Online, as Kafka's ``onNewPartitionCreation``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
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


# New partitions decided, committed and sent per step of ``on_new_partition_creation``, and
# the most partitions of earlier steps whose requests may be unanswered when the next is decided.
CREATION_CHUNK = 20_000
# How long a creation step waits for the brokers to answer the earlier steps (about one step in
# flight, however the partitions came: one topic of a million partitions or a thousand topics of
# a thousand, each its own event): a thousand brokers take longer over a step's UpdateMetadata
# than the controller takes to decide it, and its requests piled up in their queues without this
# (247,000 request batches queued at 1,000 brokers x 1,000,000 partitions created a topic of
# 1,000 at a time). A broker that does not answer (stopped, partitioned) holds one step this long
# at most, and is not waited for again until it has answered what it had been sent by then; its
# requests are retried as before.
CREATION_WAIT_S = 30.0


class TopicFlows:
    def __init__(self, c: FlowContext) -> None:
        self.c = c
        # Creation steps sent and perhaps not yet answered, oldest first: the queued marks
        # (``queued_marks``) as each was sent, and its partitions.
        self._steps: deque[tuple[Mapping[int, int], int]] = deque()
        # Brokers that let a step's wait run out, with the mark they had not answered then.
        self._slow: dict[int, int] = {}

    def stop(self) -> None:
        """Resignation: the marks belonged to the finished term's channels."""
        self._steps.clear()
        self._slow.clear()

    async def on_topic_change(self, event: TopicChange) -> None:
        c = self.c
        ctx = c.ctx
        created: list[TopicPartition] = []
        deleted: list[str] = []
        for u in event.updates:
            topic = u.topic
            if u.assignment is None:
                if ctx.has_topic(topic):
                    log.warning("topic key of %s was deleted outside a topic deletion", topic)
                    ctx.apply_remove_topic(topic)
                    deleted.append(topic)
                continue
            replicas = codec.topic_replicas(u.assignment)
            if ctx.has_topic(topic) and ctx.topic_id(topic) != u.assignment.topic_id:
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
        and the steps before it answered (``_pace``). A million partitions created at once
        would otherwise hold every plan, request and record of all of them in memory together
        (gigabytes), and tell brokers nothing until the last is decided; and a controller
        deciding steps faster than its brokers take them in would queue them without bound."""
        c = self.c
        log.info(
            "new partitions: %s", ", ".join(map(str, tps[:20])) + ("..." if len(tps) > 20 else "")
        )
        for start in range(0, len(tps), CREATION_CHUNK):
            await self._pace()
            chunk = tps[start : start + CREATION_CHUNK]
            replicas = c.ctx.replicas_for_partitions(chunk)
            await move_partitions(c, chunk, PartitionState.NEW)
            await move_replicas(c, replicas, ReplicaState.NEW)
            await move_partitions(c, chunk, PartitionState.ONLINE, selector=LeaderSelector.OFFLINE)
            await move_replicas(c, replicas, ReplicaState.ONLINE)
            await c.send_now()
            self._sent(len(chunk))

    def _sent(self, partitions: int) -> None:
        """Note a step just sent. Small steps in a row (topics of a few partitions created one
        by one) are noted as one, marked where the last left the queues: a wait for it waits a
        little longer, and a thousand brokers' marks are not kept once per tiny topic."""
        steps = self._steps
        if steps and steps[-1][1] + partitions <= CREATION_CHUNK // 4:
            partitions += steps.pop()[1]
        steps.append((self.c.queued_marks(), partitions))

    async def _pace(self) -> None:
        """Before a creation step is decided: wait (``CREATION_WAIT_S`` at most) until no more
        than ``CREATION_CHUNK`` partitions of the steps sent before it, in this event or earlier
        ones, are unanswered; brokers that let such a wait run out are left out of the next
        ones until they have answered what they had by then."""
        c = self.c
        steps = self._steps
        unanswered = sum(n for _, n in steps)
        upto: Mapping[int, int] | None = None
        while steps and unanswered > CREATION_CHUNK:
            upto, n = steps.popleft()
            unanswered -= n
        self._slow = {b: mark for b, mark in self._slow.items() if c.requests_unanswered({b: mark})}
        if upto is None:
            return
        wanted = {b: n for b, n in upto.items() if b not in self._slow}
        if not await c.requests_answered(CREATION_WAIT_S, upto=wanted):
            for b in c.requests_unanswered(wanted):
                self._slow[b] = wanted[b]

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
