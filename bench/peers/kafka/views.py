"""What each Kafka broker shows, through a real client (``confluent-kafka``, librdkafka).

A Metadata answer says which broker gave it (``ClusterMetadata.orig_broker_id``), but
librdkafka, not the caller, picks the broker a metadata request goes to: after its first
answer it drops the bootstrap connection and keeps to one learned broker it connected to, which
need not be the one it was bootstrapped with. :class:`BrokerViews` therefore keeps, per watched
broker, a client *pinned* to it (one whose answers came from that broker twice in a row; a new
client is opened until one is), polls each back to back and credits every answer to the broker
that gave it; a client that answers from another broker three times in a row is replaced. Each
instant is what that broker itself answered, stamped on arrival, as the Leasehold observer does
with each broker's own gRPC Metadata answer (``bench/observe.py``).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import AdminClient, ClusterMetadata, PartitionMetadata

PIN_CLIENTS = 20  # clients tried per broker before giving up
PIN_ANSWERS = 2  # answers in a row from the broker that make a client pinned to it
STRAY_ANSWERS = 3  # answers in a row from other brokers that make a pinned client replaced
QUIET = {"log_level": 3}  # librdkafka: errors only (a killed broker's refusals are expected)


def client(bootstrap: str, **extra: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **QUIET, **extra})


class BrokerViews:
    """A client pinned to each of ``addresses`` (broker id -> host:port)."""

    def __init__(self, addresses: Mapping[int, str], probe_topic: str | None = None) -> None:
        self.addresses = dict(addresses)
        self.probe_topic = probe_topic  # an existing topic keeps probes small; None: all topics
        self.clients: dict[int, AdminClient] = {}
        self.call_ms: list[float] = []  # every poll's round trip (the observer's own cost)

    def open(self) -> BrokerViews:
        for broker in self.addresses:
            self.clients[broker] = self.pin(broker)
        return self

    def pin(self, broker: int, timeout: float = 30.0) -> AdminClient:
        for _ in range(PIN_CLIENTS):
            c = client(self.addresses[broker])
            run = 0
            for _ in range(PIN_ANSWERS + 3):
                answer = c.list_topics(topic=self.probe_topic, timeout=timeout)
                run = run + 1 if answer.orig_broker_id == broker else 0
                if run == PIN_ANSWERS:
                    return c
        raise RuntimeError(f"no Kafka client kept to broker {broker} in {PIN_CLIENTS} tries")

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
        watched = set(self.clients)

        def poll(mine: int) -> None:
            stray = 0
            while time.monotonic() < deadline and not stop.is_set():
                with lock:
                    if watched <= found.keys():
                        return
                asked = time.time()
                try:
                    kwargs = {"topic": topic} if topic else {}
                    answer = self.clients[mine].list_topics(timeout=10, **kwargs)
                except Exception:  # the broker is busy or gone: ask again
                    time.sleep(interval)
                    continue
                arrived = time.time()
                self.call_ms.append((arrived - asked) * 1000)
                broker = answer.orig_broker_id
                if broker in watched and broker not in found and done(broker, answer):
                    with lock:
                        found.setdefault(broker, arrived)
                stray = 0 if broker == mine else stray + 1
                if stray >= STRAY_ANSWERS and mine not in found:
                    self.clients[mine] = self.pin(mine)
                    stray = 0
                time.sleep(interval)

        with ThreadPoolExecutor(len(self.clients)) as pool:
            try:
                list(pool.map(poll, list(self.clients)))
            finally:
                stop.set()
        missing = watched - found.keys()
        if missing:
            raise TimeoutError(f"brokers {sorted(missing)} not done after {timeout:g}s")
        return found

    def median_call_ms(self) -> float:
        return statistics.median(self.call_ms) if self.call_ms else float("nan")


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
