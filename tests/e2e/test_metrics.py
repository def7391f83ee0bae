"""Prometheus metrics of every service, with Kafka's names, through a broker failure (issue 6).

One controller, three brokers and admin run with ``--metrics-port``. Topic ``solo`` has one
replica, on broker 3; topic ``pair`` has two partitions on brokers 1 and 3. While all is well
nothing is offline or under-replicated. When broker 3 is SIGKILLed, ``solo-0`` goes offline on
the controller and broker 1 leads both ``pair`` partitions with an ISR of one: under-replicated.
Once broker 3 is back it catches up, the ISR expands again and both numbers return to zero.
"""

from __future__ import annotations

import asyncio
import shutil
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from leasehold.client.admin import AdminClient
from leasehold.client.producer import Producer
from leasehold.testing.cluster import ClusterSpec, LocalCluster, Proc
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

C = "leasehold_controller_"
B = "leasehold_broker_"
CONTROLLER_NAMES = [
    C + "active_controller_count",
    C + "offline_partitions_count",
    C + "preferred_replica_imbalance_count",
    C + "global_topic_count",
    C + "global_partition_count",
    C + "leader_election_rate_and_time_ms_count",
    C + "leader_election_rate_and_time_ms_bucket",
    C + "unclean_leader_elections_total",
    C + "event_queue_size",
    C + "total_queue_size",
    C + "event_queue_time_ms_count",
    C + "event_rate_and_time_ms_count",
]
BROKER_NAMES = [
    B + "under_replicated_partitions",
    B + "under_min_isr_partition_count",
    B + "isr_shrinks_total",
    B + "isr_expands_total",
    B + "leader_count",
    B + "partition_count",
    B + "replica_fetcher_max_lag",
    B + "requests_total",
    B + "request_total_time_ms_bucket",
]


def _scrape(proc: Proc) -> dict[tuple[str, tuple], float]:
    """Every sample as ``{(name, sorted labels): value}``."""
    with urllib.request.urlopen(proc.metrics_url, timeout=5) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def scrape(proc: Proc) -> dict[tuple[str, tuple], float]:
    return await asyncio.to_thread(_scrape, proc)


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def names(samples: dict) -> set[str]:
    return {name for name, _ in samples}


@pytest.fixture
def cluster(tmp_path):
    spec = ClusterSpec(controllers=1, brokers=3, session_ttl=3, metrics=True)
    c = LocalCluster(spec, workdir=str(tmp_path / "cluster"))
    try:
        c.start()
        yield c
    finally:
        for proc in c.brokers.values():  # no controlled shutdown: the test is over
            proc.kill()
        c.stop()
        shutil.rmtree(tmp_path / "cluster", ignore_errors=True)


async def _gauges(cluster: LocalCluster) -> tuple[float, float, float]:
    """(offline partitions on the controller, under-replicated partitions summed over brokers,
    partitions led summed over brokers) from fresh scrapes of the live processes."""
    controller = await scrape(cluster.controllers[1])
    brokers = [await scrape(p) for p in cluster.brokers.values() if p.alive()]
    return (
        value(controller, C + "offline_partitions_count"),
        sum(value(b, B + "under_replicated_partitions") for b in brokers),
        sum(value(b, B + "leader_count") for b in brokers),
    )


async def test_metrics_follow_a_broker_failure_and_recovery(cluster):
    async with AdminClient(cluster.admin_address) as admin:

        async def ready():
            described = await admin.describe_cluster()
            return len(described.brokers) == 3 and described.active_controller.controller_id == 1

        await until(ready, timeout=30, what="three brokers and the controller")
        for name, assignment in (("solo", {0: [3]}), ("pair", {0: [1, 3], 1: [3, 1]})):
            result = await admin.create_topic(name, assignment=assignment, timeout_ms=20_000)
            assert result.error_code == 0, result.error_message
    async with Producer(admin=cluster.admin_address, acks="all") as producer:
        for partition in (0, 1):
            await producer.send_and_wait("pair", b"v", partition=partition)

    async def healthy():
        return await _gauges(cluster) == (0, 0, 3)

    await until(healthy, timeout=20, what="all partitions led and in sync")
    controller = await scrape(cluster.controllers[1])
    assert set(CONTROLLER_NAMES) <= names(controller)
    assert value(controller, C + "active_controller_count") == 1
    assert value(controller, C + "global_topic_count") == 2
    assert value(controller, C + "global_partition_count") == 3
    assert value(controller, C + "leader_election_rate_and_time_ms_count") >= 1
    assert value(controller, C + "unclean_leader_elections_total") == 0
    assert value(controller, C + "event_queue_time_ms_count") >= 1
    brokers = {bid: await scrape(p) for bid, p in cluster.brokers.items()}
    for samples in brokers.values():
        assert set(BROKER_NAMES) <= names(samples)
    assert sum(value(b, B + "partition_count") for b in brokers.values()) == 5
    produced = sum(
        value(b, B + "requests_total", request="Produce", code="OK") for b in brokers.values()
    )
    assert produced == 2
    assert value(brokers[1], B + "requests_total", request="Fetch", code="OK") >= 1
    admin_samples = await scrape(cluster.admin)
    assert value(admin_samples, "leasehold_admin_requests_total", request="CreateTopics", code="OK")
    assert value(
        admin_samples, "leasehold_admin_request_total_time_ms_count", request="CreateTopics"
    )

    cluster.brokers[3].kill()

    async def degraded():
        return await _gauges(cluster) == (1, 2, 2)

    await until(degraded, timeout=20, what="solo-0 offline, pair under-replicated on broker 1")
    after = await scrape(cluster.controllers[1])
    assert value(after, C + "leader_election_rate_and_time_ms_count") > value(
        controller, C + "leader_election_rate_and_time_ms_count"
    )

    cluster.brokers[3].start()
    await until(healthy, timeout=30, what="broker 3 back, every ISR full again")
    broker_1 = await scrape(cluster.brokers[1])
    assert value(broker_1, B + "isr_expands_total") >= 1
