"""TopicDeletionManager (seed 000 §6), on the event loop instead of a DeleteTopicsThread.

A topic queued for deletion is *eligible* unless one of its replicas is on a dead broker or one of
its partitions is being reassigned. Deleting one: UpdateMetadata (leader -2) to every broker, its
live replicas Offline -> ReplicaDeletionStarted (StopReplica with delete), replicas on dead brokers
ReplicaDeletionIneligible. Each StopReplica answer moves the replica to DeletionSuccessful or
DeletionIneligible; when every replica succeeded the topic's keys are removed from etcd, the
admin result is written and the intent deleted.

A broker that dies mid-deletion leaves its replicas Ineligible and the topic ineligible; when it
registers again the deletion resumes (Ineligible -> Offline -> Started), so nothing stays stuck in
DeletionStarted waiting for an answer that will never come. A replica whose live broker answered
with an error is retried after ``deletion_retry_s``. With ``delete.topic.enable=false`` every
request is answered TOPIC_DELETION_DISABLED and its intent removed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from leasehold.common.v1 import common_pb2
from leasehold.etcd.fenced import Write
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import PartitionReplica, PartitionState, ReplicaState
from services.controller.events import RetryTopicDeletion, StopReplicaResult, TopicDeletion
from services.controller.flows.common import (
    IntentOutcome,
    finish_intents,
    intent_span,
    move_partitions,
    move_replicas,
)

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext, Timer

log = logging.getLogger(__name__)

DELETE = metadata_pb2.ADMIN_OPERATION_DELETE_TOPIC
RS = ReplicaState


class TopicDeletionManager:
    def __init__(self, c: FlowContext) -> None:
        self.c = c
        self._timers: set[Timer] = set()

    def stop(self) -> None:
        for t in self._timers:
            t.cancel()
        self._timers.clear()

    # ---- queueing ----------------------------------------------------------------------------
    def queue_pending(self) -> list[IntentOutcome]:
        """Failover, before the first UpdateMetadata (which shows their partitions with leader
        -2): every intent is a topic to delete. Returns the intents to answer without deleting
        anything (``init`` answers them), so no etcd round trip delays that UpdateMetadata."""
        return self._mark_queued(sorted(self.c.view.deletions))

    async def init(self, answered: Sequence[IntentOutcome]) -> None:
        """Failover, after the first UpdateMetadata: answer ``queue_pending``'s intents and mark
        the queued topics with a replica on a dead broker or a partition being reassigned
        ineligible. Only the queued topics' partitions are looked at."""
        c = self.c
        await finish_intents(c, answered)
        ctx = c.ctx
        for topic in ctx.topics_to_be_deleted:
            tps = ctx.partitions_for_topic(topic)
            dead = any(
                not ctx.is_replica_online(r, tp, include_shutting_down=True)
                for tp in tps
                for r in ctx.replicas(tp)
            )
            reassigning = any(ctx.assignment(tp).is_being_reassigned for tp in tps)
            if dead or reassigning:
                ctx.apply_topic_deletion_eligibility(topic, ineligible=True)

    async def on_intents(self, event: TopicDeletion) -> None:
        intents = [u for u in event.updates if u.intent is not None]
        contexts = [u.intent.trace_context for u in intents]
        with intent_span(
            "controller.topic_deletion", contexts, topic=",".join(u.topic for u in intents)
        ):
            await self._queue([u.topic for u in intents])
            await self.resume()

    async def _queue(self, topics: Iterable[str]) -> None:
        await finish_intents(self.c, self._mark_queued(topics))

    def _mark_queued(self, topics: Iterable[str]) -> list[IntentOutcome]:
        """Queue the topics an intent names; the intents to answer at once (deletion disabled,
        already deleted, wrong topic id)."""
        c = self.c
        ctx = c.ctx
        finished: list[IntentOutcome] = []
        for topic in topics:
            entry = c.view.deletions.get(topic)
            if entry is None or ctx.is_topic_queued_for_deletion(topic):
                continue
            intent, revision = entry
            code, message = common_pb2.ERROR_CODE_NONE, ""
            if not c.view.delete_topic_enable:
                code = common_pb2.ERROR_CODE_TOPIC_DELETION_DISABLED
                message = "Topic deletion is disabled."
            elif not ctx.has_topic(topic):
                pass  # already deleted: a previous controller finished it before the intent
            elif intent.topic_id and intent.topic_id != ctx.topic_id(topic):
                code = common_pb2.ERROR_CODE_UNKNOWN_TOPIC_ID
                message = f"Topic {topic} has id {ctx.topic_id(topic)}, not {intent.topic_id}."
            else:
                ctx.apply_topic_deletion_queued(topic)
                if any(tp.topic == topic for tp in ctx.partitions_being_reassigned()):
                    ctx.apply_topic_deletion_eligibility(topic, ineligible=True)
                log.info("topic %s queued for deletion", topic)
                continue
            finished.append(self._outcome(topic, intent, revision, code, message))
        return finished

    def _outcome(
        self, topic: str, intent: metadata_pb2.TopicDeletion, revision: int, code: int, msg: str
    ) -> IntentOutcome:
        return IntentOutcome(
            self.c.store.ks.delete_topic(topic),
            revision,
            intent.request_id or f"delete-{topic}",
            DELETE,
            (codec.partition_error(topic, -1, code, msg),),
        )

    # ---- the deletion loop (Kafka's resumeDeletions) -----------------------------------------
    def _eligible(self, topic: str) -> bool:
        ctx = self.c.ctx
        return (
            ctx.is_topic_queued_for_deletion(topic)
            and not ctx.is_topic_ineligible_for_deletion(topic)
            and not ctx.replicas_in_state(topic, RS.REPLICA_DELETION_STARTED)
        )

    async def resume(self) -> None:
        ctx = self.c.ctx
        done, start, retry = [], [], []
        for topic in sorted(ctx.topics_to_be_deleted):
            replicas = ctx.replicas_for_topic(topic)
            if set(ctx.replicas_in_state(topic, RS.REPLICA_DELETION_SUCCESSFUL)) == set(replicas):
                done.append(topic)
                continue
            if not ctx.replicas_in_state(topic, RS.REPLICA_DELETION_STARTED):
                if ctx.replicas_in_state(topic, RS.REPLICA_DELETION_INELIGIBLE):
                    retry.append(topic)
            if self._eligible(topic):
                start.append(topic)
        if done:
            await self._complete(done)
        if start:
            await self._on_topic_deletion(start)
        retry = [t for t in retry if t not in start]
        if retry:
            replicas = [
                r for t in retry for r in ctx.replicas_in_state(t, RS.REPLICA_DELETION_INELIGIBLE)
            ]
            await move_replicas(self.c, replicas, RS.OFFLINE, reason="deletion_retry")

    async def resume_for(self, topics: Sequence[str]) -> None:
        """Kafka's resumeDeletionForTopics: a returning broker or a finished reassignment."""
        ctx = self.c.ctx
        for topic in topics:
            if not ctx.is_topic_queued_for_deletion(topic):
                continue
            if any(tp.topic == topic for tp in ctx.partitions_being_reassigned()):
                continue
            replicas = ctx.replicas_for_topic(topic)
            if all(
                ctx.is_replica_online(r.replica, r.tp, include_shutting_down=True) for r in replicas
            ):
                ctx.apply_topic_deletion_eligibility(topic, ineligible=False)
        await self.resume()

    async def _on_topic_deletion(self, topics: Sequence[str]) -> None:
        c = self.c
        ctx = c.ctx
        log.info("deletion of topics %s (re)started", topics)
        partitions = [tp for t in topics for tp in ctx.partitions_for_topic(t)]
        c.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, partitions)
        c.flush()
        dead: list[PartitionReplica] = []
        retry: list[PartitionReplica] = []
        for topic in topics:
            successful = set(ctx.replicas_in_state(topic, RS.REPLICA_DELETION_SUCCESSFUL))
            for r in ctx.replicas_for_topic(topic):
                if not ctx.is_replica_online(r.replica, r.tp, include_shutting_down=True):
                    dead.append(r)
                elif r not in successful:
                    retry.append(r)
        await move_replicas(
            c,
            [r for r in dead if ctx.replica_state(r) is not RS.REPLICA_DELETION_INELIGIBLE],
            RS.REPLICA_DELETION_INELIGIBLE,
        )
        await move_replicas(c, retry, RS.OFFLINE, reason="deletion")
        await move_replicas(c, retry, RS.REPLICA_DELETION_STARTED)
        for topic in {r.topic for r in dead}:
            ctx.apply_topic_deletion_eligibility(topic, ineligible=True)

    # ---- StopReplica answers -----------------------------------------------------------------
    async def on_stop_replica_result(self, event: StopReplicaResult) -> None:
        ctx = self.c.ctx
        failed, deleted = [], []
        for tp, error in event.errors:
            r = PartitionReplica(tp, event.broker_id)
            if ctx.replica_state(r) is not RS.REPLICA_DELETION_STARTED:
                continue
            (failed if error else deleted).append(r)
        if failed:
            log.warning("replica deletion failed for %s", ", ".join(map(str, failed)))
            await self.fail_replica_deletion(failed)
        if deleted:
            await move_replicas(self.c, deleted, RS.REPLICA_DELETION_SUCCESSFUL)
            await self.resume()

    async def fail_replica_deletion(self, replicas: Sequence[PartitionReplica]) -> None:
        c = self.c
        ctx = c.ctx
        chosen = [r for r in replicas if ctx.is_topic_queued_for_deletion(r.topic)]
        if not chosen:
            return
        failing = RS.REPLICA_DELETION_INELIGIBLE.valid_previous_states
        await move_replicas(
            c,
            [r for r in chosen if ctx.replica_state(r) in failing],
            RS.REPLICA_DELETION_INELIGIBLE,
        )
        topics = sorted({r.topic for r in chosen})
        for topic in topics:
            ctx.apply_topic_deletion_eligibility(topic, ineligible=True)
        await self.resume()
        self._retry_later(topics)

    def _retry_later(self, topics: Sequence[str]) -> None:
        c = self.c
        event = RetryTopicDeletion(tuple(topics), c.generation)
        self._timers.add(c.schedule(c.config.deletion_retry_s, event))

    # ---- completion --------------------------------------------------------------------------
    async def _complete(self, topics: Sequence[str]) -> None:
        c = self.c
        ctx, ks = c.ctx, c.store.ks
        replicas = [r for t in topics for r in ctx.replicas_for_topic(t)]
        partitions = [tp for t in topics for tp in ctx.partitions_for_topic(t)]
        await move_replicas(c, replicas, RS.NON_EXISTENT)
        await move_partitions(c, partitions, PartitionState.OFFLINE, reason="deletion")
        await move_partitions(c, partitions, PartitionState.NON_EXISTENT)
        writes = [Write(ks.partition_state(tp.topic, tp.partition), None) for tp in partitions]
        writes += [Write(ks.topic(t), None) for t in topics]
        writes += [
            Write(ks.topic_config(t), None) for t in topics if ks.topic_config(t) in c.store.mirror
        ]
        await c.store.commit(writes)
        outcomes = []
        for topic in topics:
            entry = c.view.deletions.get(topic)
            if entry is not None:
                outcomes.append(self._outcome(topic, entry[0], entry[1], 0, ""))
            ctx.apply_remove_topic(topic)
            log.info("deletion of topic %s completed", topic)
        await finish_intents(c, outcomes)
        self.announce_deleted(topics)

    def announce_deleted(self, topics: Sequence[str]) -> None:
        """UpdateMetadata with ``deleted_topics`` so brokers drop them from their caches."""
        self.c.announce_deleted(topics)
