"""Controller metrics with Kafka's names (``kafka.controller:type=KafkaController,...``).

Values are computed on the event loop (the only place the context may be read) at most once a
second, and exposed by ``leasehold.metrics.serve`` from the process's own registry.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge

from services.controller.controller import Controller
from services.controller.core import preferred_replica_imbalance_count
from services.controller.event_loop import EventLoop

_PREFIX = "leasehold_controller_"


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry

        def g(name: str, doc: str) -> Gauge:
            return Gauge(_PREFIX + name, doc, registry=r)

        self.active = g("active_controller_count", "1 on the active controller, else 0")
        self.epoch = g("controller_epoch", "The epoch this controller last won")
        self.offline = g("offline_partitions_count", "Partitions without a live leader")
        self.imbalance = g(
            "preferred_replica_imbalance_count", "Partitions not led by their preferred replica"
        )
        self.topics = g("global_topic_count", "Topics in the cluster")
        self.partitions = g("global_partition_count", "Partitions in the cluster")
        self.brokers = g("live_broker_count", "Registered brokers")
        self.queue_size = g("event_queue_size", "Events waiting for the controller event loop")
        self.queue_time = g("event_queue_time_ms", "Time the last event waited in the queue")
        self.handle_time = g("event_handle_time_ms", "Time the last event took to handle")
        self.etcd_txns = Counter(
            _PREFIX + "etcd_transactions", "Fenced etcd transactions committed", registry=r
        )
        self._last = 0.0
        self._txns_seen = 0

    def observe(self, c: Controller, loop: EventLoop, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < 1.0:
            return
        self._last = now
        ctx = c.ctx
        self.active.set(1 if c.active else 0)
        self.epoch.set(c.epoch)
        self.offline.set(ctx.offline_partition_count() if c.active else 0)
        self.imbalance.set(preferred_replica_imbalance_count(ctx) if c.active else 0)
        self.topics.set(len(ctx.all_topics))
        self.partitions.set(len(ctx.all_partitions()))
        self.brokers.set(len(ctx.brokers))
        self.queue_size.set(loop.queue_size)
        self.queue_time.set(loop.stats.last_queue_time_ms)
        self.handle_time.set(loop.stats.last_handle_time_ms)
        txns = c.store.stats.transactions
        if txns > self._txns_seen:
            self.etcd_txns.inc(txns - self._txns_seen)
            self._txns_seen = txns
