"""Controller gauges that walk every partition are recomputed only when something could have
changed them: an event handled, a change of role or epoch, or every FULL_REFRESH_SECONDS."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from services.controller import metrics as metrics_module
from services.controller.metrics import FULL_REFRESH_SECONDS, ControllerMetrics


class Context:
    def __init__(self) -> None:
        self.offline = 0
        self.walks = 0
        self.all_topics = frozenset({"t"})
        self.topics_to_be_deleted = frozenset()
        self.live_broker_ids = frozenset({1, 2})

    def offline_partition_count(self) -> int:
        self.walks += 1
        return self.offline

    def all_partitions(self) -> tuple:
        return ()


@pytest.fixture
def setup(monkeypatch):
    ctx = Context()
    monkeypatch.setattr(metrics_module, "preferred_replica_imbalance_count", lambda _ctx: 0)
    controller = SimpleNamespace(
        ctx=ctx,
        active=True,
        epoch=3,
        channels=None,
        store=SimpleNamespace(stats=SimpleNamespace(transactions=0)),
    )
    loop = SimpleNamespace(queue_size=0)
    return ControllerMetrics(), controller, loop, ctx


def gauge(metrics: ControllerMetrics, name: str) -> float:
    return metrics.registry.get_sample_value(metrics_module.PREFIX + name)


def test_an_idle_controller_does_not_walk_its_partitions_every_second(setup):
    metrics, controller, loop, ctx = setup
    metrics.observe(controller, loop, now=0.0)
    ctx.offline = 5  # changed behind the metrics' back: not seen until a reason to look
    metrics.observe(controller, loop, now=1.0)
    metrics.observe(controller, loop, now=FULL_REFRESH_SECONDS - 0.1)
    assert (ctx.walks, gauge(metrics, "offline_partitions_count")) == (1, 0)
    metrics.observe(controller, loop, now=FULL_REFRESH_SECONDS)
    assert (ctx.walks, gauge(metrics, "offline_partitions_count")) == (2, 5)


def test_a_handled_event_or_a_new_epoch_means_walking_again(setup):
    metrics, controller, loop, ctx = setup
    metrics.observe(controller, loop, now=0.0)
    ctx.offline = 2
    metrics.on_event("BrokerChange", 0.1, 2.0)
    metrics.observe(controller, loop, now=1.0)
    assert (ctx.walks, gauge(metrics, "offline_partitions_count")) == (2, 2)
    controller.epoch = 4
    metrics.observe(controller, loop, now=2.0)
    controller.active = False  # resigned: the cluster-wide gauges go to 0 at once
    metrics.observe(controller, loop, now=3.0)
    assert (ctx.walks, gauge(metrics, "offline_partitions_count")) == (3, 0)
