"""A real cluster for the scenario benchmarks, set up the way large clusters are set up.

The scenario suites (controller failover, controlled shutdown, broker failure, topic creation,
produce) all need the same thing: a :class:`LocalCluster` of real processes with thousands of
partitions online and settled before the one thing they time. :meth:`Scenario.bring_up` starts
the services, waits until every broker is registered and a controller is in office, then
writes the topics straight into etcd in bulk (the admin contract: a ``TopicAssignment`` per
topic, exactly what admin's CreateTopics writes) and lets the controller bring them online;
creating 10,000 partitions one admin call at a time would measure admin, not the scenario.
Then it waits until every partition has a live leader and a full ISR, and the cluster settles.

Services run with ``LEASEHOLD_LOG_LEVEL=warning`` (see :data:`SERVICE_ENV`): at the default
``info`` every partition transition is also logged as a JSON line on stdout, which at 10,000
partitions costs the controller and brokers seconds of event-loop time per change (the
controller's state-change *file* is still written). :class:`Layout` and :class:`Sizing` are
pure and tested.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import signal
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench import raw_etcd
from bench.framework import ClusterSpec, LocalCluster, free_port
from bench.observe import Steady, metadata_latency, wait_steady
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.session import DEFAULT_TTL
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import Proc

SERVICE_ENV = {"LEASEHOLD_LOG_LEVEL": "warning"}
LARGE_ENV = "LEASEHOLD_BENCH_LARGE"
PROFILE_ENV = "LEASEHOLD_BENCH_PROFILE"
# The suite's own etcd calls (set-up, baselines, clean-up): a 100,000-key delete on a loaded
# machine outlasts the services' 5 s.
BENCH_ETCD_TIMEOUT_S = 60.0
KEEP_ENV = "LEASEHOLD_BENCH_KEEP"  # set: the cluster's work directory (logs) is kept
TMPFS = "/dev/shm"
WRITE_CONCURRENCY = 16


def profiled_processes() -> tuple[str, ...]:
    """Service processes to run under cProfile (``LEASEHOLD_BENCH_PROFILE=controller-1,...``);
    each writes ``<name>.prof`` into the kept work directory when it exits cleanly."""
    names = os.environ.get(PROFILE_ENV, "")
    return tuple(n.strip() for n in names.split(",") if n.strip())


def large_enabled() -> bool:
    """Whether the 100,000-partition sizes were asked for (``LEASEHOLD_BENCH_LARGE=1``, or
    ``=only`` to skip the 10,000-partition sizes)."""
    return os.environ.get(LARGE_ENV, "").strip().lower() in ("1", "true", "yes", "on", "only")


def large_only() -> bool:
    """``LEASEHOLD_BENCH_LARGE=only``: the 100,000-partition sizes alone."""
    return os.environ.get(LARGE_ENV, "").strip().lower() == "only"


@dataclass(frozen=True)
class Layout:
    """``partitions`` partitions of replication ``replication`` over ``brokers``.

    Partitions are numbered globally and cut into topics of ``per_topic`` (``<prefix>-<n>``).
    With ``leader`` set, that broker is every partition's preferred leader and the followers
    rotate over the other brokers (so a failure spreads leadership evenly); otherwise the
    preferred leader rotates over all brokers, as Kafka's assignment does.
    """

    partitions: int
    per_topic: int
    brokers: tuple[int, ...]
    replication: int = 3
    leader: int | None = None
    prefix: str = "bench"

    def __post_init__(self) -> None:
        if self.partitions < 1 or self.per_topic < 1:
            raise ValueError("partitions and per_topic must be positive")
        if not 1 <= self.replication <= len(self.brokers):
            raise ValueError("replication must be between 1 and the number of brokers")
        if self.leader is not None and self.leader not in self.brokers:
            raise ValueError(f"leader {self.leader} is not one of the brokers")

    def replicas(self, index: int) -> list[int]:
        """The assigned replicas of global partition ``index``, preferred leader first."""
        if self.leader is None:
            n = len(self.brokers)
            return [self.brokers[(index + k) % n] for k in range(self.replication)]
        others = [b for b in self.brokers if b != self.leader]
        start = index % len(others) if others else 0
        rotated = others[start:] + others[:start]
        return [self.leader, *rotated[: self.replication - 1]]

    def topics(self) -> dict[str, dict[int, list[int]]]:
        """Topic name -> partition -> replicas."""
        out: dict[str, dict[int, list[int]]] = {}
        for index in range(self.partitions):
            topic = f"{self.prefix}-{index // self.per_topic}"
            out.setdefault(topic, {})[index % self.per_topic] = self.replicas(index)
        return out


def assignment_value(replicas: dict[int, list[int]]) -> bytes:
    """A TopicAssignment as admin writes it (fresh topic id, creation time)."""
    return metadata_pb2.TopicAssignment(
        topic_id=uuid.uuid4().hex,
        partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in replicas.items()},
        created_at_ms=int(time.time() * 1000),
    ).SerializeToString()


async def write_topics(
    client: EtcdClient, keyspace: Keyspace, topics: dict[str, dict[int, list[int]]]
) -> int:
    """Put every topic's assignment (several puts in flight); return the last revision."""
    items = list(topics.items())
    revision = 0
    for start in range(0, len(items), WRITE_CONCURRENCY):
        chunk = items[start : start + WRITE_CONCURRENCY]
        revisions = await asyncio.gather(
            *(client.put(keyspace.topic(name), assignment_value(r)) for name, r in chunk)
        )
        revision = max(revision, *revisions)
    return revision


