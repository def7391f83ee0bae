"""CreateTopics and CreatePartitions: validate everything, then write each topic atomically.

A new topic is its ``TopicAssignment`` plus its config overrides, written in one transaction that
requires the topic key not to exist (``create_revision == 0``), so of two racing creators exactly
one wins and the other reports TOPIC_ALREADY_EXISTS. Placement is Kafka's
``assignReplicasToBrokers`` over the live brokers (rack aware when they have racks); partition
addition continues a topic's pattern as Kafka's ``createNewPartitionsAssignment`` does and is a
compare-and-set on the assignment's mod revision. The controller brings the partitions online; a
caller that asks to wait is answered once every partition has a leader.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from leasehold import configs, validation
from leasehold.assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    new_partitions_assignment,
)
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, PreconditionError
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_delete, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.validation import topic_name_problem
from services.admin.config import Limits
from services.admin.model import (
    CallContext,
    NewPartitions,
    NewTopic,
    Outcome,
    TopicResult,
    frozen_assignment,
)
from services.admin.operations import now_ms, optimistic, trace_context, wait_seconds
from services.admin.snapshot import NO_LEADER, Snapshot, TopicView
from services.admin.store import AdminStore, Change, Want
from services.admin.validate import (
    check_partition_cap,
    check_total_partitions,
    no_duplicates,
    not_empty,
    require_topic,
    validating,
)

_TIMED_OUT = common_pb2.ERROR_CODE_REQUEST_TIMED_OUT


def placement_brokers(snapshot: Snapshot) -> list[BrokerMetadata]:
    """The live brokers in id order, with their racks, as Kafka's placement receives them."""
    return [BrokerMetadata(b.id, b.rack or None) for b in snapshot.brokers.values()]


def assignment_value(
    topic_id: str,
    assignment: Mapping[int, Sequence[int]],
    created_at_ms: int,
    trace: metadata_pb2.TraceContext,
) -> bytes:
    msg = metadata_pb2.TopicAssignment(topic_id=topic_id, created_at_ms=created_at_ms)
    for partition, replicas in assignment.items():
        msg.partitions[partition].replicas.extend(replicas)
    msg.trace_context.CopyFrom(trace)
    return msg.SerializeToString()


