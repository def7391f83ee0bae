"""Broker metrics with Kafka's names (``kafka.server:type=ReplicaManager,...``), for Prometheus.

Kafka's names become Prometheus names under ``leasehold_broker_``: ``UnderReplicatedPartitions``
is ``leasehold_broker_under_replicated_partitions``, a ``...PerSec`` meter a counter
(``leasehold_broker_isr_shrinks_total``; take its rate). Produce and Fetch rates and latencies
are the per-request ``leasehold_broker_requests_total{request}`` and
``leasehold_broker_request_total_time_ms{request}`` of :class:`leasehold.metrics.RequestMetrics`.
Fetcher lag is Kafka's ``ReplicaFetcherManager MaxLag``: per fetcher (leader and fetcher id) the
largest lag, in messages, of the partitions it fetches, and the largest of all.

Gauges are recomputed once a second on the event loop (``run``), the only thread that may read
the replica state; the ISR counters are fed as the controller accepts changes. The full table is
in deploy/README.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.partition import Partition

PREFIX = "leasehold_broker_"
REFRESH_SECONDS = 1.0


@dataclass(frozen=True)
class PartitionCounts:
    """Kafka's ReplicaManager gauges, from the partitions this broker hosts."""

    partitions: int = 0
    leaders: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    at_min_isr: int = 0


def partition_counts(
    partitions: Iterable[Partition], min_isr: Callable[[str], int]
) -> PartitionCounts:
    """Led partitions are under-replicated when some assigned replica is out of the ISR, under
    min ISR when the ISR is smaller than the topic's ``min.insync.replicas`` (Kafka's rules)."""
    hosted = leaders = under = under_min = at_min = 0
    for p in partitions:
        hosted += 1
        if not p.is_leader:
            continue
        leaders += 1
        isr = len(p.isr)
        if len(p.replicas) > isr:
            under += 1
        required = min_isr(p.tp.topic)
        if isr < required:
            under_min += 1
        elif isr == required:
            at_min += 1
    return PartitionCounts(hosted, leaders, under, under_min, at_min)


def isr_change_kind(before: Iterable[int], after: Iterable[int]) -> tuple[bool, bool]:
    """(shrank, expanded): whether a committed ISR change removed and/or added members."""
    old, new = set(before), set(after)
    return bool(old - new), bool(new - old)


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry

        def g(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            return Gauge(PREFIX + name, doc, labels, registry=r)

        self.partitions = g("partition_count", "Partitions hosted by this broker")
        self.leaders = g("leader_count", "Partitions this broker leads")
        self.under_replicated = g(
            "under_replicated_partitions", "Led partitions with a replica out of the ISR"
        )
        self.under_min_isr = g(
            "under_min_isr_partition_count", "Led partitions whose ISR is below min.insync.replicas"
        )
        self.at_min_isr = g(
            "at_min_isr_partition_count", "Led partitions whose ISR is exactly min.insync.replicas"
        )
        self.isr_shrinks = Counter(
            PREFIX + "isr_shrinks", "ISR changes that removed replicas", registry=r
        )
        self.isr_expands = Counter(
            PREFIX + "isr_expands", "ISR changes that added replicas", registry=r
        )
        self.fetcher_max_lag = g(
            "fetcher_max_lag",
            "Largest lag (messages) of the partitions one fetcher follows",
            ("leader", "fetcher_id"),
        )
        self.max_lag = g(
            "replica_fetcher_max_lag", "Largest lag (messages) of any partition followed"
        )
        self.fetchers = g("replica_fetcher_count", "Replica fetchers running")

    def on_isr_change(self, before: Iterable[int], after: Iterable[int]) -> None:
        shrank, expanded = isr_change_kind(before, after)
        if shrank:
            self.isr_shrinks.inc()
        if expanded:
            self.isr_expands.inc()

    def observe(
        self,
        partitions: Iterable[Partition],
        min_isr: Callable[[str], int],
        fetchers: FetcherManager | None,
    ) -> None:
        counts = partition_counts(partitions, min_isr)
        self.partitions.set(counts.partitions)
        self.leaders.set(counts.leaders)
        self.under_replicated.set(counts.under_replicated)
        self.under_min_isr.set(counts.under_min_isr)
        self.at_min_isr.set(counts.at_min_isr)
        lags = fetcher_lags(fetchers)
        self.fetcher_max_lag.clear()
        for (leader, fetcher_id), lag in lags.items():
            self.fetcher_max_lag.labels(str(leader), str(fetcher_id)).set(lag)
        self.max_lag.set(max(lags.values(), default=0))
        self.fetchers.set(len(lags))

    async def run(
        self,
        partitions: Callable[[], Iterable[Partition]],
        min_isr: Callable[[str], int],
        fetchers: Callable[[], FetcherManager | None],
    ) -> None:
        """Refresh the gauges every second until cancelled."""
        while True:
            self.observe(list(partitions()), min_isr, fetchers())
            await asyncio.sleep(REFRESH_SECONDS)


def fetcher_lags(fetchers: FetcherManager | None) -> dict[tuple[int, int], int]:
    """Per fetcher (leader broker id, fetcher id): the largest known lag of its partitions."""
    if fetchers is None:
        return {}
    out: dict[tuple[int, int], int] = {}
    for (leader, fetcher_id), fetcher in list(fetchers.fetchers.items()):
        lags = [s.lag for s in fetcher.states.values() if s.lag is not None]
        out[(leader, fetcher_id)] = max(lags, default=0)
    return out
