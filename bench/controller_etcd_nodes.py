"""The pieces ``bench.controller_etcd_micro`` runs: a seeded cluster prefix, one controller's
real watch / event loop / store / controller in a process, a standby in a child process, and
CPU readings of any process (/proc) so a shared machine's load can be told apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import logging
import multiprocessing
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection

from bench.controller_micro import BROKERS, RecordingChannels
from bench.scenario import Layout
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.fenced import Fence, Write, commit
from leasehold.metadata.v1 import metadata_pb2
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.controller import Controller
from services.controller.event_loop import EventLoop
from services.controller.statelog import StateChangeLog
from services.controller.store import ControllerStore
from services.controller.watcher import ClusterWatcher

LEADER = 1
PER_TOPIC = 1_000
SEED_CONCURRENCY = 8
CLOCK_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """Seconds of CPU (user + system) process ``pid`` has used, from /proc (10 ms steps)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_S


async def seed(client: EtcdClient, ks: Keyspace, partitions: int) -> int:
    """Brokers 1-3, topics and partition states (RF 3, broker 1 leading, full ISR) written as
    the admin and a previous controller would have; returns the last revision."""
    layout = Layout(partitions, PER_TOPIC, BROKERS, leader=LEADER)
    writes = [
        Write(
            ks.broker(b),
            metadata_pb2.BrokerRegistration(
                broker_id=b, host="127.0.0.1", port=9000 + b, incarnation_id=uuid.uuid4().hex
            ).SerializeToString(),
        )
        for b in BROKERS
    ]
    writes.append(
        Write(ks.controller_epoch, metadata_pb2.ControllerEpoch(epoch=1).SerializeToString())
    )
    for topic, parts in layout.topics().items():
        writes.append(
            Write(
                ks.topic(topic),
                metadata_pb2.TopicAssignment(
                    topic_id=uuid.uuid4().hex,
                    partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in parts.items()},
                ).SerializeToString(),
            )
        )
        for p, replicas in parts.items():
            state = metadata_pb2.PartitionState(
                leader=LEADER, leader_epoch=3, isr=replicas, controller_epoch=1
            )
            writes.append(Write(ks.partition_state(topic, p), state.SerializeToString()))
    result = await commit(client, Fence(), writes, concurrency=SEED_CONCURRENCY)
    return max(result.revisions.values())


class Node:
    """One controller's real pieces in this process: watch, event loop, store, controller."""

    def __init__(self, endpoint: str, ks: Keyspace, controller_id: int, statelog: str) -> None:
        self.client = EtcdClient([endpoint])
        self.ks = ks
        self.events = EventLoop(self._handle)
        self.watcher = ClusterWatcher(self.client, ks, self.events.put)
        self.store = ControllerStore(self.client, ks, self.watcher.mirror)
        self.statelog = StateChangeLog(statelog, controller_id)
        self.c = Controller(
            ControllerConfig(controller_id=controller_id),
            self.store,
            self.statelog,
            self.watcher.snapshot_events,
            RecordingChannels,
        )
        self.c.put = self.events.put
        self.c.heap.enabled = True  # as the service's main does
        self.noticed = 0.0
        self.handled = 0.0
        self.synced_at: list[tuple[int, float]] = []  # (revision, when its Synced was handled)
        # (start, end, process CPU at start, at end, writes)
        self.commits: list[tuple[float, float, float, float, int]] = []
        self.written: list[Write] = []  # the values of the largest commit
        self._watch: asyncio.Task | None = None
        original = self.store.commit

        async def timed_commit(writes: Sequence[Write]):
            started, cpu = time.perf_counter(), time.process_time()
            result = await original(writes)
            end = (time.perf_counter(), time.process_time())
            self.commits.append((started, end[0], cpu, end[1], len(writes)))
            if len(writes) > len(self.written):
                self.written = list(writes)
            return result

        self.store.commit = timed_commit  # type: ignore[method-assign]

    async def _handle(self, event: ev.ControllerEvent) -> None:
        if isinstance(event, ev.BrokerChange) and event.deregistered:
            self.noticed = time.perf_counter()
        await self.c.handle(event)
        if isinstance(event, ev.BrokerChange) and event.deregistered:
            self.handled = time.perf_counter()
        if isinstance(event, ev.Synced):
            self.synced_at.append((event.revision, time.perf_counter()))

    async def start(self) -> None:
        await self.client.connect()
        self.events.start()
        self._watch = asyncio.create_task(self.watcher.run())

    async def synced(self, revision: int, timeout: float = 120.0) -> float:
        """Wait until the controller has applied every change up to ``revision`` and its
        queue is empty; the instant it handled the ``Synced`` of that revision."""
        deadline = time.perf_counter() + timeout
        while self.c.synced_revision < revision or self.events.queue_size or self.events.current:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"controller not synced to {revision}")
            await asyncio.sleep(0.001)
        return min(t for rev, t in self.synced_at if rev >= revision)

    async def elect(self) -> None:
        key = self.ks.controller_election_prefix + b"micro"
        revision = await self.client.put(key, b"micro")
        self.events.put(ev.Elected(key, revision, self.c.role.campaign))
        while not self.c.active:
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        await self.events.stop()
        await self.c.deactivate("done", rebuild=False)
        await self.client.close()
        self.statelog.close()


