"""One network-partition scenario as a chaos run on test hosts, with its result table.

A :class:`PartitionRun` is a :class:`~chaos_runner.ChaosRun` whose cluster is a
:class:`~leasehold.testing.netns_cluster.NetnsCluster` (3 etcd members, each controller, broker
and admin on its own host) and whose schedule is one partition (:mod:`partition_scenarios`) cut
while the acks=all workload runs. Every checker of a chaos run applies (acknowledged records read
back, one leader per partition epoch, no stale controller epoch applied, replicas agree, ...).
On top, the run measures:

* detection: from the cut to the first change etcd shows (a new controller epoch, a broker
  re-registering, a partition's leader or ISR), or none when the cluster needed no change;
* recovery: from the heal until every partition is online with its full ISR and every broker
  reports etcd's controller epoch, and, when the clients were cut, until the first
  acknowledgement on the partitions the victim led;
* for a leader cut from its followers: no acknowledgement on the partitions it led while the cut
  lasted (acks=all with min.insync.replicas=2 must block or fail, never acknowledge).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import grpc
from chaos_checks import CheckResult
from chaos_cluster import ClusterProbe
from chaos_faults import Faulter
from chaos_runner import TOPIC, ChaosConfig, ChaosReport, ChaosRun
from partition_scenarios import Cut, Scenario, Timeline

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec
from leasehold.testing.netns import NetnsLab
from leasehold.testing.netns_cluster import NetnsCluster

IN_FLIGHT_S = 1.0  # a response already on its way when the cut began may still arrive
RECOVERY_BOUND_S = 45.0


@dataclass
class Outcome:
    """One row of the result table."""

    scenario: str
    fault: str = "not applied"
    expects: str = ""
    detection_s: float | None = None
    recovery_s: float | None = None
    acked: int = 0
    acked_during: int = 0
    lost: int | None = None
    failed: int = 0
    leaders_per_epoch: str = "not checked"
    passed: bool = False


HEADER = (
    "| scenario | fault | detection | recovery | acked (during cut) | lost | failed sends "
    "| leaders per epoch | checks |"
)


def _secs(value: float | None, none: str) -> str:
    return none if value is None else f"{value:.1f} s"


def row(o: Outcome) -> str:
    return (
        f"| {o.scenario} | {o.fault} | {_secs(o.detection_s, 'none: ' + o.expects)} "
        f"| {_secs(o.recovery_s, 'not recovered')} | {o.acked} ({o.acked_during}) "
        f"| {'?' if o.lost is None else o.lost} | {o.failed} | {o.leaders_per_epoch} "
        f"| {'pass' if o.passed else 'FAIL'} |"
    )


class PartitionRun(ChaosRun):
    def __init__(
        self, scenario: Scenario, config: ChaosConfig, emit: Callable[[str], None]
    ) -> None:
        self.scenario = scenario
        self.lab = NetnsLab()
        self.outcome = Outcome(scenario.name, expects=scenario.expects)
        self._window: tuple[float, float, Cut] | None = None
        self._timeline: Timeline | None = None
        self._recovered_at: float | None = None
        self._last_wait = ""
        try:
            super().__init__(config, emit)
        except BaseException:
            self.lab.close()
            raise

    def _new_cluster(self, spec: ClusterSpec) -> NetnsCluster:
        return NetnsCluster(spec, self.lab)

    def run(self) -> ChaosReport:
        try:
            self.say(f"test hosts: lab {self.lab.id} on {self.lab.subnet}.0/24")
            report = super().run()
        finally:
            self.lab.close()
        self._tabulate(report)
        return report

    def _check(self) -> None:
        super()._check()
        w = self.workload
        if self._window is not None and w is not None and self.scenario.name == "leader-followers":
            start, end, cut = self._window
            during = [
                (a, t) for a, t in zip(w.log.acks, w.ack_times, strict=True) if start <= t <= end
            ]
            self.report.results.append(self._min_isr_check(during, start, cut))
        if self._window is not None and self._timeline is not None and self.scenario.sessions_kept:
            self.report.results.append(self._sessions_check())

    async def _faults(self, faulter: Faulter) -> None:
        probe = ClusterProbe(self.cluster, faulter.etcd, TOPIC)
        timeline = Timeline(probe, self.clock)
        self._timeline = timeline
        timeline.start()
        try:
            await asyncio.sleep(self.config.gap_s[0])
            cut = await self.scenario.choose(faulter, self.lab, self.cluster)
            await self._cut(cut, timeline, probe)
        except Exception as e:
            self.fail("schedule applied", f"the partition could not be applied: {e!r}")
            self.lab.heal()
        finally:
            await timeline.stop()

    async def _cut(self, cut: Cut, timeline: Timeline, probe: ClusterProbe) -> None:
        o = self.outcome
        o.fault = f"{cut.describe} for {self.scenario.duration_s:.0f} s"
        peers = ", ".join(cut.peers)
        started = self.clock()
        self.lab.cut(cut.victim, list(cut.peers))
        self.at(f"fault: {cut.describe} (drops to and from {peers})")
        await asyncio.sleep(self.scenario.duration_s)
        self.lab.heal(cut.victim)
        healed = self.clock()
        self.at(f"healed: {cut.victim}'s rules removed")
        changed = timeline.first_change(started)
        o.detection_s = None if changed is None or changed > healed else changed - started
        o.recovery_s = await self._recovered(probe, cut, healed)
        self._recovered_at = self.clock()
        self.at(f"recovered after {_secs(o.recovery_s, 'never')} from the heal")
        self.at(
            f"etcd timeline: {len(timeline.points)} snapshots, {timeline.failed_reads} failed "
            f"reads; first change after the cut at {_secs(changed and changed - started, 'none')}"
        )
        self._window = (started, healed, cut)

    async def _recovered(self, probe: ClusterProbe, cut: Cut, healed: float) -> float | None:
        """Seconds from the heal until in sync, online and on one controller epoch (and, for
        a client cut, acknowledged again on the victim's partitions)."""
        waiting = "not checked"
        while self.clock() - healed <= RECOVERY_BOUND_S:
            try:
                waiting = await self._unsettled(probe)
            except Exception as e:  # etcd or a broker still reconnecting: not yet
                waiting = f"probe failed: {e!r}"[:200]
            if not waiting and cut.peers == (self.lab.gateway,):
                if not self._acked_since(healed, cut.led):
                    waiting = f"an acknowledgement on {list(cut.led)}"
            if not waiting:
                return self.clock() - healed
            if waiting != self._last_wait:
                self.at(f"recovery waits for: {waiting}")
                self._last_wait = waiting
            await asyncio.sleep(0.2)
        return None

    async def _unsettled(self, probe: ClusterProbe) -> str:
        """What recovery still waits for ("" once settled)."""
        views = await probe.partitions()
        lagging = [v.partition for v in views if v.leader < 0 or set(v.isr) != set(v.replicas)]
        if lagging:
            return f"leader and full ISR of {lagging}"
        offline = await probe.offline()
        if offline:
            return f"serving leaders of {offline}"
        kv = await probe.etcd.get(probe.ks.controller_epoch)
        epoch = metadata_pb2.ControllerEpoch.FromString(kv.value).epoch
        for broker, proc in self.cluster.brokers.items():
            async with grpc.aio.insecure_channel(proc.address) as ch:
                resp = await broker_pb2_grpc.BrokerServiceStub(ch).Metadata(
                    broker_pb2.MetadataRequest(), timeout=2
                )
            if resp.controller_epoch != epoch:
                return f"broker {broker} on controller epoch {epoch}"
        return ""

    def _acked_since(self, t: float, partitions: tuple[int, ...]) -> bool:
        w = self.workload
        if w is None:
            return False
        return any(
            when > t and ack.partition in partitions
            for ack, when in zip(w.log.acks, w.ack_times, strict=True)
        )

    # ---------------------------------------------------------------------------- the table

    def _tabulate(self, report: ChaosReport) -> None:
        o, w = self.outcome, self.workload
        window = self._window
        if w is not None:
            o.acked, o.failed = len(w.log.acks), len(w.log.failed)
            if self.final is not None:
                at = {(p, off): rid for p, rows in self.final.items() for off, rid in rows}
                o.lost = sum(1 for a in w.log.acks if at.get((a.partition, a.offset)) != a.rid)
            if window is not None:
                start, end, _ = window
                o.acked_during = sum(1 for t in w.ack_times if start <= t <= end)
        leaders = next((r for r in report.results if r.name.startswith("one leader per")), None)
        if leaders is not None:
            o.leaders_per_epoch = "1 each" if leaders.ok else "MORE THAN ONE"
        o.passed = report.ok
        self.say(HEADER)
        self.say("|---|---|---|---|---|---|---|---|---|")
        self.say(row(o))

    def _sessions_check(self) -> CheckResult:
        """No controller epoch change and no broker re-registration from the cut until recovery,
        read from etcd at least once a second while the cut lasted (a reader stuck on the cut
        member would see no change because it sees nothing)."""
        assert self._window is not None and self._timeline is not None
        start, healed, _ = self._window
        end = self._recovered_at or healed
        problems = self._timeline.sessions_changed(start, end)
        seen = self._timeline.snapshots_within(start, healed)
        if seen < healed - start:
            problems.append(f"only {seen} etcd snapshots in the {healed - start:.0f} s cut")
        return CheckResult(
            "every session kept through the cut",
            not problems,
            f"controller epoch and broker registrations unchanged from the cut until recovery "
            f"({seen} etcd snapshots during the cut)",
            tuple(problems[:10]),
        )

    def _min_isr_check(self, during, start: float, cut: Cut) -> CheckResult:
        late = [
            f"{a.rid} acknowledged at p{a.partition}@{a.offset} {t - start:.1f} s into the cut"
            for a, t in during
            if a.partition in cut.led and t > start + IN_FLIGHT_S
        ]
        return CheckResult(
            "acks=all never acknowledged without min ISR",
            not late,
            f"no acknowledgement on the cut leader's partitions {list(cut.led)} from "
            f"{IN_FLIGHT_S:.0f} s into the cut until the heal (its followers could not fetch)",
            tuple(late[:10]),
        )
