"""Turning a finished run's files and records into checker inputs, and summaries to print.

Kept apart from the runner so the runner reads as a timeline: this module knows where each
service writes its logs in the cluster's workdir and which checker each piece of evidence feeds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import chaos_checks as checks
from chaos_evidence import EtcdHistory, parse_broker_log, parse_state_change_log, read_replica
from chaos_workload import Workload, WorkloadLog

from leasehold.testing.cluster import LocalCluster

Final = dict[int, list[tuple[int, str]]]


def workload_summary(w: WorkloadLog, final: Final | None) -> list[str]:
    lines = [
        f"workload: {len(w.sent)} sent, {len(w.acks)} acknowledged, {len(w.failed)} failed, "
        f"{len(w.seen)} read live, {len(w.consumer_errors)} consumer errors, "
        f"{len(w.sightings)} Metadata sightings"
    ]
    if final is not None:
        ids = [rid for rows in final.values() for _, rid in rows]
        failed_but_written = len(set(ids) & set(w.failed))
        lines.append(
            f"records whose send failed but are in the log anyway: {failed_but_written}; "
            f"ids written twice (retried after a lost acknowledgement): {len(ids) - len(set(ids))}"
        )
    if w.failed:
        sample = sorted(w.failed.items())[:3]
        lines.append("failed sends, e.g.: " + "; ".join(f"{rid}: {err}" for rid, err in sample))
    return lines


def writes_resumed(workload: Workload, since: float, partitions: int) -> checks.CheckResult:
    """Liveness: after recovery, acks=all writes were acknowledged on every partition."""
    per_partition: dict[int, int] = defaultdict(int)
    for ack, t in zip(workload.log.acks, workload.ack_times, strict=True):
        if t >= since:
            per_partition[ack.partition] += 1
    idle = [p for p in range(partitions) if not per_partition[p]]
    return checks.CheckResult(
        "writes resume after recovery",
        not idle,
        f"acks=all records acknowledged per partition after recovery: "
        f"{dict(sorted(per_partition.items()))}",
        tuple(f"p{p}: nothing acknowledged after recovery" for p in idle),
    )


def leadership_checks(
    cluster: LocalCluster,
    history: EtcdHistory,
    sightings: Sequence[checks.EpochSighting],
    say: Callable[[str], None],
) -> list[checks.CheckResult]:
    """One leader per epoch (etcd, state-change logs, broker logs), brokers acting only on
    committed leadership, controller epochs in etcd and as brokers report them."""
    workdir = cluster.workdir
    broker_claims: list[checks.LeaderClaim] = []
    rejections: dict[str, int] = defaultdict(int)
    for b in cluster.brokers:
        path = workdir / f"broker-{b}.log"
        ev = parse_broker_log(path.read_text(errors="replace") if path.exists() else "", b)
        broker_claims += [*ev.leader_claims, *ev.follower_claims]
        for r in ev.rejections:
            rejections[f"{r.request} {r.code}"] += 1
    controller_claims: list[checks.LeaderClaim] = []
    for cid in cluster.controllers:
        path = workdir / f"state-change-{cid}.log"
        sc = parse_state_change_log(path.read_text(errors="replace") if path.exists() else "", cid)
        controller_claims += sc.leader_claims
    elected = ", ".join(f"epoch {b.epoch} -> controller {b.controller_id}" for b in history.bumps)
    say(f"controller epochs in etcd: {elected or 'none'}")
    say(
        "requests brokers rejected as a whole: "
        + (", ".join(f"{n}x {k}" for k, n in sorted(rejections.items())) or "none")
    )
    max_epoch = max((b.epoch for b in history.bumps), default=0)
    return [
        checks.check_one_leader_per_epoch(
            [*history.leader_claims, *controller_claims, *broker_claims]
        ),
        checks.check_broker_actions_committed(broker_claims, history.leader_claims),
        checks.check_controller_epochs(history.bumps, history.writes),
        checks.check_broker_controller_epochs(sightings, max_epoch),
    ]


def replica_check(
    cluster: LocalCluster, topic: str, assignment: dict[int, tuple[int, ...]], final: Final
) -> checks.CheckResult:
    """Every assigned replica, read from disk (the brokers are stopped by now), against the
    final read."""
    replicas = {
        (p, b): read_replica(cluster.workdir / f"broker-{b}", topic, p)
        for p, brokers in sorted(assignment.items())
        for b in brokers
    }
    return checks.check_replicas_agree(replicas, final)
