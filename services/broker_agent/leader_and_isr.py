"""Applying one LeaderAndIsr that passed the request fences (Kafka's becomeLeaderOrFollower,
makeLeaders and makeFollowers; seed 001 §2-3).

Phases: decide per partition (leader-epoch check); apply each topic's config once; open new logs
on worker threads; change roles in memory (stop the partitions' fetchers, take the new epochs:
files owed are deferred, appends refused meanwhile); make every owed file durable in one batch
off the loop; then propose recoveries and start the new followers' fetchers (truncating first,
unless a log without leader epochs has nothing past its high watermark to cut). The loop yields
every ``YIELD_EVERY`` partitions, so gRPC and the etcd keep-alive run even during a
100,000-partition request. The become-leader and become-follower batches are traced
(``broker.become_leader`` / ``broker.become_follower``) under the controller's call.

Split from ``replica_manager`` (whose lock and fences run first) for size; it works on the
manager's state. A broker failure sends each survivor one of these naming every partition, so
the per-partition loops avoid repeated lookups and objects that outlive the request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from leasehold import telemetry
from services.broker_agent.control import Hosted
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.control_state import YIELD_EVERY, classify, confirmed
from services.broker_agent.follower.fetcher_manager import FetcherManager, InitialFetch
from services.broker_agent.log import InconsistentTopicIdError, KafkaStorageError, LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    TopicPartition,
)
from services.broker_agent.partition import IsrProposal, Partition
from services.broker_agent.throttle import ReplicationQuota
from services.broker_agent.topic_configs import TopicSettings


class Replicas(Protocol):
    """What applying a LeaderAndIsr needs of the replica manager (``Replicas``)."""

    broker_id: int
    partitions: dict[TopicPartition, Partition]
    log_manager: LogManager
    metadata: MetadataCache
    fetchers: FetcherManager | None
    fence: ControlFence | None
    leader_quota: ReplicationQuota
    follower_quota: ReplicationQuota
    shutting_down: bool
    submit_isr_change: Callable[[IsrProposal | None], None]

    def hosting(self, tp: TopicPartition, partition: Partition | None) -> Hosted: ...
    def settings(self, topic: str) -> TopicSettings: ...
    def _new_partition(self, tp: TopicPartition) -> Partition: ...


log = logging.getLogger("services.broker_agent.state_change")

# Looked up once: an enum member's attribute lookup costs several times a global's, and the
# loops below ask for these once per partition.
_NONE = Code.NONE

Errors = dict[TopicPartition, Code]


async def apply_leader_and_isr(replicas: Replicas, request: LeaderAndIsr) -> ControlResult:
    """Apply ``request`` to ``replicas`` (the caller holds its lock and checked the fences);
    answered once every file it changed is durable."""
    errors: Errors = {}
    to_lead, to_follow = await classify(replicas, request.partitions, errors)
    to_lead, to_follow = await confirmed(replicas, to_lead, to_follow, errors)
    refused = len(errors)
    await _prepare_logs(replicas, [*to_lead, *to_follow], errors)
    if len(errors) > refused:  # some logs could not be created
        to_lead = [s for s in to_lead if s.tp not in errors]
        to_follow = [s for s in to_follow if s.tp not in errors]
    leaders: list[Partition] = []
    followers: list[Partition] = []
    if to_lead:
        with _role_span("broker.become_leader", replicas.broker_id, request, to_lead):
            leaders = await _take_roles(replicas, to_lead, errors, leader=True)
    if to_follow:
        with _role_span("broker.become_follower", replicas.broker_id, request, to_follow):
            followers = await _take_roles(replicas, to_follow, errors, leader=False)
    await _sync(replicas, [*leaders, *followers], errors)
    for partition in leaders:
        if errors.get(partition.tp) == _NONE:
            proposal = partition.propose_recovered()
            if proposal is not None:  # usually not: only an unclean election's leader
                replicas.submit_isr_change(proposal)
    live_leaders = request.live_leaders
    if replicas.fence is not None and replicas.fence.confirm_in_etcd and followers:
        # Without TLS, followers fetch from the addresses the leaders registered in etcd, not
        # from addresses a request names.
        live_leaders = await replicas.fence.leader_endpoints({p.leader_id for p in followers})
    await _start_fetchers(replicas, followers, live_leaders, errors)
    if replicas.fetchers is not None:
        await replicas.fetchers.shutdown_idle_fetchers()
    return ControlResult(Code.NONE, partition_errors=tuple(errors.items()))


async def _prepare_logs(
    replicas: Replicas, states: list[LeaderAndIsrPartition], errors: Errors
) -> None:
    """Apply each topic's config once, then open the missing logs on worker threads."""
    log_manager = replicas.log_manager
    for topic in dict.fromkeys(s.topic for s in states):
        log_manager.update_topic_config(topic, replicas.settings(topic).log_config)
    missing = [
        (s.topic, s.partition)
        for s in states
        if (p := replicas.partitions.get(s.tp)) is None or p.log is None
    ]
    if not missing:
        return
    failures = await asyncio.to_thread(log_manager.create_logs, missing)
    for (topic, index), exc in failures.items():
        tp = TopicPartition(topic, index)
        log.error("%s: cannot create the log: %s", tp, exc)
        errors[tp] = Code.KAFKA_STORAGE_ERROR


