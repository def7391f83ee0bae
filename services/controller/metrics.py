"""Controller metrics with Kafka's names (``kafka.controller:type=KafkaController,...``).

Kafka's names become Prometheus names under ``leasehold_controller_``: ``OfflinePartitionsCount``
is ``leasehold_controller_offline_partitions_count``; a ``...PerSec`` meter becomes a counter
(``..._total``, take its rate), a ``...RateAndTimeMs`` / ``...TimeMs`` timer a histogram in
milliseconds (its ``_count`` is the rate). As in Kafka, the cluster-wide gauges
(OfflinePartitionsCount, PreferredReplicaImbalanceCount, GlobalTopicCount, GlobalPartitionCount,
...) are non-zero only on the active controller, so summing them over controllers is right.

Gauges are read from the controller context on the event loop's thread (the only place it may
be read) once a second by ``run``. None walks the partitions: the context keeps the offline and
imbalance counts as partitions change, as Kafka's does, so a reading costs the same at a million
partitions as at ten. Histograms and counters are fed as things happen through the controller's
and event loop's callbacks. The full table is in deploy/README.md.
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from leasehold.metrics import MS_BUCKETS
from services.controller.controller import Controller
from services.controller.event_loop import EventLoop

PREFIX = "leasehold_controller_"
REFRESH_SECONDS = 1.0


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry

        def g(name: str, doc: str) -> Gauge:
            return Gauge(PREFIX + name, doc, registry=r)

        def h(name: str, doc: str, labels: tuple[str, ...] = ()) -> Histogram:
            return Histogram(PREFIX + name, doc, labels, buckets=MS_BUCKETS, registry=r)

        self.active = g("active_controller_count", "1 on the active controller, else 0")
        self.epoch = g("controller_epoch", "The controller epoch this controller last saw or won")
        self.offline = g("offline_partitions_count", "Partitions without a live leader")
        self.imbalance = g(
            "preferred_replica_imbalance_count", "Partitions not led by their preferred replica"
        )
        self.topics = g("global_topic_count", "Topics in the cluster")
        self.partitions = g("global_partition_count", "Partitions in the cluster")
        self.topics_to_delete = g("topics_to_delete_count", "Topics queued for deletion")
        self.brokers = g("active_broker_count", "Registered (live) brokers")
        self.queue_size = g("event_queue_size", "Events waiting for the controller event loop")
        self.request_queue = g(
            "total_queue_size", "Request batches to brokers queued or awaiting an answer"
        )
        self.queue_time = h("event_queue_time_ms", "Time an event waited in the queue, ms")
        self.event_time = h(
            "event_rate_and_time_ms", "Time an event took to handle, ms, per event", ("event",)
        )
        self.elections = h(
            "leader_election_rate_and_time_ms",
            "Time of each leader-electing state change batch, ms (count: batches)",
        )
        self.elected = Counter(PREFIX + "leader_elections", "Partition leaders elected", registry=r)
        self.unclean = Counter(
            PREFIX + "unclean_leader_elections",
            "Leaders elected from outside the ISR (Kafka's UncleanLeaderElectionsPerSec)",
            registry=r,
        )
        self.etcd_txns = Counter(
            PREFIX + "etcd_transactions", "Fenced etcd transactions committed", registry=r
        )
        self._txns_seen = 0

    def attach(self, c: Controller, loop: EventLoop) -> None:
        """Feed the event and election histograms from the controller's callbacks."""
        loop.observer = self.on_event
        c.on_leader_elections = self.on_leader_elections

    def on_event(self, name: str, queue_ms: float, handle_ms: float) -> None:
        self.queue_time.observe(queue_ms)
        self.event_time.labels(name).observe(handle_ms)

    def on_leader_elections(self, count: int, unclean: int, duration_ms: float) -> None:
        self.elections.observe(duration_ms)
        self.elected.inc(count)
        if unclean:
            self.unclean.inc(unclean)

    def observe(self, c: Controller, loop: EventLoop) -> None:
        """Read the gauges from the context (on the event loop's thread)."""
        ctx = c.ctx
        active = c.active
        self.active.set(1 if active else 0)
        self.epoch.set(c.epoch)
        # Read on a standby too, so the changes it applies from the watch are counted as they
        # come rather than all at once when it takes office.
        offline, imbalance = ctx.offline_partition_count(), ctx.preferred_replica_imbalance_count()
        self.offline.set(offline if active else 0)
        self.imbalance.set(imbalance if active else 0)
        self.topics.set(ctx.topic_count if active else 0)
        self.partitions.set(ctx.partition_count() if active else 0)
        self.topics_to_delete.set(len(ctx.topics_to_be_deleted) if active else 0)
        self.brokers.set(len(ctx.live_broker_ids) if active else 0)
        self.queue_size.set(loop.queue_size)
        self.request_queue.set(c.channels.total_queue_size() if c.channels is not None else 0)
        txns = c.store.stats.transactions
        if txns > self._txns_seen:
            self.etcd_txns.inc(txns - self._txns_seen)
            self._txns_seen = txns

    async def run(self, c: Controller, loop: EventLoop) -> None:
        """Refresh the gauges every second until cancelled."""
        while True:
            self.observe(c, loop)
            await asyncio.sleep(REFRESH_SECONDS)