async def raw_state_writes(client: EtcdClient, count: int) -> tuple[float, int]:
    """The raw-etcd baseline of the scenario suites, measured on their own etcd: milliseconds
    to create ``count`` partition-state keys in one fenced commit (8 transactions in flight,
    ``bench.raw_etcd.bulk_create``) under a separate prefix, deleted afterwards; and the
    number of transactions it took."""
    keyspace = Keyspace("bench-baseline")
    fence = await raw_etcd.bench_fence(client, keyspace)
    _, seconds, txns = await raw_etcd.bulk_create(client, keyspace, fence, "baseline", count)
    await client.delete(keyspace.root + b"/", prefix=True)
    return seconds * 1000, txns


async def count_online(
    client: EtcdClient, keyspace: Keyspace, live: set[int], isr_size: int
) -> tuple[int, int]:
    """(partition states, states with a live leader and at least ``isr_size`` in the ISR)."""
    kvs, _ = await client.range_prefix(keyspace.topics_prefix)
    states = online = 0
    for kv in kvs:
        if not kv.key.endswith(b"/state"):
            continue
        states += 1
        state = metadata_pb2.PartitionState.FromString(kv.value)
        if state.leader in live and len(state.isr) >= isr_size:
            online += 1
    return states, online


@dataclass(frozen=True)
class Sizing:
    """Where broker logs live and when the cluster counts as settled, by cluster size.

    Sessions always use the services' default TTL (``DEFAULT_TTL``): a benchmark never changes
    a default to look better, and every failure is timed from the fault as well as from the
    lease's expiry. From 50,000 partitions broker logs go to tmpfs (the same agent writing
    real log files, minus the disk's fsync cost).

    Large clusters settle when controllers are idle, every broker answers Metadata within 3 s
    and every broker is under ``busy_limit`` of a core (a broker still creating replicas uses
    most of one; an idle one still walks its partitions for gauges and checkpoints, a few
    percent at 10,000 and more at 100,000). Broker shares swing by tens of points between
    windows on a shared 2-core machine, so they are not required to be steady there.
    """

    broker_data_root: str
    settle_window: float
    settle_passes: int
    broker_tolerance: float
    answer_within: float
    busy_limit: float

    @property
    def ttl(self) -> int:
        return DEFAULT_TTL

    @classmethod
    def of(cls, partitions: int) -> Sizing:
        small = partitions < 5_000
        return cls(
            broker_data_root=TMPFS if partitions >= 50_000 else "",
            settle_window=1.0 if small else 2.0,
            settle_passes=2 if small else 3,
            broker_tolerance=0.1 if small else math.inf,
            answer_within=0.25 if small else 3.0,
            busy_limit=1.0 if small else (0.4 if partitions < 50_000 else 0.7),
        )

    def describe(self) -> str:
        where = "tmpfs" if self.broker_data_root else "disk (the work directory's filesystem)"
        return (
            f"session TTL {self.ttl}s (the default) for brokers and controllers; broker agents: "
            f"the normal agent, logs on {where}"
        )


