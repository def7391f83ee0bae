"""One chaos run end to end: cluster, workload, fault schedule, recovery, evidence, checks.

Timeline: start a LocalCluster and create the topic (RF 3, min.insync.replicas=2); start the
workload; apply the seeded schedule; then measure how long until every partition with a running
ISR replica is online again; let the workload run a little longer, stop the producers (every
record in flight is then acknowledged or failed); wait for every replica to be back in the ISR;
read the whole topic back; kill the brokers and replay etcd's history; stop the rest; read every
replica from disk and every service log; run the checkers. A phase that fails is reported as a
failed check and the run goes on with what can still be checked. Everything the run does and
finds is printed, starting with the seed that replays it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import chaos_checks as checks
from chaos_cluster import ClusterProbe
from chaos_evidence import EtcdHistory, replay_etcd
from chaos_faults import Faulter
from chaos_group import GroupReaders, check_group_consumed, check_group_resume, group_summary
from chaos_report import leadership_checks, replica_check, workload_summary, writes_resumed
from chaos_schedule import SEED_ENV, FaultKind, ScheduleSpec, build_schedule, schedule_length_s
from chaos_workload import Workload, WorkloadSpec, read_all

from leasehold.client import AdminClient
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.session import DEFAULT_TTL
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster

TOPIC = "chaos"
# Followers that stop fetching leave the ISR after 4 s instead of Kafka's 30 s default, so ISR
# shrink and expansion happen within the run.
# __consumer_offsets gets 5 partitions instead of 50: the group's coordinator still moves with
# the faults, at a tenth of the replicas to keep in sync.
CLUSTER_ENV = {
    "LEASEHOLD_REPLICA_LAG_TIME_MAX_MS": "4000",
    "LEASEHOLD_OFFSETS_TOPIC_NUM_PARTITIONS": "5",
}


@dataclass(frozen=True)
class ChaosConfig:
    name: str
    seed: int
    brokers: int
    partitions: int
    faults: int
    kinds: tuple[FaultKind, ...] = tuple(FaultKind)
    controllers: int = 2
    session_ttl: int = DEFAULT_TTL  # the services' default
    producers: int = 2
    rate_per_s: float = 40.0
    gap_s: tuple[float, float] = (2.0, 5.0)
    recovery_bound_s: float = 30.0
    settle_s: float = 3.0  # workload keeps running after recovery, to show writes resume
    in_sync_bound_s: float = 45.0
    final_read_s: float = 45.0
    group_members: int = 2  # a consumer group reading the topic through the faults
    group_catch_up_s: float = 45.0


@dataclass
class ChaosReport:
    config: ChaosConfig
    lines: list[str] = field(default_factory=list)
    results: list[checks.CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class ChaosRun:
    def __init__(self, config: ChaosConfig, emit: Callable[[str], None]) -> None:
        self.config = config
        self.report = ChaosReport(config)
        self._emit = emit
        self.cluster = self._new_cluster(
            ClusterSpec(
                controllers=config.controllers,
                brokers=config.brokers,
                session_ttl=config.session_ttl,
                extra_env=dict(CLUSTER_ENV),
            )
        )
        self.schedule = build_schedule(
            config.seed,
            ScheduleSpec(
                session_ttl=config.session_ttl,
                partitions=config.partitions,
                count=config.faults,
                gap_s=config.gap_s,
                kinds=config.kinds,
            ),
        )
        self._t0 = time.monotonic()
        self.workload: Workload | None = None
        self.final: dict[int, list[tuple[int, str]]] | None = None
        self.ends: dict[int, int] = {}
        self.group: GroupReaders | None = None
        self.group_caught_up = False
        self.history: EtcdHistory | None = None
        self.recovered_at: float | None = None
        self.in_sync = False
        self.assignment: dict[int, tuple[int, ...]] = {}

    def _new_cluster(self, spec: ClusterSpec) -> LocalCluster:
        """The cluster the run starts (every process on loopback here)."""
        return LocalCluster(spec)

    def clock(self) -> float:
        return time.monotonic() - self._t0

    def say(self, line: str) -> None:
        self.report.lines.append(line)
        self._emit(line)

    def at(self, line: str) -> None:
        self.say(f"t=+{self.clock():6.1f}s  {line}")

    def fail(self, name: str, summary: str, *problems: str) -> None:
        self.report.results.append(checks.CheckResult(name, False, summary, problems))

    # ------------------------------------------------------------------------------ the run

    def run(self) -> ChaosReport:
        c = self.config
        self.say(
            f"chaos run {c.name!r}: seed {c.seed} (replay: {SEED_ENV}={c.seed}); "
            f"{c.controllers} controllers, {c.brokers} brokers, topic {TOPIC!r} with "
            f"{c.partitions} partitions, RF 3, min.insync.replicas=2, session TTL {c.session_ttl}s"
        )
        self.say(f"workdir {self.cluster.workdir}")
        length = schedule_length_s(self.schedule)
        self.say(f"schedule ({len(self.schedule)} faults over ~{length:.0f}s):")
        for fault in self.schedule:
            self.say(f"    {fault.describe()}")
        try:
            self.cluster.start()
            asyncio.run(self._scenario())
        except Exception as e:
            self.fail("run completed", f"the run stopped early: {e!r}")
        finally:
            for proc in self.cluster.processes():
                proc.resume()
            self.cluster.stop()
        self._check()
        for r in self.report.results:
            self.say(r.render())
        verdict = "PASSED" if self.report.ok else "FAILED"
        self.say(f"chaos run {c.name!r} {verdict} (seed {c.seed}) in {self.clock():.0f}s")
        if self.report.ok and not os.environ.get("LEASEHOLD_KEEP_TEST_DIRS"):
            shutil.rmtree(self.cluster.workdir, ignore_errors=True)
        else:
            self.say(f"logs kept in {self.cluster.workdir}")
        return self.report

    async def _scenario(self) -> None:
        c = self.config
        async with EtcdClient(self.cluster.etcd_endpoints) as etcd:
            probe = ClusterProbe(self.cluster, etcd, TOPIC)
            await probe.wait_ready()
            async with AdminClient(self.cluster.admin_address) as admin:
                created = await admin.create_topic(
                    TOPIC, c.partitions, 3, configs={"min.insync.replicas": "2"}, timeout_ms=30_000
                )
            if created.error_code:
                raise RuntimeError(f"topic creation failed: {created.error_message}")
            await probe.wait_in_sync(30.0)
            self.workload = Workload(
                WorkloadSpec(TOPIC, c.partitions, c.producers, c.rate_per_s),
                self.cluster.admin_address,
                {b: p.address for b, p in self.cluster.brokers.items()},
                self.clock,
            )
            self.at(
                f"workload started ({c.producers} producers, acks=all, 1 live consumer, "
                f"a consumer group of {c.group_members})"
            )
            self.workload.start()
            if c.group_members:
                self.group = GroupReaders(
                    self.cluster.admin_address, TOPIC, c.partitions, c.group_members, self.clock
                )
                self.group.start()
            await self._faults(Faulter(self.cluster, etcd, TOPIC, self.clock, self.say))
            await self._recover(probe)
            self.at("stopping producers (every record in flight is acknowledged or fails)")
            await self.workload.stop_producers()
            took, lagging = await probe.wait_in_sync(c.in_sync_bound_s)
            self.in_sync = took is not None
            self.assignment = {v.partition: v.replicas for v in await probe.partitions()}
            if took is None:
                self.fail(
                    "replicas back in sync",
                    f"not every replica rejoined the ISR within {c.in_sync_bound_s:.0f}s",
                    *lagging,
                )
            self.at("replicas in sync" if self.in_sync else f"replicas NOT in sync: {lagging}")
            await self.workload.stop_readers()
            await self._final_read()
            await self._group_end()
            await self._zombie_probe(probe)
            # SIGKILL, not SIGTERM: a controlled shutdown would move leaders after the replay
            # (and the last broker's would wait out its timeout). Acknowledged data is flushed.
            for proc in self.cluster.brokers.values():
                proc.kill()
            self.history = await replay_etcd(etcd, Keyspace(self.cluster.spec.cluster_id))
            self.at(f"brokers killed; etcd history replayed ({self.history.revisions} revisions)")

    async def _faults(self, faulter: Faulter) -> None:
        start = self.clock()
        try:
            for fault in self.schedule:
                await asyncio.sleep(max(0.0, start + fault.at_s - self.clock()))
                await faulter.apply(fault)
        except Exception as e:
            self.fail("schedule applied", f"applying the schedule failed: {e!r}")
            faulter.heal_everything()
        etcd_faults = [f for f in self.schedule if f.kind.targets_etcd]
        if etcd_faults:
            self.report.results.append(
                checks.CheckResult(
                    "etcd outages change no leader",
                    not faulter.etcd_churn,
                    f"every partition kept its leader and leader epoch across "
                    f"{len(etcd_faults)} etcd restart(s)/pause(s) past the session TTL",
                    tuple(faulter.etcd_churn),
                )
            )

    async def _recover(self, probe: ClusterProbe) -> None:
        c = self.config
        self.at("last fault healed; waiting for every partition to be online")
        took, offline = await probe.wait_online(c.recovery_bound_s)
        self.report.results.append(
            checks.check_recovery(checks.Recovery(c.recovery_bound_s, took, tuple(offline)))
        )
        self.recovered_at = self.clock()
        self.at(f"all online after {took:.1f}s" if took is not None else f"offline: {offline}")
        await asyncio.sleep(c.settle_s)

    async def _zombie_probe(self, probe: ClusterProbe) -> None:
        epoch_kv = await probe.etcd.get(probe.ks.controller_epoch)
        current = metadata_pb2.ControllerEpoch.FromString(epoch_kv.value)
        deposed = next(c for c in self.cluster.controllers if c != current.controller_id)
        try:
            problems, known = await probe.zombie_probe(deposed)
        except Exception as e:  # a broker that does not answer at all
            self.fail("brokers reject a deposed controller", f"the probe failed: {e!r}")
            return
        self.at(f"stale-epoch probe sent; brokers know controller epochs {known}")
        self.report.results.append(
            checks.CheckResult(
                "brokers reject a deposed controller",
                not problems,
                "UpdateMetadata and LeaderAndIsr one epoch below each broker's known controller "
                f"epoch rejected with STALE_CONTROLLER_EPOCH by all {len(known)} brokers, "
                "Metadata unchanged",
                tuple(problems),
            )
        )
        behind = [
            f"broker {b}: {e}"
            for b, e in zip(sorted(self.cluster.brokers), known, strict=True)
            if e != current.epoch
        ]
        self.report.results.append(
            checks.CheckResult(
                "every broker follows the current controller",
                not behind,
                f"every broker reports controller epoch {current.epoch} (etcd's) after recovery",
                tuple(behind),
            )
        )

    async def _group_end(self) -> None:
        if self.group is None or self.workload is None:
            return
        c = self.config
        acked = [a.rid for a in self.workload.log.acks]
        self.group_caught_up = await self.group.catch_up(acked, c.group_catch_up_s)
        self.at("group caught up" if self.group_caught_up else "group did NOT catch up")
        try:
            await self.group.stop_and_resume(30.0)
        except Exception as e:
            self.fail("group resumes at the last commit", f"stopping or resuming failed: {e!r}")
            self.group = None
            return
        self.at(
            f"group stopped; commits {self.group.committed}, resumed at {self.group.resumed_at}"
        )

    async def _final_read(self) -> None:
        c = self.config
        try:
            self.final, bounds = await read_all(
                self.cluster.admin_address, TOPIC, c.partitions, c.final_read_s
            )
        except Exception as e:
            self.fail("final read", f"reading the topic back failed: {e!r}")
            return
        self.ends = {p: end for p, (_, end) in bounds.items()}
        self.at(f"final read: {sum(len(rows) for rows in self.final.values())} records")

    # ---------------------------------------------------------------------------- checking

    def _check(self) -> None:
        results = self.report.results
        w = self.workload
        if w is not None:
            for line in workload_summary(w.log, self.final):
                self.say(line)
            if self.final is not None:
                results.append(checks.check_log_shape(self.final, w.log.sent))
                results.append(checks.check_acknowledged(w.log.acks, self.final))
                results.append(checks.check_exactly_once_in_order(self.final))
                results.append(checks.check_reads_agree(w.log.seen, self.final))
            results.append(checks.check_ack_order(w.log.acks))
            if self.recovered_at is not None:
                results.append(writes_resumed(w, self.recovered_at, self.config.partitions))
            if self.group is not None:
                group_summary(self.group, self.say)
                results.append(check_group_consumed(w.log.acks, self.group.seen))
                if self.ends:
                    results.append(
                        check_group_resume(self.ends, self.group.committed, self.group.resumed_at)
                    )
        if self.history is not None and w is not None:
            results += leadership_checks(self.cluster, self.history, w.log.sightings, self.say)
        if self.final is not None and self.in_sync:
            results.append(replica_check(self.cluster, TOPIC, self.assignment, self.final))