def standby_main(endpoint: str, cluster_id: str, profile_path: str, conn: Connection) -> None:
    """Child process: a standby controller on ``cluster_id``, synced before it says ready;
    then answers each revision sent with the instant it had applied that revision. With
    ``profile_path``, everything between "profile" and the next answer is profiled there."""
    logging.basicConfig(level=logging.WARNING)
    profile = cProfile.Profile() if profile_path else None

    async def serve() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            node = Node(endpoint, Keyspace(cluster_id), 2, f"{tmp}/sc.log")
            await node.start()
            first = await node.client.get_with_revision(node.ks.controller_epoch)
            await node.synced(first[1])
            conn.send("ready")
            while True:
                message = await asyncio.to_thread(conn.recv)
                if message == "stop":
                    break
                if message == "profile":
                    if profile is not None:
                        profile.enable()
                    continue
                conn.send(await node.synced(message))
                if profile is not None:
                    profile.disable()
                    profile.dump_stats(profile_path)
            await node.stop()

    asyncio.run(serve())


@contextlib.contextmanager
def standby_process(
    endpoint: str, cluster_id: str, profile_path: str = ""
) -> Iterator[tuple[int, Connection]]:
    """``standby_main`` in a spawned process, once synced: (pid, our end of its pipe)."""
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    args = (endpoint, cluster_id, profile_path, theirs)
    proc = ctx.Process(target=standby_main, args=args, daemon=True)
    proc.start()
    theirs.close()
    try:
        if not ours.poll(180) or ours.recv() != "ready":
            raise RuntimeError("the standby controller did not get ready")
        assert proc.pid is not None
        yield proc.pid, ours
    finally:
        with contextlib.suppress(OSError):
            ours.send("stop")
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        ours.close()


async def cpu_at(pids: dict[str, int], instant: float) -> dict[str, float]:
    """CPU seconds used so far by each of ``pids`` and (``own``) this process, at ``instant``
    (read on a thread of its own: the event loop may be busy then)."""

    def sample() -> dict[str, float]:
        time.sleep(max(0.0, instant - time.perf_counter()))
        return cpu_now(pids)

    return await asyncio.to_thread(sample)


def cpu_now(pids: dict[str, int]) -> dict[str, float]:
    return {"own": time.process_time(), **{name: cpu_of(pid) for name, pid in pids.items()}}


def ask(conn: Connection, revision: int) -> float:
    conn.send(revision)
    return conn.recv()
