"""What each Kafka broker shows, through a real client (``confluent-kafka``, librdkafka).

A Metadata answer says which broker gave it (``ClusterMetadata.orig_broker_id``), but
librdkafka, not the caller, picks the broker a metadata request goes to: with sparse
connections (its default) a client keeps using the one connection it has up. :class:`BrokerViews`
therefore opens clients until it holds one answering from each broker it watches ("pinned"),
and :meth:`BrokerViews.first_done` polls them all back to back, crediting every answer to the
broker that gave it (a client that wanders to another broker still counts, for that broker).
So each instant is what that broker itself answered, stamped on arrival, as the Leasehold
observer does with each broker's own gRPC Metadata answer (``bench/observe.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import AdminClient, ClusterMetadata, PartitionMetadata

PIN_ATTEMPTS = 12
QUIET = {"log_level": 3}  # librdkafka: errors only (a killed broker's refusals are expected)


def client(bootstrap: str, **extra: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **QUIET, **extra})


class BrokerViews:
    """One client answering from each of ``addresses`` (broker id -> host:port)."""

    def __init__(self, addresses: Mapping[int, str], probe_topic: str | None = None) -> None:
        self.addresses = dict(addresses)
        self.probe_topic = probe_topic
        self.clients: dict[int, AdminClient] = {}

    def open(self, timeout: float = 30.0) -> BrokerViews:
        for broker, address in self.addresses.items():
            fallback = None
            for _ in range(PIN_ATTEMPTS):
                c = client(address)
                # An existing topic keeps the probe small; None asks for every topic.
                answer = c.list_topics(topic=self.probe_topic, timeout=timeout)
                if answer.orig_broker_id == broker:
                    self.clients[broker] = c
                    break
                fallback = fallback or c
            else:  # answers are credited to whoever gave them, so this still observes
                self.clients[broker] = fallback
        return self

    def first_done(
        self,
        done: Callable[[int, ClusterMetadata], bool],
        *,
        interval: float = 0.05,
        timeout: float = 300.0,
        topic: str | None = None,
    ) -> dict[int, float]:
        """Per watched broker, the arrival time of its first Metadata answer (all topics, or
        ``topic``) for which ``done(broker, answer)`` holds; ``TimeoutError`` naming the
        brokers still pending after ``timeout``."""
        lock = threading.Lock()
        found: dict[int, float] = {}
        deadline = time.monotonic() + timeout
        watched = set(self.clients)

        def poll(c: AdminClient) -> None:
            while time.monotonic() < deadline:
                with lock:
                    if watched <= found.keys():
                        return
                try:
                    kwargs = {"topic": topic} if topic else {}
                    answer = c.list_topics(timeout=10, **kwargs)
                except Exception:  # the broker is busy or gone: ask again
                    time.sleep(interval)
                    continue
                arrived = time.time()
                broker = answer.orig_broker_id
                if broker in watched and broker not in found and done(broker, answer):
                    with lock:
                        found.setdefault(broker, arrived)
                time.sleep(interval)

        with ThreadPoolExecutor(len(self.clients)) as pool:
            list(pool.map(poll, self.clients.values()))
        missing = watched - found.keys()
        if missing:
            raise TimeoutError(f"brokers {sorted(missing)} not done after {timeout:g}s")
        return found


def all_partitions(
    topics: Mapping[str, int], ok: Callable[[PartitionMetadata], bool]
) -> Callable[[int, ClusterMetadata], bool]:
    """A ``first_done`` predicate: every topic listed with its partition count, no error, and
    ``ok`` for every partition."""

    def done(_broker: int, answer: ClusterMetadata) -> bool:
        for name, count in topics.items():
            t = answer.topics.get(name)
            if t is None or t.error is not None or len(t.partitions) != count:
                return False
            if not all(p.error is None and ok(p) for p in t.partitions.values()):
                return False
        return True

    return done


def wait_brokers(bootstrap: str, count: int, timeout: float = 120.0) -> None:
    """Until ``count`` brokers are registered and unfenced (DescribeCluster lists them)."""
    admin = client(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        try:
            nodes = admin.describe_cluster(request_timeout=5).result().nodes
            if len(nodes) >= count:
                return
        except Exception:  # not up yet
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} Kafka brokers unfenced after {timeout:g}s")
        time.sleep(0.2)
