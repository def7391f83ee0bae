"""Partition reassignment: --generate, --execute (intents + KIP-73 throttles), --list.

``generate`` is Kafka's: per topic, ``assignReplicasToBrokers`` over the given brokers, keeping
each topic's partition count and replication factor. ``alter`` validates every entry (Kafka's
messages for duplicates and unknown brokers, plus: a target equal to the current replicas changes
nothing and is refused; a cancellation needs a reassignment in progress), then writes one intent
per partition for the controller, which runs the OAR/RAR steps and removes the intent when done.
With a throttle, the brokers that send or receive the moved replicas get the replication rate and
the topics get the throttled replica lists, in the same transaction as the intents.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from leasehold import configs, reassign_json, reassign_report
from leasehold.assignment import placement_brokers, propose_reassignment
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, PreconditionError
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.reassign_json import TopicPartition as Tp
from leasehold.validation import cut, duplicates
from services.admin.config import Limits
from services.admin.model import (
    CallContext,
    OperationStatus,
    Outcome,
    PartitionOutcome,
    ReassignmentRequest,
)
from services.admin.operations import (
    Operations,
    merge_outcomes,
    new_request_id,
    now_ms,
    optimistic,
    result_outcomes,
    trace_context,
)
from services.admin.snapshot import Snapshot, TopicView
from services.admin.store import AdminStore, Change, Want
from services.admin.topics import placement_brokers as live_brokers
from services.admin.validate import (
    check_topic_names,
    for_item,
    require_live_topic,
    require_partition,
    require_topic,
    validating,
)

_INVALID = common_pb2.ERROR_CODE_INVALID_REQUEST
_THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@dataclass(frozen=True)
class Ongoing:
    """A reassignment in progress, as ListPartitionReassignments reports it."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    target: tuple[int, ...]
    isr: tuple[int, ...]


def ongoing_of(topic: TopicView, partition: int) -> Ongoing | None:
    """The partition's reassignment, from the controller's state or else the pending intent."""
    if not topic.reassigning(partition):
        return None
    replicas = topic.partitions[partition]
    view = topic.states.get(partition)
    isr = tuple(view.state.isr) if view is not None else ()
    intent = topic.reassignments.get(partition)
    if view is not None and (view.state.adding_replicas or view.state.removing_replicas):
        adding, removing = tuple(view.state.adding_replicas), tuple(view.state.removing_replicas)
        target = tuple(r for r in replicas if r not in removing)
    else:
        target = tuple(intent.value.target_replicas) if intent is not None else replicas  # type: ignore[attr-defined]
        adding = tuple(r for r in target if r not in replicas)
        removing = tuple(r for r in replicas if r not in target)
    if intent is not None and not intent.value.cancel:  # type: ignore[attr-defined]
        target = tuple(intent.value.target_replicas)  # type: ignore[attr-defined]
    return Ongoing(topic.name, partition, replicas, adding, removing, target, isr)


def check_entries(requests: Sequence[ReassignmentRequest]) -> None:
    """Request-shape checks with Kafka's ``--execute`` messages; no cluster state needed."""
    if not requests:
        raise InvalidRequestError(
            _INVALID, "Partition reassignment list cannot be empty", field="reassignments"
        )
    repeated = duplicates([Tp(r.topic, r.partition) for r in requests])
    if repeated:
        raise InvalidRequestError(
            _INVALID,
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(str(tp) for tp in repeated),
            field="reassignments",
        )
    for r in requests:
        if r.cancel and r.replicas:
            raise InvalidRequestError(
                _INVALID, f"Cancelling the reassignment of {r.tp} must not name target replicas."
            )
    targets = [
        reassign_json.PartitionTarget(
            Tp(r.topic, r.partition), r.replicas, ("any",) * len(r.replicas)
        )
        for r in requests
        if not r.cancel
    ]
    if targets:
        reassign_json.check_execute_targets(targets)


