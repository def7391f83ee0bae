"""Watching a running cluster from outside: when did something happen, as seen by whom.

The scenario benchmarks time real processes, so every instant they report is an observation
with a named witness: an etcd watch event (a lease's key deleted, an epoch bumped, a partition
state written), a broker's own Metadata answer (what it has applied from UpdateMetadata), or a
record in the controller's state-change log. Instants are wall-clock seconds (``time.time()``)
so they compare with the state-change log's ``ts_ms``; all processes share this machine's clock.

- :func:`watch_until`: the first watch event (from a given revision, so nothing is missed
  between arming the watch and the action) for which a predicate holds.
- :func:`poll_brokers`: for each broker, the first Metadata answer that satisfies a predicate.
- :func:`poll_topics`: the same per topic, each broker asked only for topics not yet seen done.
- :func:`wait_quiet`: processes idle (CPU time from ``/proc``), so a measurement does not start
  while brokers are still creating logs or a standby is still loading.
- :func:`state_change_records`, :func:`active_controller`, :func:`broker_epoch`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import WatchEvent
from leasehold.etcd.election import leader_of
from leasehold.metadata.v1 import metadata_pb2

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


async def watch_until(
    client: EtcdClient,
    key: bytes,
    *,
    start_revision: int,
    done: Callable[[WatchEvent], bool],
    prefix: bool = False,
) -> float:
    """Wall time at which the first event with ``done(event)`` reached us."""
    async for batch in client.watch(key, prefix=prefix, start_revision=start_revision):
        seen = time.time()
        if any(done(ev) for ev in batch.events):
            return seen
    raise RuntimeError(f"watch on {key!r} ended")


async def _poll(
    address: str,
    attempt: Callable[[broker_pb2_grpc.BrokerServiceStub, float], Awaitable[float | None]],
    pending: Callable[[], str],
    interval: float,
    timeout: float,
) -> float:
    """Call ``attempt(stub, call_timeout)`` on one broker, ``interval`` apart, until it says
    done by returning the wall time the deciding answer arrived (taken before the observer
    checks it: checking 10,000 partitions is the observer's time, not the cluster's); that time
    (``TimeoutError`` naming ``pending()`` after ``timeout``)."""
    deadline = time.monotonic() + timeout
    async with grpc.aio.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerServiceStub(channel)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"broker at {address}: {pending()}")
            arrived = await attempt(stub, min(left, 10.0))
            if arrived is not None:
                return arrived
            await asyncio.sleep(interval)


async def _each_broker(
    addresses: dict[int, str], one: Callable[[str], Awaitable[float]]
) -> dict[int, float]:
    """``one(address)`` for every broker at once: broker id -> its result."""
    ids = sorted(addresses)
    times = await asyncio.gather(*(one(addresses[b]) for b in ids))
    return dict(zip(ids, times, strict=True))


async def _metadata(
    stub: broker_pb2_grpc.BrokerServiceStub, request: broker_pb2.MetadataRequest, limit: float
) -> broker_pb2.MetadataResponse | None:
    """The broker's Metadata answer, or None if the call failed (the broker is busy or down)."""
    try:
        return await stub.Metadata(request, timeout=limit)
    except grpc.aio.AioRpcError:
        return None


async def warm_metadata(addresses: dict[int, str]) -> None:
    """One all-topics Metadata call per broker, so their per-topic answer caches are built as
    a cluster with clients would have them; a poll afterwards costs a broker only the topics
    that changed since (a first 10,000-partition answer costs it ~0.1 s of CPU)."""

    async def one(address: str) -> float:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerServiceStub(channel)
            await stub.Metadata(broker_pb2.MetadataRequest(all_topics=True), timeout=60)
        return time.time()

    await _each_broker(addresses, one)


async def poll_brokers(
    addresses: dict[int, str],
    ready: Callable[[broker_pb2.MetadataResponse], bool],
    *,
    request: broker_pb2.MetadataRequest | None = None,
    interval: float = 0.002,
    timeout: float = 60.0,
) -> dict[int, float]:
    """Per broker, the wall time of its first Metadata answer for which ``ready`` holds.

    Each broker is polled back to back (``interval`` apart) on its own channel; an answer is
    stamped when it arrives, so a figure is late by at most one call plus ``interval``.
    """
    request = request or broker_pb2.MetadataRequest()

    def one(address: str) -> Awaitable[float]:
        async def attempt(stub: broker_pb2_grpc.BrokerServiceStub, limit: float) -> float | None:
            answer = await _metadata(stub, request, limit)
            arrived = time.time()
            return arrived if answer is not None and ready(answer) else None

        return _poll(address, attempt, lambda: f"not ready after {timeout:g}s", interval, timeout)

    return await _each_broker(addresses, one)


