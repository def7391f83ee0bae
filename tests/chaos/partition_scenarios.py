"""Network-partition scenarios on test hosts, and the etcd timeline that times them.

Each scenario names a victim host and the peers it is cut from (nftables drops both ways inside
the victim's namespace, :meth:`NetnsLab.cut`), resolved from etcd when the fault starts:

* ``controller-etcd``: the active controller cut from every etcd member, not from the brokers;
* ``leader-followers``: the leader of partition 0 cut from every other broker, not from etcd;
* ``broker-controller``: the leader of partition 0 cut from both controllers, not from etcd;
* ``etcd-minority``: the etcd member every service talks to first cut from the other members;
* ``client-leader``: the leader of partition 0 cut from the clients (the test runner's address,
  where the producers and the consumer run), mid-produce.

:class:`Timeline` polls etcd (controller epoch, broker registrations, partition states) every
100 ms during the run, so a scenario's detection time is the first change etcd shows after the
cut, and the ISR each partition had at any moment can be looked up afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from chaos_cluster import ClusterProbe, PartitionView
from chaos_faults import Faulter

from leasehold.etcd.client import EtcdError
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.netns import NetnsLab
from leasehold.testing.netns_cluster import NetnsCluster


@dataclass(frozen=True)
class Cut:
    victim: str  # lab host name
    peers: tuple[str, ...]  # lab host names or addresses
    describe: str
    led: tuple[int, ...] = ()  # partitions the victim led when cut (broker victims)


Chooser = Callable[[Faulter, NetnsLab, NetnsCluster], Awaitable[Cut]]


@dataclass(frozen=True)
class Scenario:
    name: str
    duration_s: float
    choose: Chooser
    # What the cluster is expected to change in etcd (the detection signal), for the table.
    expects: str
    # Every session must survive the cut: no controller epoch change, no broker re-registering.
    sessions_kept: bool = False


async def _led_by(faulter: Faulter, broker: int, partitions: int) -> tuple[int, ...]:
    led = []
    for p in range(partitions):
        leader, _ = await faulter.partition_roles(p)
        if leader == broker:
            led.append(p)
    return tuple(led)


def _etcd_hosts(cluster: NetnsCluster) -> tuple[str, ...]:
    return tuple(h.name for h in cluster.etcd.hosts)


async def controller_from_etcd(f: Faulter, lab: NetnsLab, cluster: NetnsCluster) -> Cut:
    cid = await f.active_controller()
    victim = f"controller-{cid}"
    return Cut(victim, _etcd_hosts(cluster), f"{victim} (active) cut from etcd")


def _partition_leader_cut(peers: Callable[[int, NetnsLab, NetnsCluster], tuple[str, ...]], what):
    async def choose(f: Faulter, lab: NetnsLab, cluster: NetnsCluster) -> Cut:
        leader, _ = await f.partition_roles(0)
        if leader < 0:
            raise RuntimeError("partition 0 has no leader to cut")
        led = await _led_by(f, leader, PARTITIONS)
        return Cut(f"broker-{leader}", peers(leader, lab, cluster), what(leader), led)

    return choose


def _other_brokers(leader: int, lab: NetnsLab, cluster: NetnsCluster) -> tuple[str, ...]:
    return tuple(f"broker-{b}" for b in cluster.brokers if b != leader)


def _controllers(leader: int, lab: NetnsLab, cluster: NetnsCluster) -> tuple[str, ...]:
    return tuple(f"controller-{c}" for c in cluster.controllers)


def _clients(leader: int, lab: NetnsLab, cluster: NetnsCluster) -> tuple[str, ...]:
    return (lab.gateway,)


async def etcd_minority(f: Faulter, lab: NetnsLab, cluster: NetnsCluster) -> Cut:
    first, *rest = _etcd_hosts(cluster)
    return Cut(first, tuple(rest), f"{first} (every service's first endpoint) cut from its peers")


PARTITIONS = 6
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("controller-etcd", 9.0, controller_from_etcd, "a new controller epoch"),
        Scenario(
            "leader-followers",
            10.0,
            _partition_leader_cut(
                _other_brokers, lambda b: f"broker-{b} (leader of p0) cut from its followers"
            ),
            "ISR shrink",
        ),
        Scenario(
            "broker-controller",
            9.0,
            _partition_leader_cut(
                _controllers, lambda b: f"broker-{b} (leader of p0) cut from the controllers"
            ),
            "nothing (the broker keeps its session and its leaderships)",
            sessions_kept=True,
        ),
        Scenario(
            "etcd-minority",
            10.0,
            etcd_minority,
            "nothing (every session is kept through the majority)",
            sessions_kept=True,
        ),
        Scenario(
            "client-leader",
            9.0,
            _partition_leader_cut(
                _clients, lambda b: f"broker-{b} (leader of p0) cut from the clients"
            ),
            "nothing (only the clients lose the leader)",
            sessions_kept=True,
        ),
    )
}


# ------------------------------------------------------------------------------- the timeline


@dataclass(frozen=True)
class Snapshot:
    controller: tuple[int, int]  # (epoch, controller id)
    brokers: tuple[tuple[int, int], ...]  # (broker id, registration create revision)
    partitions: tuple[PartitionView, ...]

    def isr_of(self, partition: int) -> tuple[int, ...]:
        return self.partitions[partition].isr


class Timeline:
    """etcd's view of the cluster every ``interval_s``, with the run clock's time."""

    def __init__(self, probe: ClusterProbe, clock: Callable[[], float], interval_s=0.1) -> None:
        self.probe = probe
        self.clock = clock
        self.interval_s = interval_s
        self.points: list[tuple[float, Snapshot]] = []
        self.failed_reads = 0
        self._task: asyncio.Task | None = None

    async def snapshot(self) -> Snapshot:
        etcd, ks = self.probe.etcd, self.probe.ks
        kv = await etcd.get(ks.controller_epoch)
        epoch = metadata_pb2.ControllerEpoch.FromString(kv.value) if kv else None
        brokers, _ = await etcd.range_prefix(ks.brokers_prefix, keys_only=True)
        return Snapshot(
            (epoch.epoch, epoch.controller_id) if epoch else (0, -1),
            tuple(sorted((ks.broker_id_of(b.key), b.create_revision) for b in brokers)),
            tuple(await self.probe.partitions()),
        )

    async def _poll(self) -> None:
        while True:
            try:
                snap = await asyncio.wait_for(self.snapshot(), 2.0)
                self.points.append((self.clock(), snap))
            except (EtcdError, TimeoutError):
                self.failed_reads += 1
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.create_task(self._poll(), name="etcd-timeline")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def at(self, t: float) -> Snapshot | None:
        """The last snapshot taken at or before ``t``."""
        found = None
        for when, snap in self.points:
            if when > t:
                break
            found = snap
        return found

    def first_change(self, after: float) -> float | None:
        """When etcd first showed a state other than the one it had at ``after``."""
        before = self.at(after)
        for when, snap in self.points:
            if when > after and before is not None and snap != before:
                return when
        return None

    def sessions_changed(self, start: float, end: float) -> list[str]:
        """Controller epoch changes and broker (re-)registrations etcd showed in [start, end]."""
        before = self.at(start)
        if before is None:
            return ["no snapshot before the cut"]
        out = []
        for when, snap in self.points:
            if start < when <= end:
                if snap.controller != before.controller:
                    out.append(f"t={when:.1f}s controller {before.controller} -> {snap.controller}")
                if snap.brokers != before.brokers:
                    out.append(f"t={when:.1f}s brokers {before.brokers} -> {snap.brokers}")
                before = snap
        return out

    def snapshots_within(self, start: float, end: float) -> int:
        return sum(1 for when, _ in self.points if start <= when <= end)

    def below_min_isr(self, partition: int, min_isr: int) -> list[tuple[float, float]]:
        """Intervals during which etcd held an ISR smaller than ``min_isr`` for ``partition``."""
        out: list[tuple[float, float]] = []
        start = None
        for when, snap in self.points:
            small = len(snap.isr_of(partition)) < min_isr
            if small and start is None:
                start = when
            elif not small and start is not None:
                out.append((start, when))
                start = None
        if start is not None:
            out.append((start, self.points[-1][0]))
        return out