async def requests_answered(controllers: list[Proc], timeout: float) -> None:
    """Wait until no controller has a request to a broker queued or unanswered
    (``leasehold_controller_total_queue_size`` 0 in two scrapes a refresh apart). CPU shares
    do not show it: a controller waiting on a slow broker is idle, and a controller that
    resigns drops what it had queued, so a failover measured then would start from brokers
    that the old controller had not finished telling (the new one sends them every partition:
    its digest-first UpdateMetadata does not match their caches)."""

    def queued() -> float:
        total = 0.0
        for proc in controllers:
            try:
                with urllib.request.urlopen(proc.metrics_url, timeout=5) as resp:
                    text = resp.read().decode()
            except OSError:
                continue  # a stopped controller queues nothing
            for family in text_string_to_metric_families(text):
                if family.name == "leasehold_controller_total_queue_size":
                    total += sum(sample.value for sample in family.samples)
        return total

    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"controllers still had broker requests queued after {timeout}s")
        quiet = quiet + 1 if await asyncio.to_thread(queued) == 0 else 0
        await asyncio.sleep(1.1)


@dataclass
class Scenario:
    """Etcd, controllers, brokers (and admin) as real processes; everything stopped on exit.

    ``async with Scenario(...) as sc:`` starts etcd and connects ``sc.client`` (the suite's own
    etcd connection, also used for the raw-etcd baseline); then :meth:`bring_up` with a
    layout, or :meth:`start_services` for an empty cluster. On exit brokers are SIGKILLed (a
    10,000-partition controlled shutdown per broker would only slow the teardown), then the
    rest stop as ``LocalCluster.stop`` does; the work directory is removed unless the block
    failed (its path is added to the error) or processes were profiled.
    """

    controllers: int = 2
    brokers: int = 3
    admin: bool = False
    sizing: Sizing = field(default_factory=lambda: Sizing.of(0))
    env: dict[str, str] = field(default_factory=dict)
    profile: tuple[str, ...] = field(default_factory=profiled_processes)
    cluster: LocalCluster = field(init=False)
    keyspace: Keyspace = field(init=False)
    client: EtcdClient = field(init=False)

    def __post_init__(self) -> None:
        spec = ClusterSpec(
            controllers=self.controllers,
            brokers=self.brokers,
            session_ttl=DEFAULT_TTL,
            extra_env={**SERVICE_ENV, **self.env},
            metrics=True,  # settle() reads the controllers' request queues
        )
        self.cluster = LocalCluster(spec)
        self.keyspace = Keyspace(spec.cluster_id)
        # Replaced once etcd has a port.
        self.client = EtcdClient([self.cluster.etcd.endpoint], timeout=BENCH_ETCD_TIMEOUT_S)
        self._broker_data: list[Path] = []

    async def __aenter__(self) -> Scenario:
        try:
            self.cluster.etcd.start()
            self.client = EtcdClient([self.cluster.etcd.endpoint], timeout=BENCH_ETCD_TIMEOUT_S)
            await self.client.connect()
        except BaseException:
            self._stop(keep=True)
            raise
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        await self.client.close()
        self._stop(keep=exc is not None)
        if exc is not None:
            exc.add_note(f"cluster logs kept in {self.cluster.workdir}")

    def _stop(self, keep: bool) -> None:
        try:
            for proc in self.cluster.brokers.values():
                proc.resume()
                if proc.name in self.profile:
                    proc.terminate(timeout=60)  # a clean exit writes the profile
                proc.kill()
        finally:  # a broker that would not go must not leave etcd and the controllers running
            self.cluster.stop()
        for path in self._broker_data:
            shutil.rmtree(path, ignore_errors=True)
        if self.profile:
            print(f"profiles of {', '.join(self.profile)} in {self.cluster.workdir}")
        elif os.environ.get(KEEP_ENV):
            print(f"cluster logs kept in {self.cluster.workdir} ({KEEP_ENV})")
        elif not keep:
            shutil.rmtree(self.cluster.workdir, ignore_errors=True)

    # --- services -------------------------------------------------------------------------------

    async def start_services(self, timeout: float = 60.0) -> None:
        """Start controllers, brokers and (if asked) admin; wait until each listens, every broker
        is registered and a controller is in office."""
        c = self.cluster
        for cid in range(1, self.controllers + 1):
            c.add_controller(cid)
        for bid in range(1, self.brokers + 1):
            c.add_broker(bid)
        if self.admin:
            port = c.spec.admin_port or free_port()
            args = ["--etcd", c.etcd.endpoint, "--cluster-id", c.spec.cluster_id,
                    "--host", "127.0.0.1", "--port", str(port), "--insecure"]  # fmt: skip
            c.admin = Proc(
                "admin",
                ["services.admin", *args],
                port,
                c.workdir / "admin.log",
                env=dict(c.spec.extra_env),
            )
        for proc in c.processes():
            if proc.name in self.profile:
                out = c.workdir / f"{proc.name}.prof"
                proc.args = ["cProfile", "-o", str(out), "-m", *proc.args]
            if proc.name.startswith("broker-") and self.sizing.broker_data_root:
                self._place_broker_data(proc)
            proc.start()
        deadline = time.monotonic() + timeout
        for proc in c.processes():
            await asyncio.to_thread(proc.wait_ready, max(1.0, deadline - time.monotonic()))
        # Listening is not registered: a topic created before every broker registers would be
        # refused (or placed without it).
        await self.wait_registered(timeout=max(1.0, deadline - time.monotonic()))

    def _place_broker_data(self, proc: Proc) -> None:
        """Put the broker's data directory under the sizing's root (a symlink from the
        work directory, so the agent's command line and log layout stay the same)."""
        root = self.sizing.broker_data_root
        target = Path(tempfile.mkdtemp(prefix=f"{proc.name}-", dir=root))
        self._broker_data.append(target)
        link = self.cluster.workdir / proc.name
        if not link.exists():
            link.symlink_to(target, target_is_directory=True)

    async def bring_up(self, layout: Layout, timeout: float = 900.0) -> str:
        """Start the services, wait until every broker is registered and a controller is
        active, write the layout's topics, wait until every partition is online with a full ISR
        and the cluster has settled; say how long that took.

        Topics are written after the brokers registered so the controller creates them as
        admin-created topics are (every replica live), not while brokers trickle in.
        """
        await self.start_services()
        started = time.monotonic()
        await write_topics(self.client, self.keyspace, layout.topics())
        live = set(self.cluster.brokers)
        await self.wait_online(
            layout.partitions, live=live, isr_size=layout.replication, timeout=timeout
        )
        online_s = time.monotonic() - started
        steady = await self.settle(timeout=timeout)
        latency = await metadata_latency(self.broker_addresses())
        return (
            f"online {online_s:.1f}s after the topics were written, settled "
            f"{steady.seconds:.1f}s later; idle brokers: CPU (follower fetching) "
            f"{steady.describe('broker-')}, empty Metadata call {latency * 1000:.0f} ms "
            "(median, slowest broker)"
        )

    async def wait_registered(self, timeout: float) -> None:
        """Until every broker has registered and the active controller has bumped the epoch."""
        deadline = time.monotonic() + timeout
        expected = len(self.cluster.brokers)
        while True:
            kvs, _ = await self.client.range_prefix(self.keyspace.brokers_prefix, keys_only=True)
            epoch = await self.client.get(self.keyspace.controller_epoch)
            if len(kvs) >= expected and epoch is not None:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(kvs)} of {expected} brokers registered in {timeout}s")
            await asyncio.sleep(0.2)

    def pids(self) -> dict[str, int]:
        """Process name -> pid of every running service process."""
        return {p.name: p.pid for p in self.cluster.processes() if p.alive() and p.pid}

    def broker_addresses(self, exclude: tuple[int, ...] = ()) -> dict[int, str]:
        return {b: p.address for b, p in self.cluster.brokers.items() if b not in exclude}

    async def wait_online(
        self, expected: int, *, live: set[int], isr_size: int, timeout: float
    ) -> float:
        """Seconds until ``expected`` partitions have a live leader and a full enough ISR."""
        started = time.monotonic()
        while True:
            states, online = await count_online(self.client, self.keyspace, live, isr_size)
            if online >= expected:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise TimeoutError(
                    f"{online} of {expected} partitions online ({states} states written) "
                    f"after {timeout:g}s; see {self.cluster.workdir}"
                )
            await asyncio.sleep(0.5)

    async def settle(self, timeout: float = 300.0) -> Steady:
        """Wait until controllers are idle and brokers steady and responsive (logs created,
        fetchers running); see :func:`bench.observe.wait_steady`."""
        pids = self.pids()
        idle = [name for name in pids if not name.startswith("broker-")]
        sizing = self.sizing
        await requests_answered(list(self.cluster.controllers.values()), timeout=timeout)
        return await wait_steady(
            pids,
            idle=idle,
            brokers=self.broker_addresses(),
            window=sizing.settle_window,
            passes=sizing.settle_passes,
            broker_tolerance=sizing.broker_tolerance,
            answer_within=sizing.answer_within,
            busy_limit=sizing.busy_limit,
            timeout=timeout,
        )

    def lease_losses(self) -> int:
        """How many times any service lost its etcd session (from the services' logs): a
        service that loses its lease re-registers or resigns, which would distort a figure,
        so suites report it."""
        return self._log_count(b"session lease lost")

    def lease_lapses(self) -> int:
        """How many times any service's session went unconfirmed (no renewal answered within
        the TTL): 0 unless etcd itself was unreachable."""
        return self._log_count(b"session lease unconfirmed")

    def late_renewals(self) -> int:
        """How many lease renewals any service sent with less than half its TTL left (the
        keep-alive thread held back): how close the default TTL came to a lapse."""
        return self._log_count(b"lease renewed late")

    def _log_count(self, needle: bytes) -> int:
        return sum(self.log_counts(needle).values())

    def log_counts(self, needle: bytes) -> dict[str, int]:
        """Per service process, the lines of its log containing ``needle``."""
        counts: dict[str, int] = {}
        for proc in self.cluster.processes():
            try:
                with proc.log_path.open("rb") as f:
                    counts[proc.name] = sum(line.count(needle) for line in f)
            except OSError:
                continue
        return counts

    def signal_controller(self, controller_id: int, sig: int) -> None:
        proc = self.cluster.controllers[controller_id]
        if sig == signal.SIGKILL:
            proc.kill()
        else:
            proc.signal(sig)

    async def restart_controller(self, controller_id: int, timeout: float = 60.0) -> None:
        """Wait for the old process to exit, start it again (a standby), wait until it listens."""
        proc = self.cluster.controllers[controller_id]
        if proc.popen is not None:
            await asyncio.to_thread(proc.popen.wait, timeout)
        proc.start()
        await asyncio.to_thread(proc.wait_ready, timeout)