def _transition(
    replicas: Replicas,
    state: LeaderAndIsrPartition,
    errors: Errors,
    leader: bool,
    verbose: bool,
) -> Partition | None:
    tp = state.tp
    existing = replicas.partitions.get(tp)
    partition = existing or replicas._new_partition(tp)
    try:
        if leader:
            partition.make_leader(state, defer_sync=True)
        else:
            partition.make_follower(state, defer_sync=True)
    except KafkaStorageError as exc:
        log.error("%s: cannot become %s: %s", tp, "leader" if leader else "follower", exc)
        errors[tp] = Code.KAFKA_STORAGE_ERROR
        partition.awaiting_sync = False
        return None
    except InconsistentTopicIdError as exc:
        log.error("%s: %s", tp, exc)
        errors[tp] = Code.INCONSISTENT_TOPIC_ID
        partition.awaiting_sync = False
        return None
    if partition is not existing:
        replicas.partitions[tp] = partition
    errors[tp] = _NONE
    if verbose:  # log.isEnabledFor(logging.INFO), asked once per batch
        log.info(
            "%s: became %s (leader %d, epoch %d, isr %s)",
            tp,
            "leader" if leader else "follower",
            state.leader,
            state.leader_epoch,
            list(state.isr),
        )
    return partition


async def _take_roles(
    replicas: Replicas, states: list[LeaderAndIsrPartition], errors: Errors, leader: bool
) -> list[Partition]:
    """Stop the fetchers of ``states``, then make each the leader (or a follower); returns
    the partitions that changed (each now holds its state's leader and epoch)."""
    if replicas.fetchers is not None:
        replicas.fetchers.remove_fetcher_for_partitions({s.tp for s in states})
    made: list[Partition] = []
    verbose = log.isEnabledFor(logging.INFO)
    for count, state in enumerate(states, 1):
        if count % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        partition = _transition(replicas, state, errors, leader, verbose)
        if partition is not None:
            made.append(partition)
    return made


async def _sync(replicas: Replicas, partitions: list[Partition], errors: Errors) -> None:
    """Make the files the role changes owe durable (one batch, off the loop), then let
    the partitions accept appends again; a partition whose files failed goes offline."""
    if not partitions:
        return
    # A TopicPartition is the (topic, partition) tuple the log manager keys its maps by.
    failures = await asyncio.to_thread(
        replicas.log_manager.sync_pending, [p.tp for p in partitions]
    )
    for partition in partitions:
        if failures and (reason := failures.get(partition.tp)) is not None:
            log.error("%s: %s", partition.tp, reason)
            errors[partition.tp] = Code.KAFKA_STORAGE_ERROR
        partition.sync_done()


def _leader_endpoint(
    replicas: Replicas, leader_id: int, live_leaders: Iterable[Endpoint]
) -> Endpoint | None:
    for endpoint in live_leaders:
        if endpoint.broker_id == leader_id:
            return endpoint
    return replicas.metadata.alive_broker(leader_id)


async def _start_fetchers(
    replicas: Replicas,
    made: list[Partition],
    live_leaders: Iterable[Endpoint],
    errors: Errors,
) -> None:
    """Fetch for the new followers ``made``: each follows its (just set) leader and epoch."""
    leaders = list(live_leaders)
    endpoints: dict[int, Endpoint | None] = {}  # by leader id, looked up once each
    starts: dict[TopicPartition, InitialFetch] = {}
    for partition in made:
        tp, log_, leader_id = partition.tp, partition.log, partition.leader_id
        if errors.get(tp) != _NONE or log_ is None:
            continue
        leader = endpoints.get(leader_id, endpoints)
        if leader is endpoints:
            leader = endpoints[leader_id] = _leader_endpoint(replicas, leader_id, leaders)
        if leader is None:
            # Kafka keeps the replica (so its high watermark is checkpointed) but cannot
            # fetch until a request names a reachable leader.
            log.error("%s: leader %d is unavailable; not fetching", tp, leader_id)
            continue
        unepoched = log_.latest_epoch is None and not log_.is_offline
        starts[tp] = InitialFetch(  # the partition's own tp: the request's dies with it
            leader,
            partition.leader_epoch,
            log_.high_watermark,
            log_.log_end_offset if unepoched else None,
        )
    if replicas.shutting_down:
        if starts:
            log.info("shutting down: not adding fetchers for %d partitions", len(starts))
        return
    if starts and replicas.fetchers is not None:
        await replicas.fetchers.add_fetcher_for_partitions(starts)


def _role_span(name: str, broker_id: int, request: LeaderAndIsr, states: list):
    """A span for one become-leader or become-follower batch of a LeaderAndIsr request."""
    epochs = {s.leader_epoch for s in states}
    return telemetry.span(
        name,
        broker_id=broker_id,
        controller_epoch=request.controller_epoch,
        topic=",".join(sorted({s.tp.topic for s in states})),
        partition_count=len(states),
        leader_epoch=epochs.pop() if len(epochs) == 1 else None,
    )
