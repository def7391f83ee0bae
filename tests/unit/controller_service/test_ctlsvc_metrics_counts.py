"""The partition-count gauges are read from the context's kept counts every second (no walk of the
partitions), and are 0 on a controller that is not active, which still keeps its counts."""

from __future__ import annotations

from types import SimpleNamespace

from services.controller import metrics as metrics_module
from services.controller.core import (
    ControllerContext,
    LeaderAndIsr,
    PartitionState,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.metrics import ControllerMetrics


def gauge(metrics: ControllerMetrics, name: str) -> float:
    return metrics.registry.get_sample_value(metrics_module.PREFIX + name)


def test_gauges_follow_the_context_and_go_to_zero_on_resigning() -> None:
    ctx = ControllerContext(1, 3)
    tps = [TopicPartition("t", p) for p in range(4)]
    for tp in tps:
        ctx.apply_assignment(tp, ReplicaAssignment((1, 2)))
        ctx.apply_leader_and_isr(tp, LeaderAndIsr(1, 1, (1, 2), 3))
        ctx.apply_partition_state(tp, PartitionState.ONLINE)
    controller = SimpleNamespace(
        ctx=ctx,
        active=True,
        epoch=3,
        channels=None,
        store=SimpleNamespace(stats=SimpleNamespace(transactions=0)),
    )
    loop = SimpleNamespace(queue_size=0)
    metrics = ControllerMetrics()
    metrics.observe(controller, loop)
    assert gauge(metrics, "global_partition_count") == 4
    assert gauge(metrics, "offline_partitions_count") == 0
    assert gauge(metrics, "preferred_replica_imbalance_count") == 0

    ctx.apply_leader_and_isr(tps[0], LeaderAndIsr(2, 2, (2,), 3))
    ctx.apply_partition_state(tps[1], PartitionState.OFFLINE)
    ctx.apply_leader_and_isr(tps[1], LeaderAndIsr(-1, 2, (1,), 3))
    metrics.observe(controller, loop)
    assert gauge(metrics, "offline_partitions_count") == 1
    assert gauge(metrics, "preferred_replica_imbalance_count") == 2

    controller.active = False  # resigned: the cluster-wide gauges go to 0 at once
    ctx.apply_leader_and_isr(tps[2], LeaderAndIsr(2, 2, (2,), 3))
    metrics.observe(controller, loop)
    assert gauge(metrics, "offline_partitions_count") == 0
    assert gauge(metrics, "preferred_replica_imbalance_count") == 0
    assert gauge(metrics, "global_partition_count") == 0
    # A standby still counts what it applies, so taking office finds nothing left to count.
    assert not ctx._counts_stale
    assert ctx.preferred_replica_imbalance_count() == 3