async def poll_topics(
    addresses: dict[int, str],
    topics: Mapping[str, int],
    ok: Callable[[broker_pb2.MetadataPartition], bool],
    *,
    interval: float = 0.002,
    timeout: float = 60.0,
) -> dict[int, float]:
    """Per broker, the wall time of the Metadata answer that completed its last topic.

    A topic is done on a broker once an answer lists exactly ``topics[name]`` partitions for it,
    every one with no error and ``ok``; later calls to that broker name only the topics not yet
    done. For a change that never reverts (a dead broker's partitions moving to live leaders)
    this is the moment a single all-topics answer would first show everything done, give or
    take a call, while the observer's load on the brokers (answers of 10,000 partitions every
    ``interval``, each built and then parsed here) shrinks as they catch up.
    """

    def one(address: str) -> Awaitable[float]:
        pending = dict(topics)

        async def attempt(stub: broker_pb2_grpc.BrokerServiceStub, limit: float) -> float | None:
            request = broker_pb2.MetadataRequest(topics=sorted(pending))
            answer = await _metadata(stub, request, limit)
            arrived = time.time()
            for t in answer.topics if answer is not None else ():
                if t.name in pending and _topic_done(t, pending[t.name], ok):
                    del pending[t.name]
            return None if pending else arrived

        return _poll(
            address, attempt, lambda: f"topics {sorted(pending)} not done", interval, timeout
        )

    return await _each_broker(addresses, one)


def _topic_done(
    topic: broker_pb2.MetadataTopic,
    partitions: int,
    ok: Callable[[broker_pb2.MetadataPartition], bool],
) -> bool:
    return len(topic.partitions) == partitions and all(
        p.error_code == 0 and ok(p) for p in topic.partitions
    )


async def watch_states(
    client: EtcdClient,
    keyspace: Keyspace,
    *,
    start_revision: int,
    target: int,
    ok: Callable[[metadata_pb2.PartitionState], bool],
    good: set[bytes] | None = None,
    topics: Collection[str] | None = None,
) -> float:
    """Wall time at which ``target`` partition states (of ``topics``, or all) satisfy ``ok``.

    ``good`` holds the state keys that already do at ``start_revision - 1``; each later write
    moves its key in or out, a deletion takes it out.
    """
    good = set(good or ())
    if len(good) >= target:
        return time.time()
    async for batch in client.watch(
        keyspace.topics_prefix, prefix=True, start_revision=start_revision
    ):
        seen = time.time()
        # Raw (deleted, key, value) triples: the observer's own CPU is taken from the services
        # it measures on this 2-core machine, and 10,000 converted events cost ~30 ms of it.
        parse = metadata_pb2.PartitionState.FromString
        for deleted, key, value in batch.events.changes():
            if not key.endswith(b"/state"):
                continue
            if topics is not None and _topic_of(keyspace, key) not in topics:
                continue
            if not deleted and ok(parse(value)):
                good.add(key)
            else:
                good.discard(key)
        if len(good) >= target:
            return seen
    raise RuntimeError("partition-state watch ended")


def _topic_of(keyspace: Keyspace, key: bytes) -> str | None:
    parsed = keyspace.parse_topic_key(key)
    return parsed[0] if parsed else None


async def partition_states(
    client: EtcdClient, keyspace: Keyspace
) -> tuple[dict[bytes, metadata_pb2.PartitionState], int]:
    """Every partition state now, by key, and the revision read at."""
    kvs, revision = await client.range_prefix(keyspace.topics_prefix)
    states = {
        kv.key: metadata_pb2.PartitionState.FromString(kv.value)
        for kv in kvs
        if kv.key.endswith(b"/state")
    }
    return states, revision


# --- processes ------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


async def responsive(addresses: Mapping[int, str], within: float) -> bool:
    """Whether every broker answers an empty Metadata call within ``within`` seconds (a broker
    whose event loop is busy applying a large LeaderAndIsr does not)."""

    async def one(address: str) -> bool:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerServiceStub(channel)
            await asyncio.wait_for(channel.channel_ready(), timeout=5)
            try:
                await stub.Metadata(broker_pb2.MetadataRequest(), timeout=within)
            except grpc.aio.AioRpcError:
                return False
            return True

    return all(await asyncio.gather(*(one(a) for a in addresses.values())))


@dataclass(frozen=True)
class Steady:
    """How long settling took and each process's share of a core in the last window."""

    seconds: float
    shares: dict[str, float]

    def describe(self, prefix: str) -> str:
        """E.g. "broker-1 38%, broker-2 41%" for the processes whose name starts with prefix."""
        picked = sorted((n, s) for n, s in self.shares.items() if n.startswith(prefix))
        return ", ".join(f"{n} {s:.0%}" for n, s in picked)