class Topics:
    """Topic creation and growth."""

    def __init__(
        self,
        store: AdminStore,
        limits: Limits,
        rng: Callable[[], random.Random] = random.Random,
    ) -> None:
        self.store = store
        self.ks = store.keyspace
        self.limits = limits
        self.rng = rng

    # --- CreateTopics ---------------------------------------------------------------------------

    def plan_topic(
        self, topic: NewTopic, snapshot: Snapshot, earlier: Sequence[str]
    ) -> TopicResult:
        """Validate one new topic against the cluster and the request's earlier topics; place it."""
        validation.validate_new_topic(topic.name, snapshot.names, snapshot.deleting)
        colliding = [t for t in earlier if validation.topic_name_collides(topic.name, t)]
        if colliding:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_TOPIC_EXCEPTION,
                f"Topic '{topic.name}' collides with another topic of this request: {colliding[0]}",
            )
        live = placement_brokers(snapshot)
        if topic.assignments:
            if topic.num_partitions not in (-1, 0) or topic.replication_factor not in (-1, 0):
                raise InvalidRequestError(
                    common_pb2.ERROR_CODE_INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            check_partition_cap(len(topic.assignments), self.limits)
            rf = validation.validate_topic_assignment(topic.assignments, [b.id for b in live])
            assignment = dict(topic.assignments)
        else:
            defaults = configs.effective(
                configs.ResourceType.BROKER, cluster_entries=snapshot.cluster_configs()
            )
            n = topic.num_partitions
            n = defaults.get_int("num.partitions") if n == -1 else n
            rf = topic.replication_factor
            rf = defaults.get_int("default.replication.factor") if rf == -1 else rf
            validation.validate_partition_count(n)
            check_partition_cap(n, self.limits)
            validation.validate_replication_factor(rf, len(live))
            assignment = assign_replicas_to_brokers(live, n, rf, rng=self.rng())
        configs.validate(configs.ResourceType.TOPIC, topic.configs)
        return TopicResult(
            name=topic.name,
            topic_id=str(uuid.uuid4()),
            num_partitions=len(assignment),
            replication_factor=rf,
            assignments=frozen_assignment(assignment),
        )

    async def create(
        self, topics: Sequence[NewTopic], validate_only: bool, call: CallContext
    ) -> list[TopicResult]:
        """One result per topic, in request order: each valid topic is created (or, with
        ``validate_only``, planned); each refused one carries its error and is not written."""
        not_empty(topics, "No topics to create.", "topics")
        no_duplicates(
            [t.name for t in topics], "Create topics request contains duplicate topics", "topics"
        )
        snapshot = await self.store.snapshot(
            Want(brokers=True, topic_index=True, deletions=True, broker_configs=True)
        )
        plans: list[TopicResult] = []
        with validating("CreateTopics", topic=",".join(t.name for t in topics)) as items:
            for topic in topics:
                earlier = [p.name for p in plans if p.outcome.ok]
                plan = items.check(partial(self.plan_topic, topic, snapshot, earlier))
                if isinstance(plan, Outcome):
                    plan = TopicResult(name=topic.name, outcome=plan)
                plans.append(plan)
            adding = sum(p.num_partitions for p in plans if p.outcome.ok)
            check_total_partitions(snapshot.partition_count, adding, self.limits)
        if validate_only:
            return plans
        trace = trace_context(call)
        results: list[TopicResult] = []
        created: dict[str, tuple[int, int]] = {}  # name -> (revision, partition count)
        for plan, topic in zip(plans, topics, strict=True):
            if not plan.outcome.ok:
                results.append(plan)
                continue
            revision = await self.write_new_topic(plan, topic.configs, trace)
            if revision is None:
                exists = Outcome(
                    common_pb2.ERROR_CODE_TOPIC_ALREADY_EXISTS,
                    f"Topic '{plan.name}' already exists.",
                )
                results.append(TopicResult(name=plan.name, outcome=exists))
            else:
                created[plan.name] = (revision, plan.num_partitions)
                results.append(plan)
        waited = await self.wait_for_leaders(
            {name: (rev, range(count)) for name, (rev, count) in created.items()}, call.timeout_ms
        )
        return [_with_wait(r, waited.get(r.name), call.timeout_ms) for r in results]

    async def write_new_topic(
        self, plan: TopicResult, entries: Mapping[str, str], trace: metadata_pb2.TraceContext
    ) -> int | None:
        topic_key = self.ks.topic(plan.name)
        config_key = self.ks.topic_config(plan.name)
        value = assignment_value(plan.topic_id, plan.assignments, now_ms(), trace)
        config_op = (
            op_put(config_key, metadata_pb2.ConfigEntries(entries=entries).SerializeToString())
            if entries
            else op_delete(config_key)  # a re-created topic must not inherit stale overrides
        )
        change = Change(
            compares=(
                cmp_create_revision(topic_key, "=", 0),
                cmp_create_revision(self.ks.delete_topic(plan.name), "=", 0),
            ),
            ops=(op_put(topic_key, value), config_op),
        )
        return await self.store.commit([change])

    # --- CreatePartitions -----------------------------------------------------------------------

    def plan_growth(
        self, request: NewPartitions, topic: TopicView, snapshot: Snapshot
    ) -> dict[int, list[int]]:
        """The replicas of the partitions ``request`` adds to ``topic`` (validated)."""
        validation.validate_topic_not_deleting(topic.name, snapshot.deleting)
        validation.validate_not_internal(topic.name, "Adding partitions")
        if any(topic.reassigning(p) for p in topic.partitions):
            raise PreconditionError(
                common_pb2.ERROR_CODE_REASSIGNMENT_IN_PROGRESS,
                "A partition reassignment is in progress.",
            )
        check_partition_cap(request.count, self.limits)
        current = len(topic.partitions)
        live = placement_brokers(snapshot)
        if request.assignments:
            return validation.validate_new_partitions(
                request.assignments,
                current,
                request.count,
                topic.replication_factor,
                [b.id for b in live],
            )
        validation.validate_partition_increase(current, request.count)
        return new_partitions_assignment(
            live, topic.partitions, request.count, self.rng(), topic=topic.name
        )

    def _plan_growth_of(self, request: NewPartitions, snapshot: Snapshot) -> TopicResult:
        """The topic ``request`` grows, with only its new partitions as assignments."""
        topic = require_topic(snapshot, request.name)
        added = self.plan_growth(request, topic, snapshot)
        return TopicResult(
            name=topic.name,
            topic_id=topic.topic_id,
            num_partitions=len(topic.partitions) + len(added),
            replication_factor=topic.replication_factor,
            assignments=frozen_assignment(added),
        )

    async def create_partitions(
        self, requests: Sequence[NewPartitions], validate_only: bool, call: CallContext
    ) -> list[TopicResult]:
        """One result per topic, in request order: the valid ones grow together (one
        transaction), each refused one carries its error and is left as it was."""
        not_empty(requests, "No topics to add partitions to.", "topics")
        names = [r.name for r in requests]
        no_duplicates(names, "Create partitions request contains duplicate topics", "topics")

        async def attempt() -> tuple[list[TopicResult], int] | None:
            snapshot = await self.store.snapshot(
                Want(
                    brokers=True,
                    topic_names=tuple(n for n in names if topic_name_problem(n) is None),
                    deletions=True,
                    reassignments=True,
                    topic_index=True,
                )
            )
            plans: list[TopicResult] = []
            changes: list[Change] = []
            with validating("CreatePartitions", topic=",".join(names)) as items:
                for request in requests:
                    plan = items.check(partial(self._plan_growth_of, request, snapshot))
                    if isinstance(plan, Outcome):
                        plans.append(TopicResult(name=request.name, outcome=plan))
                        continue
                    topic = snapshot.topics[plan.name]
                    full = {**topic.partitions, **plan.assignments}
                    plans.append(plan)
                    changes.append(self._growth_change(topic, full, call))
            adding = sum(len(p.assignments) for p in plans if p.outcome.ok)
            check_total_partitions(snapshot.partition_count, adding, self.limits)
            if validate_only or not changes:
                return plans, 0
            revision = await self.store.commit(changes)
            return None if revision is None else (plans, revision)

        plans, revision = await optimistic(attempt, self.limits)
        if validate_only:
            return plans
        waited = await self.wait_for_leaders(
            {p.name: (revision, list(p.assignments)) for p in plans if p.outcome.ok},
            call.timeout_ms,
        )
        return [_with_wait(p, waited.get(p.name), call.timeout_ms) for p in plans]

    def _growth_change(
        self, topic: TopicView, full: Mapping[int, Sequence[int]], call: CallContext
    ) -> Change:
        value = assignment_value(topic.topic_id, full, topic.created_at_ms, trace_context(call))
        key = self.ks.topic(topic.name)
        return Change(
            compares=(
                cmp_mod_revision(key, "=", topic.revision),
                cmp_create_revision(self.ks.delete_topic(topic.name), "=", 0),
            ),
            ops=(op_put(key, value),),
        )

    # --- waiting for leaders --------------------------------------------------------------------

    async def wait_for_leaders(
        self, topics: Mapping[str, tuple[int, Sequence[int]]], timeout_ms: int
    ) -> dict[str, int]:
        """Wait until the partitions have leaders; return per topic how many still lack one.

        ``topics`` maps a name to (the revision its partitions were written at, the partitions).
        Nothing is waited for when ``timeout_ms`` is 0.
        """
        if timeout_ms <= 0 or not topics:
            return {}
        deadline = time.monotonic() + wait_seconds(timeout_ms, self.limits)

        async def one(name: str, revision: int, partitions: Sequence[int]) -> tuple[str, int]:
            keys = {self.ks.partition_state(name, p) for p in partitions}
            view: dict = {}

            def leaderless(current: Mapping) -> int:
                return sum(1 for k in keys if not _has_leader(current.get(k)))

            await self.store.follow(
                self.ks.partition_states_prefix(name),
                view,
                revision + 1,
                lambda current: leaderless(current) == 0,
                deadline,
                relevant=keys.__contains__,
            )
            return name, leaderless(view)

        done = await asyncio.gather(*(one(n, r, ps) for n, (r, ps) in topics.items()))
        return dict(done)


def _has_leader(kv) -> bool:
    if kv is None:
        return False
    return metadata_pb2.PartitionState.FromString(kv.value).leader != NO_LEADER


def _with_wait(result: TopicResult, leaderless: int | None, timeout_ms: int) -> TopicResult:
    if not leaderless or not result.outcome.ok:
        return result
    message = (
        f"Topic '{result.name}' was written, but {leaderless} partition(s) had no leader "
        f"after {timeout_ms} ms."
    )
    return TopicResult(
        name=result.name,
        topic_id=result.topic_id,
        num_partitions=result.num_partitions,
        replication_factor=result.replication_factor,
        assignments=result.assignments,
        outcome=Outcome(_TIMED_OUT, message),
    )
