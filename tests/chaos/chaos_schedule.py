"""The seeded fault schedule of a chaos run: what goes wrong, when, and for how long.

A schedule is pure data derived from a seed, so a failing run is replayed by running it again
with ``LEASEHOLD_CHAOS_SEED`` set to the seed it printed. The schedule names *roles* ("the leader
of partition 2", "the active controller"), not processes: the runner resolves a role to a process
when the fault starts, because who holds a role depends on what happened before. The concrete
victim of each fault is printed, so a replay can be compared with the original line by line.

Faults never overlap: each is healed (process restarted or resumed, etcd started) before the next
begins. Durations are chosen relative to the session TTL, because the interesting distinction is
whether a process stalls *within* its lease (a hiccup the cluster must ride out) or *past* it (its
lease expires, someone else takes over, and the old holder wakes up as a zombie). etcd itself is
killed and restarted, or paused, for longer than the TTL: no partition may change leader for it.
"""

from __future__ import annotations

import enum
import os
import random
import secrets
from dataclasses import dataclass

SEED_ENV = "LEASEHOLD_CHAOS_SEED"


class FaultKind(enum.Enum):
    KILL_CONTROLLER = "kill-active-controller"  # SIGKILL, restarted after `duration_s`
    PAUSE_CONTROLLER = "pause-active-controller"  # SIGSTOP past the lease: a zombie controller
    KILL_LEADER = "kill-partition-leader"  # SIGKILL the leader of `partition`, then restart
    KILL_FOLLOWER = "kill-partition-follower"  # SIGKILL a follower of `partition`, then restart
    PAUSE_LEADER = "pause-partition-leader"  # SIGSTOP within the lease, then SIGCONT
    PAUSE_FOLLOWER = "pause-partition-follower"  # SIGSTOP within the lease, then SIGCONT
    PAUSE_BROKER_PAST_LEASE = "pause-leader-past-lease"  # SIGSTOP > TTL: a zombie leader
    RESTART_ETCD = "restart-etcd"  # SIGKILL etcd, start it again on the same data dir
    PAUSE_ETCD = "pause-etcd"  # SIGSTOP etcd past the lease: it expires every lease on SIGCONT

    @property
    def targets_etcd(self) -> bool:
        return self in (FaultKind.RESTART_ETCD, FaultKind.PAUSE_ETCD)

    @property
    def targets_controller(self) -> bool:
        return self in (FaultKind.KILL_CONTROLLER, FaultKind.PAUSE_CONTROLLER)

    @property
    def targets_follower(self) -> bool:
        return self in (FaultKind.KILL_FOLLOWER, FaultKind.PAUSE_FOLLOWER)

    @property
    def is_kill(self) -> bool:
        return self in (FaultKind.KILL_CONTROLLER, FaultKind.KILL_LEADER, FaultKind.KILL_FOLLOWER)


@dataclass(frozen=True)
class Fault:
    """One fault: starts ``at_s`` seconds after the workload started, lasts ``duration_s``.

    ``partition`` selects the partition whose leader or follower is hit (ignored for controller
    and etcd faults); ``pick`` breaks ties among several followers (index modulo their count).
    """

    index: int
    kind: FaultKind
    at_s: float
    duration_s: float
    partition: int = 0
    pick: int = 0

    def describe(self) -> str:
        where = ""
        if not self.kind.targets_controller and not self.kind.targets_etcd:
            where = f" of partition {self.partition}"
        return (
            f"#{self.index} {self.kind.value}{where} at +{self.at_s:.1f}s "
            f"for {self.duration_s:.1f}s"
        )


@dataclass(frozen=True)
class ScheduleSpec:
    """The knobs a schedule is drawn from (all times in seconds)."""

    session_ttl: float
    partitions: int
    count: int  # how many faults
    warmup_s: float = 3.0  # workload alone before the first fault
    gap_s: tuple[float, float] = (2.0, 5.0)  # quiet time between one heal and the next fault
    kinds: tuple[FaultKind, ...] = tuple(FaultKind)  # each appears at least once if count allows


def duration_range(kind: FaultKind, ttl: float) -> tuple[float, float]:
    """How long a fault of ``kind`` lasts, relative to the session TTL."""
    if kind is FaultKind.RESTART_ETCD:  # down past the TTL: leases must survive the restart
        return (ttl + 1.0, ttl + 7.0)
    if kind is FaultKind.PAUSE_ETCD:  # frozen past the TTL: brokers must re-register in grace
        return (ttl + 1.0, ttl + 12.0)
    if kind in (FaultKind.PAUSE_LEADER, FaultKind.PAUSE_FOLLOWER):
        return (0.5, max(0.6, ttl - 1.0))  # well within the lease: a stall, not a failure
    # Kills stay down past the lease (the controller notices); long pauses outlive the lease.
    return (ttl + 1.5, ttl + 4.0)


def build_schedule(seed: int, spec: ScheduleSpec) -> list[Fault]:
    """The faults for ``seed``: every kind of ``spec.kinds`` once (as far as ``count`` allows),
    then random kinds, in a seeded order, each after a seeded gap."""
    rng = random.Random(seed)
    kinds = list(spec.kinds[: spec.count])
    kinds += [rng.choice(spec.kinds) for _ in range(spec.count - len(kinds))]
    rng.shuffle(kinds)
    faults = []
    at = spec.warmup_s
    for index, kind in enumerate(kinds, start=1):
        low, high = duration_range(kind, spec.session_ttl)
        duration = round(rng.uniform(low, high), 1)
        faults.append(
            Fault(
                index=index,
                kind=kind,
                at_s=round(at, 1),
                duration_s=duration,
                partition=rng.randrange(spec.partitions),
                pick=rng.randrange(1 << 16),
            )
        )
        at += duration + rng.uniform(*spec.gap_s)
    return faults


def schedule_length_s(faults: list[Fault]) -> float:
    """When the last fault is healed, if every fault starts on time."""
    return max((f.at_s + f.duration_s for f in faults), default=0.0)


def seed_from_env(default: int | None) -> int:
    """``$LEASEHOLD_CHAOS_SEED`` if set ("random" draws one); else ``default``; else a fresh one.

    A fresh seed explores a new schedule on every run; the run prints it so it can be replayed.
    """
    raw = os.environ.get(SEED_ENV, "").strip()
    if raw and raw != "random":
        return int(raw)
    if raw == "random" or default is None:
        return secrets.randbelow(10**9)
    return default
