"""What each Kafka broker shows, through a real client (``confluent-kafka``, librdkafka).

A Metadata answer says which broker gave it (``ClusterMetadata.orig_broker_id``), but
librdkafka, not the caller, picks the broker each metadata request goes to: with its sparse
connections it keeps to whichever connection it has up, which need not be the broker it was
bootstrapped with. :class:`BrokerViews` therefore opens several clients connected to every
broker (``enable.sparse.connections=false``: each request goes to a random one of them), polls
them all back to back and credits every answer to the broker that gave it. Each instant is what
that broker itself answered, stamped on arrival, as the Leasehold observer does with each
broker's own gRPC Metadata answer (``bench/observe.py``); with two clients per watched broker,
each broker is asked about as often as the Leasehold observer asks each of its brokers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import AdminClient, ClusterMetadata, PartitionMetadata

CLIENTS_PER_BROKER = 2
QUIET = {"log_level": 3}  # librdkafka: errors only (a killed broker's refusals are expected)


def client(bootstrap: str, **extra: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **QUIET, **extra})


class BrokerViews:
    """Clients asking every broker of ``addresses`` (broker id -> host:port) at random."""

    def __init__(self, addresses: Mapping[int, str], probe_topic: str | None = None) -> None:
        self.addresses = dict(addresses)
        self.probe_topic = probe_topic
        self.clients: list[AdminClient] = []

    def open(self, timeout: float = 30.0) -> BrokerViews:
        bootstrap = ",".join(self.addresses.values())
        for _ in range(CLIENTS_PER_BROKER * len(self.addresses)):
            c = client(bootstrap, **{"enable.sparse.connections": False})
            # Connects it; an existing topic keeps the answer small (None: every topic).
            c.list_topics(topic=self.probe_topic, timeout=timeout)
            self.clients.append(c)
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
        stop = threading.Event()  # set when the caller is interrupted: the threads end too
        found: dict[int, float] = {}
        deadline = time.monotonic() + timeout
        watched = set(self.addresses)

        def poll(c: AdminClient) -> None:
            while time.monotonic() < deadline and not stop.is_set():
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
            try:
                list(pool.map(poll, self.clients))
            finally:
                stop.set()
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