class Reassignments:
    def __init__(
        self,
        store: AdminStore,
        operations: Operations,
        limits: Limits,
        rng: Callable[[], random.Random] = random.Random,
    ) -> None:
        self.store = store
        self.ks = store.keyspace
        self.operations = operations
        self.limits = limits
        self.rng = rng

    # --- generate -------------------------------------------------------------------------------

    async def generate(
        self, topics: Sequence[str], broker_ids: Sequence[int], disable_rack_aware: bool
    ) -> tuple[dict[Tp, list[int]], dict[Tp, list[int]]]:
        """(current, proposed) assignments of every partition of ``topics``."""
        if not topics:
            raise InvalidRequestError(_INVALID, "No topics to reassign.", field="topics")
        if not broker_ids:
            raise InvalidRequestError(_INVALID, "No brokers to reassign onto.", field="broker_ids")
        reassign_json.check_topic_list(topics)
        reassign_json.check_broker_list(broker_ids)
        check_topic_names(topics)
        snapshot = await self.store.snapshot(
            Want(brokers=True, topic_names=tuple(topics), deletions=True)
        )
        current = {}
        for name in topics:
            topic = require_live_topic(snapshot, name)
            current[name] = dict(topic.partitions)
        unknown = [b for b in broker_ids if b not in snapshot.brokers]
        if unknown:  # Kafka drops them silently; a typo would then shrink the placement
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
                f"Unknown broker id(s) in the broker list: {', '.join(map(str, unknown))} "
                f"(live brokers: {', '.join(map(str, sorted(snapshot.brokers)))}).",
                field="broker_ids",
            )
        brokers = placement_brokers(
            live_brokers(snapshot), rack_aware=not disable_rack_aware, only_ids=set(broker_ids)
        )
        proposed = propose_reassignment(current, brokers, self.rng())
        return reassign_json.flatten_assignment(current), reassign_json.flatten_assignment(proposed)

    # --- alter ----------------------------------------------------------------------------------

    def _plan_entry(self, snapshot: Snapshot, r: ReassignmentRequest) -> TopicView:
        topic = require_live_topic(snapshot, r.topic)
        replicas = require_partition(topic, r.partition)
        ongoing = ongoing_of(topic, r.partition)
        if r.cancel:
            if ongoing is None:
                raise PreconditionError(
                    common_pb2.ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS,
                    f"No reassignment is in progress for partition {r.tp}.",
                )
            return topic
        current = ongoing.target if ongoing is not None else replicas
        if tuple(r.replicas) == tuple(current):
            state = "is already being reassigned to" if ongoing else "is already assigned to"
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
                f"Partition {r.tp} {state} replicas {list(current)}: no change.",
            )
        return topic

    def _throttle_changes(
        self,
        snapshot: Snapshot,
        topics: dict[str, TopicView],
        requests: Sequence[ReassignmentRequest],
        rate: int,
    ) -> list[Change]:
        ongoing = {
            Tp(t.name, p): reassign_report.OngoingReassignment(o.replicas, o.adding, o.removing)
            for t in topics.values()
            for p in t.partitions
            if (o := ongoing_of(t, p)) is not None
        }
        proposed = {Tp(r.topic, r.partition): list(r.replicas) for r in requests if not r.cancel}
        current = {tp: list(topics[tp.topic].partitions[tp.partition]) for tp in proposed}
        moves = reassign_report.proposed_moves(ongoing, proposed, current)
        leaders = reassign_report.leader_throttles(moves)
        followers = reassign_report.follower_throttles(moves)
        changes = []
        for name, topic in topics.items():
            if name not in moves:
                continue
            ops = [
                ("leader.replication.throttled.replicas", configs.AlterOp.SET, leaders[name]),
                ("follower.replication.throttled.replicas", configs.AlterOp.SET, followers[name]),
            ]
            entries = configs.apply_alter_ops(configs.ResourceType.TOPIC, topic.configs, ops)
            key = self.ks.topic_config(name)
            changes.append(self._config_change(key, topic.config_revision, entries))
        for broker in reassign_report.reassigning_brokers(moves):
            ops = [(name, configs.AlterOp.SET, str(rate)) for name in _THROTTLE_RATES]
            current_entries, revision = snapshot.broker_configs.get(broker, ({}, 0))
            entries = configs.apply_alter_ops(configs.ResourceType.BROKER, current_entries, ops)
            changes.append(self._config_change(self.ks.broker_config(broker), revision, entries))
        return changes

    @staticmethod
    def _config_change(key: bytes, revision: int, entries: dict[str, str]) -> Change:
        value = metadata_pb2.ConfigEntries(entries=entries).SerializeToString()
        return Change((cmp_mod_revision(key, "=", revision),), (op_put(key, value),))

    async def alter(
        self, requests: Sequence[ReassignmentRequest], throttle: int, call: CallContext
    ) -> OperationStatus:
        check_entries(requests)
        if throttle < 0:
            raise InvalidRequestError(
                _INVALID,
                f"The throttle must not be negative, got {throttle}.",
                field="throttle_bytes_per_sec",
            )
        request_id = new_request_id()
        trace = trace_context(call)
        names = tuple(dict.fromkeys(r.topic for r in requests))
        check_topic_names(names)

        async def attempt() -> tuple[dict[bytes, bytes], int] | None:
            snapshot = await self.store.snapshot(
                Want(
                    brokers=True,
                    topic_names=names,
                    topic_configs=True,
                    broker_configs=throttle > 0,
                    deletions=True,
                    reassignments=True,
                )
            )
            topics: dict[str, TopicView] = {}
            with validating(
                "AlterPartitionReassignments",
                topic=",".join(names),
                partition_count=len(requests),
            ):
                for r in requests:
                    with for_item(f"Partition {cut(r.tp)}", len(requests) > 1):
                        topics[r.topic] = self._plan_entry(snapshot, r)
                targets = {
                    Tp(r.topic, r.partition): list(r.replicas) for r in requests if not r.cancel
                }
                reassign_json.check_brokers_exist(targets, snapshot.brokers)
            intents: dict[bytes, bytes] = {}
            changes = [
                Change(
                    (
                        cmp_mod_revision(self.ks.topic(t.name), "=", t.revision),
                        cmp_create_revision(self.ks.delete_topic(t.name), "=", 0),
                    ),
                    (),
                )
                for t in topics.values()
            ]
            for r in requests:
                key = self.ks.reassignment(r.topic, r.partition)
                existing = topics[r.topic].reassignments.get(r.partition)
                value = metadata_pb2.ReassignmentIntent(
                    target_replicas=r.replicas,
                    cancel=r.cancel,
                    request_id=request_id,
                    requested_at_ms=now_ms(),
                    trace_context=trace,
                ).SerializeToString()
                intents[key] = value
                expected = existing.revision if existing is not None else 0
                changes.append(
                    Change((cmp_mod_revision(key, "=", expected),), (op_put(key, value),))
                )
            if throttle > 0:
                changes += self._throttle_changes(snapshot, topics, requests, throttle)
            revision = await self.store.commit(changes)
            return None if revision is None else (intents, revision)

        intents, revision = await optimistic(attempt, self.limits)
        requested = [(r.topic, r.partition) for r in requests]
        if call.timeout_ms <= 0:
            accepted = tuple(PartitionOutcome(t, p) for t, p in requested)
            return OperationStatus(request_id, False, accepted)
        completed, seen = await self.operations.wait(request_id, intents, revision, call.timeout_ms)
        outcomes = await self._outcomes(request_id, requests, seen, completed)
        return OperationStatus(request_id, completed, outcomes)

    async def _outcomes(
        self,
        request_id: str,
        requests: Sequence[ReassignmentRequest],
        revision: int,
        completed: bool,
    ) -> tuple[PartitionOutcome, ...]:
        reported = result_outcomes(await self.operations.result(request_id, revision))
        snapshot = await self.store.snapshot(
            Want(topic_names=tuple(dict.fromkeys(r.topic for r in requests)), reassignments=True)
        )
        by_tp = {(r.topic, r.partition): r for r in requests}

        def infer(topic_name: str, partition: int) -> Outcome:
            r = by_tp[(topic_name, partition)]
            topic = snapshot.topics.get(topic_name)
            intent = topic.reassignments.get(partition) if topic is not None else None
            if intent is not None and intent.value.request_id == request_id:  # type: ignore[attr-defined]
                return Outcome(message=f"In progress; poll request id {request_id}.")
            if r.cancel or (topic is not None and topic.partitions.get(partition) == r.replicas):
                return Outcome()
            return Outcome(
                common_pb2.ERROR_CODE_REASSIGNMENT_IN_PROGRESS,
                "Superseded by a newer reassignment of this partition.",
            )

        return merge_outcomes(by_tp, reported, infer)

    # --- list -----------------------------------------------------------------------------------

    async def list(self, partitions: Sequence[tuple[str, int]]) -> list[Ongoing]:
        repeated = duplicates(list(partitions))
        if repeated:
            raise InvalidRequestError(
                _INVALID,
                "List partition reassignments request contains duplicate partitions: "
                + ", ".join(f"{t}-{p}" for t, p in repeated),
            )
        names = tuple(dict.fromkeys(t for t, _ in partitions)) if partitions else None
        check_topic_names(names or ())
        snapshot = await self.store.snapshot(
            Want(topics=names is None, topic_names=names, reassignments=True)
        )
        if partitions:
            chosen = []
            for t, p in partitions:
                topic = require_topic(snapshot, t)
                require_partition(topic, p)
                chosen.append((topic, p))
        else:
            chosen = [(t, p) for t in snapshot.topics.values() for p in t.partitions]
        return [o for t, p in chosen if (o := ongoing_of(t, p)) is not None]