async def wait_steady(
    pids: Mapping[str, int],
    *,
    idle: Collection[str],
    brokers: Mapping[int, str],
    window: float = 2.0,
    passes: int = 3,
    tolerance: float = 0.1,
    broker_tolerance: float = 0.1,
    answer_within: float = 0.25,
    busy_limit: float = 1.0,
    timeout: float = 300.0,
) -> Steady:
    """Wait until the cluster has settled: ``passes`` windows in a row in which the ``idle``
    processes used under ``tolerance`` of a core, every other process's share moved by less
    than ``broker_tolerance`` from the window before, and every broker answered an empty
    Metadata call within ``answer_within`` seconds.

    The other processes (brokers) must also stay under ``busy_limit`` of a core: an idle broker
    costs a little CPU even with no traffic (follower fetch rounds, gauges and checkpoints
    walking its partitions), but a broker still creating the replicas of earlier
    LeaderAndIsr requests uses most of a core, and a figure measured then would time that
    backlog, not the scenario. Its Metadata answers alone do not show it: they come from
    UpdateMetadata, which the controller sends before the broker has applied its LeaderAndIsr.
    """
    started = time.monotonic()
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    last: dict[str, float] = {}
    good = 0
    while True:
        await asyncio.sleep(window)
        now = {name: cpu_seconds(pid) for name, pid in pids.items()}
        shares = {name: (now[name] - before[name]) / window for name in pids}
        calm = all(shares[n] < tolerance for n in idle if n in shares) and all(
            abs(shares[n] - last.get(n, -1.0)) < broker_tolerance and shares[n] < busy_limit
            for n in shares
            if n not in idle
        )
        good = good + 1 if calm and await responsive(brokers, within=answer_within) else 0
        if good >= passes:
            return Steady(time.monotonic() - started, shares)
        if time.monotonic() - started > timeout:
            busy = ", ".join(f"{n} {s:.0%}" for n, s in sorted(shares.items()))
            raise TimeoutError(f"cluster not steady after {timeout:g}s (share of a core): {busy}")
        before, last = now, shares


async def metadata_latency(addresses: Mapping[int, str], samples: int = 5) -> float:
    """Median seconds an empty Metadata call takes on the slowest broker (how busy brokers
    are: every figure observed through a broker's answers includes this)."""
    worst = 0.0
    for address in addresses.values():
        times = []
        async with grpc.aio.insecure_channel(address) as channel:
            stub = broker_pb2_grpc.BrokerServiceStub(channel)
            for _ in range(samples):
                started = time.monotonic()
                await stub.Metadata(broker_pb2.MetadataRequest(), timeout=60)
                times.append(time.monotonic() - started)
        worst = max(worst, sorted(times)[len(times) // 2])
    return worst


# --- etcd and logs --------------------------------------------------------------------------------


async def active_controller(client: EtcdClient, keyspace: Keyspace) -> tuple[int, bytes]:
    """(controller id, election key) of the active controller."""
    kv = await leader_of(client, keyspace.controller_election_prefix)
    if kv is None:
        raise RuntimeError("no active controller")
    return metadata_pb2.ControllerRegistration.FromString(kv.value).controller_id, kv.key


async def controller_epoch(client: EtcdClient, keyspace: Keyspace) -> tuple[int, int]:
    """(controller epoch, current etcd revision)."""
    kv, revision = await client.get_with_revision(keyspace.controller_epoch)
    epoch = metadata_pb2.ControllerEpoch.FromString(kv.value).epoch if kv else 0
    return epoch, revision


async def broker_epoch(client: EtcdClient, keyspace: Keyspace, broker_id: int) -> int:
    """The broker's epoch (KIP-380): its registration key's create revision."""
    kv = await client.get(keyspace.broker(broker_id))
    if kv is None:
        raise RuntimeError(f"broker {broker_id} is not registered")
    return kv.create_revision


def log_size(path: Path) -> int:
    """Bytes in a log file now (0 if absent): where to start reading what comes next."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def state_change_records(path: Path, since: int = 0, **match: Any) -> list[dict[str, Any]]:
    """Records of a state-change log written after byte ``since`` whose fields equal ``match``.

    Reading from an offset matters: at 100,000 partitions the file holds millions of records.
    """
    if not path.exists():
        return []
    with path.open("rb") as f:
        f.seek(since)
        data = f.read().decode(errors="replace")
    out = []
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line being written
            continue
        if all(record.get(k) == v for k, v in match.items()):
            out.append(record)
    return out


async def wait_record(
    path: Path, *, since: int = 0, timeout: float = 30.0, **match: Any
) -> dict[str, Any]:
    """The first matching state-change record after byte ``since``, waiting for it."""
    deadline = time.monotonic() + timeout
    while True:
        found = state_change_records(path, since, **match)
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no state-change record {match} in {path} after {timeout:g}s")
        await asyncio.sleep(0.2)
