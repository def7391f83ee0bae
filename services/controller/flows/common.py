"""Helpers every flow uses: run a state-machine decision through the controller's pipeline,
and finish an admin intent (result written and intent deleted in one fenced transaction)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from leasehold import telemetry
from leasehold.common.v1 import common_pb2
from leasehold.etcd.fenced import Write
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import (
    ElectionError,
    LeaderSelector,
    PartitionReplica,
    PartitionState,
    ReplicaState,
    StateChangePlan,
    TopicPartition,
    decide_partition_changes,
    decide_replica_changes,
)
from services.controller.store import PendingPlan, Updater

if TYPE_CHECKING:
    from services.controller.flows.context import FlowContext

EMPTY = StateChangePlan(controller_epoch=0)

# How a failed election is reported to an admin (KIP-460 error codes).
_E = common_pb2
ELECTION_ERROR_CODES = {
    ElectionError.NO_REPLICAS_ASSIGNED: _E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
    ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE: _E.ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE,
    ElectionError.PREFERRED_LEADER_NOT_AVAILABLE: _E.ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE,
    ElectionError.ELECTION_NOT_NEEDED: _E.ERROR_CODE_ELECTION_NOT_NEEDED,
}


def intent_span(name: str, contexts: Iterable[metadata_pb2.TraceContext], **attrs: object):
    """A span for carrying out admin intents, in the first intent's trace (linking the others).

    Inside a ``controller.event`` span that already continues that trace it is a plain child;
    otherwise (one event serving intents of several calls, or intents picked up at failover) it
    is parented on the intent's stored context, so each admin call's trace shows its handling.
    """
    parent, links = telemetry.parent_and_links(
        dict(tc.carrier) for tc in contexts if tc is not None and tc.carrier
    )
    if parent is not None and telemetry.trace_id_of(parent) == telemetry.trace_id_of(None):
        parent = None
    return telemetry.span(name, parent=parent, links=links, **attrs)


async def move_partitions(
    c: FlowContext,
    partitions: Iterable[TopicPartition],
    target: PartitionState,
    *,
    selector: LeaderSelector | None = None,
    reason: str | None = None,
) -> StateChangePlan:
    """Partition state machine ``handleStateChanges``: decide, commit (with retry), apply."""
    tps = tuple(partitions)
    if not tps:
        return EMPTY

    def decide(subset: Sequence[TopicPartition]) -> StateChangePlan:
        return decide_partition_changes(
            c.ctx, subset, target, now_ms=c.now_ms(), selector=selector, reason=reason
        )

    started = c.clock()
    with telemetry.span(
        "controller.partition_states",
        partition_count=len(tps),
        target_state=target.value,
        selector=selector.value if selector is not None else None,
        reason=reason,
        controller_epoch=c.epoch,
    ) as span:
        plan = await c.execute(decide(tps), retry=decide)
        elected, unclean = election_counts(plan) if selector is not None else (0, 0)
        span.set_attributes(
            telemetry.attrs(
                election_count=elected,
                unclean_count=unclean,
                failure_count=len(plan.failures),
            )
        )
    if elected:
        c.on_leader_elections(elected, unclean, (c.clock() - started) * 1000)
    return plan


async def elect_in_chunks(
    c: FlowContext,
    chunks: Iterable[Sequence[TopicPartition]],
    selector: LeaderSelector,
    *,
    prepare: Callable[[Sequence[TopicPartition]], Awaitable[object]] | None = None,
) -> None:
    """``move_partitions(chunk, ONLINE, selector)`` for each chunk, pipelined: each chunk's
    requests are sent (``send_now``) as soon as its commit is applied, and the next chunk is
    decided, and its commit started, while that commit is still in flight. ``prepare`` runs
    first for each chunk (the broker failure's Offline step). Chunks must not share partitions:
    a chunk is decided before the previous one is applied."""

    def decide(subset: Sequence[TopicPartition]) -> StateChangePlan:
        return decide_partition_changes(
            c.ctx, subset, PartitionState.ONLINE, now_ms=c.now_ms(), selector=selector
        )

    async def finish(pending: PendingPlan, started: float, *, last: bool = False) -> None:
        plan = await c.complete(pending, retry=decide)
        elected, unclean = election_counts(plan)
        if elected:
            c.on_leader_elections(elected, unclean, (c.clock() - started) * 1000)
        # Answers to the previous chunk are taken, and what is queued behind them leaves,
        # before this chunk's requests are built.
        await c.step_done()
        if last:
            release()  # queued next, with no await in between: each queue shows what follows
        await c.send_now()

    # Until the last chunk's requests are queued, the brokers are told more is coming: they
    # keep waiting for the next chunk rather than turning to their data plane.
    in_flight: tuple[PendingPlan, float] | None = None
    with c.more_coming() as release:
        try:
            for chunk in chunks:
                if prepare is not None:
                    await prepare(chunk)
                await c.step_done()
                started = c.clock()
                with telemetry.span(
                    "controller.partition_states",
                    partition_count=len(chunk),
                    target_state=PartitionState.ONLINE.value,
                    selector=selector.value,
                    controller_epoch=c.epoch,
                    pipelined=True,
                ):
                    pending = c.begin(decide(chunk))
                previous, in_flight = in_flight, (pending, started)
                if previous is not None:
                    await finish(*previous)
            if in_flight is not None:
                previous, in_flight = in_flight, None
                await finish(*previous, last=True)
        finally:
            if in_flight is not None:
                # An earlier chunk failed (we are deposed or etcd failed: the caller resigns).
                await c.abandon(in_flight[0])


def election_counts(plan: StateChangePlan) -> tuple[int, int]:
    """Leaders a partition batch elected (partition states written with a leader), and how many
    of them came from outside the ISR (the state-change records say ``unclean``)."""
    elected = sum(1 for w in plan.writes if w.leader_and_isr.leader >= 0)
    unclean = sum(1 for r in plan.records if r.kind == "partition" and r.reason == "unclean")
    return elected, unclean


async def move_replicas(
    c: FlowContext,
    replicas: Iterable[PartitionReplica],
    target: ReplicaState,
    *,
    reason: str | None = None,
    record_unchanged: bool = True,
) -> StateChangePlan:
    """Replica state machine ``handleStateChanges``: decide, commit (with retry), apply."""
    chosen = tuple(replicas)
    if not chosen:
        return EMPTY

    def decide(subset: Sequence[TopicPartition]) -> StateChangePlan:
        keep = set(subset)
        return decide_replica_changes(
            c.ctx,
            [r for r in chosen if r.tp in keep],
            target,
            now_ms=c.now_ms(),
            reason=reason,
            record_unchanged=record_unchanged,
        )

    with telemetry.span(
        "controller.replica_states",
        replica_count=len(chosen),
        partition_count=len({r.tp for r in chosen}),
        target_state=target.value,
        reason=reason,
        controller_epoch=c.epoch,
    ) as span:
        first = decide_replica_changes(
            c.ctx,
            chosen,
            target,
            now_ms=c.now_ms(),
            reason=reason,
            record_unchanged=record_unchanged,
        )
        plan = await c.execute(first, retry=decide)
        span.set_attributes(telemetry.attrs(failure_count=len(plan.failures)))
    return plan


@dataclass(frozen=True)
class IntentOutcome:
    """An admin intent carried out: its key and revision, and the per-partition results."""

    intent_key: bytes
    intent_revision: int
    request_id: str
    operation: int
    results: tuple[common_pb2.PartitionError, ...]


def _merge_results(
    request_id: str, operation: int, entries: list[common_pb2.PartitionError], c: FlowContext
) -> Updater:
    def update(old: bytes | None) -> bytes:
        merged: dict[tuple[str, int], common_pb2.PartitionError] = {}
        if old is not None:
            for r in metadata_pb2.AdminResult.FromString(old).results:
                merged[(r.topic, r.partition)] = r
        for r in entries:
            merged[(r.topic, r.partition)] = r
        return codec.admin_result(
            request_id,
            operation,
            [merged[k] for k in sorted(merged)],
            now_ms=c.now_ms(),
            controller_epoch=c.epoch,
        )

    return update


async def finish_intents(c: FlowContext, outcomes: Iterable[IntentOutcome]) -> None:
    """Write ``/admin/results/<request-id>`` and delete the intents in one fenced commit.

    Several intents of one request (a deletion of many topics, a reassignment of many
    partitions) finish at different times, so each result is merged into the request's result
    key. An intent is deleted only if it still has the revision we acted on: a newer intent on
    the same key (e.g. a reassignment cancellation) is a new request and stays.
    """
    ks = c.store.ks
    by_request: dict[str, tuple[int, list[common_pb2.PartitionError]]] = {}
    deletes: list[Write] = []
    for o in outcomes:
        if o.intent_revision <= 0:
            continue  # no intent (a reassignment recovered from etcd state): nobody to answer
        op, entries = by_request.setdefault(o.request_id, (o.operation, []))
        entries.extend(o.results)
        deletes.append(Write(o.intent_key, None, o.intent_revision))
    if not by_request and not deletes:
        return
    updates = {
        ks.result(rid): _merge_results(rid, op, entries, c)
        for rid, (op, entries) in by_request.items()
    }
    written = await c.store.read_modify_write(updates, deletes)
    for w in deletes:
        if w.key in written:
            c.view.forget_intent(ks, w.key, w.expected)
