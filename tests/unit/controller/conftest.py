"""A compact builder for ControllerContext, so each table row states only what matters to it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import pytest

from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    LeaderAndIsr,
    PartitionReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)

CONTROLLER_ID = 100
CONTROLLER_EPOCH = 5
NOW_MS = 1_000


def broker(i: int) -> BrokerInfo:
    """Broker ``i`` at a predictable endpoint with broker epoch ``1000 + i``."""
    return BrokerInfo(i, f"b{i}.local", 9000 + i, rack=f"r{i % 2}", epoch=1000 + i)


def build_ctx(
    *,
    assignments: Mapping[TopicPartition, Sequence[int] | ReplicaAssignment] | None = None,
    brokers: Iterable[int] = (1, 2, 3),
    shutting_down: Iterable[int] = (),
    leadership: Mapping[TopicPartition, LeaderAndIsr] | None = None,
    partition_states: Mapping[TopicPartition, PartitionState] | None = None,
    replica_states: Mapping[PartitionReplica, ReplicaState] | None = None,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    deleting: Iterable[str] = (),
    offline_dirs: Mapping[int, Iterable[TopicPartition]] | None = None,
    unclean_default: bool = False,
    controller_epoch: int = CONTROLLER_EPOCH,
) -> ControllerContext:
    ctx = ControllerContext(CONTROLLER_ID, controller_epoch, unclean_default=unclean_default)
    for b in brokers:
        ctx.apply_broker_registered(broker(b))
    for b in shutting_down:
        ctx.apply_broker_shutting_down(b)
    for b, tps in (offline_dirs or {}).items():
        ctx.apply_offline_replicas(b, tps)
    by_topic: dict[str, dict[int, ReplicaAssignment]] = {}
    for tp, a in (assignments or {}).items():
        ra = a if isinstance(a, ReplicaAssignment) else ReplicaAssignment(tuple(a))
        by_topic.setdefault(tp.topic, {})[tp.partition] = ra
    cfgs = configs or {}
    for topic, parts in by_topic.items():
        ctx.apply_topic(topic, f"id-{topic}", parts, cfgs.get(topic))
    for tp, lai in (leadership or {}).items():
        ctx.apply_leader_and_isr(tp, lai)
    for tp, s in (partition_states or {}).items():
        ctx.apply_partition_state(tp, s)
    for pr, s in (replica_states or {}).items():
        ctx.apply_replica_state(pr, s)
    for topic in deleting:
        ctx.apply_topic_deletion_queued(topic)
    return ctx


@pytest.fixture
def make_ctx() -> Callable[..., ControllerContext]:
    return build_ctx
