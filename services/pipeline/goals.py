"""The balance goals, their targets and their values: pure numpy, shared by every plan path.

Nine goals, in priority order, the order Cruise Control gives its goals (its names in
brackets):

1. ``rack_awareness`` [RackAwareGoal]: a partition with ``rf`` replicas keeps at most
   ``ceil(rf / racks)`` of them in one rack. Value: replicas above that per (partition, rack).
2. ``replica_capacity`` [ReplicaCapacityGoal]: a broker holds at most ``max_replicas_per_broker``
   replicas; a drained broker holds none. Value: replicas above the capacity, summed.
3. ``disk_usage`` [DiskUsageDistributionGoal]: every broker's bytes on disk (the sizes of the
   replicas it holds) lie in the band ``[floor(avg*(1-t)), ceil(avg*(1+t))]``. Value: bytes
   outside the band, summed.
4. ``network_inbound`` [NetworkInboundUsageDistributionGoal]: the same for bytes in per second:
   every replica takes its partition's produce rate in (the leader from producers, a follower
   by replication).
5. ``network_outbound`` [NetworkOutboundUsageDistributionGoal]: the same for bytes out per
   second: a leader sends its partition's rate to each of its ``rf - 1`` followers (consumer
   traffic is not known to the snapshot).
6. ``leader_bytes_in`` [LeaderBytesInDistributionGoal]: the same for the produce rate of the
   partitions a broker leads (preferred leaders).
7. ``replica_distribution`` [ReplicaDistributionGoal]: every broker's replica count lies in the
   band ``[floor(avg*(1-t)), ceil(avg*(1+t))]``. Value: distance outside the band, summed.
8. ``leader_distribution`` [LeaderReplicaDistributionGoal]: the same for preferred leaders (the
   first replica: what a preferred election or auto leader rebalance makes the leader).
9. ``topic_replica_distribution`` [TopicReplicaDistributionGoal]: a broker holds at most
   ``ceil(avg) + clamp(ceil(avg * (balance - 1)), min_gap, max_gap)`` replicas of a topic whose
   average per broker is ``avg`` (Cruise Control's defaults: balance 3.0, gaps 2 and 40; balance
   1.0 with gap 0 demands a perfect spread). Value: replicas above, summed.

Sizes come from the snapshot (``size_bytes``) and rates from its two readings of the log end
offsets (``bytes_in_per_s``); where they are unknown they count as 0, and the resource goals are
then satisfied by any assignment, leaving the count goals to decide.

Every value is "how far from satisfied" (0 = satisfied), a sum of per-broker (or per-cell)
piecewise-linear penalties. That shape is what lets the greedy planner price one move exactly
from a handful of counters and refuse any move that makes any goal worse.

Drained brokers target 0 in every goal, so moving a replica off one never worsens a goal.
Excluded brokers (and offline ones: referenced by a replica but not registered) keep what they
hold but receive nothing, so their lower bounds are 0. Rackless brokers count as racks of their
own, which makes the rack goal trivially satisfied on a cluster without racks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

GOALS: tuple[str, ...] = (
    "rack_awareness",
    "replica_capacity",
    "disk_usage",
    "network_inbound",
    "network_outbound",
    "leader_bytes_in",
    "replica_distribution",
    "leader_distribution",
    "topic_replica_distribution",
)
RESOURCES: tuple[str, ...] = GOALS[2:6]  # per-broker loads, in bytes or bytes per second
FIRST_RESOURCE = 2  # goal index of RESOURCES[0]
# Goal indexes of the count goals, used by the greedy planner.
G_REPLICAS, G_LEADERS, G_TOPICS = 6, 7, 8
UNLIMITED = np.iinfo(np.int64).max // 4
KEY_MODULUS = 2_147_483_647  # 2^31 - 1 (MINSTD): products stay far inside int64 everywhere


@dataclass(frozen=True)
class BalanceOptions:
    """What the operator asks of a balance plan."""

    threshold: float = 0.10  # band around the average (Cruise Control's balance percentage 1.10)
    max_replicas_per_broker: int | None = None
    drain: frozenset[int] = frozenset()
    exclude: frozenset[int] = frozenset()
    # Candidates taken per unit of surplus: room for the greedy to skip moves it must refuse.
    topic_balance: float = 3.0
    topic_min_gap: int = 2
    topic_max_gap: int = 40
    choice_factor: int = 2
    max_rounds: int = 3


@dataclass(frozen=True)
class BrokerUniverse:
    """Every broker a plan may name, by index: registered ones plus any a replica references."""

    ids: np.ndarray  # int64, sorted
    rack: np.ndarray  # int64 rack index per broker
    rack_names: tuple[str, ...]
    drained: np.ndarray  # bool
    receivable: np.ndarray  # bool: may receive new replicas
    can_lead: np.ndarray  # bool: may become preferred leader through a reorder
    offline: np.ndarray  # bool: referenced but not registered

    @classmethod
    def build(
        cls,
        registered: Mapping[int, str | None],
        referenced: Iterable[int],
        options: BalanceOptions,
    ) -> BrokerUniverse:
        ids = sorted(set(registered) | {int(b) for b in referenced})
        names: dict[str, int] = {}
        rack = []
        for b in ids:
            name = registered.get(b) or f"\x00broker-{b}"  # rackless: a rack of its own
            rack.append(names.setdefault(name, len(names)))
        arr = np.asarray(ids, dtype=np.int64)
        offline = np.asarray([b not in registered for b in ids], dtype=bool)
        drained = np.isin(arr, list(options.drain))
        excluded = np.isin(arr, list(options.exclude))
        return cls(
            ids=arr,
            rack=np.asarray(rack, dtype=np.int64),
            rack_names=tuple(names),
            drained=drained,
            receivable=~(drained | excluded | offline),
            can_lead=~(drained | offline),
            offline=offline,
        )

    @property
    def size(self) -> int:
        return len(self.ids)

    def index_of(self, broker_ids: np.ndarray | Sequence[int]) -> np.ndarray:
        ids = np.asarray(broker_ids, dtype=np.int64)
        idx = np.searchsorted(self.ids, ids)
        if ids.size and (idx.max(initial=0) >= self.size or (self.ids[idx] != ids).any()):
            raise ValueError("broker id outside the universe")
        return idx


@dataclass(frozen=True)
class Targets:
    """Per-broker bounds of every goal; constant for one plan (totals do not change)."""

    cap: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    llo: np.ndarray
    lhi: np.ndarray
    mid: int  # floor of the average replica count: brokers above it may give when others lack
    lmid: int
    rack_count: int
    eligible: int  # brokers that may hold replicas at all (not drained)
    drained: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, bool))
    topic_balance: float = 3.0
    topic_min_gap: int = 2
    topic_max_gap: int = 40
    # Resource bands: (len(RESOURCES), brokers) lower and upper bounds; floor of the averages.
    rlo: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((4, 0), np.int64))
    rhi: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((4, 0), np.int64))
    rmid: tuple[int, ...] = (0, 0, 0, 0)

    def topic_caps(self, totals: np.ndarray) -> np.ndarray:
        """Per topic (by replica total), the most replicas of it one broker may hold."""
        avg = np.asarray(totals, dtype=np.float64) / self.eligible
        gap = np.ceil(avg * (self.topic_balance - 1.0))
        gap = np.minimum(np.maximum(gap, self.topic_min_gap), self.topic_max_gap)
        return (np.ceil(avg) + gap).astype(np.int64)

    def rack_cap(self, rf: np.ndarray) -> np.ndarray:
        """Most replicas of a partition with ``rf`` replicas that one rack may hold."""
        return -(-np.asarray(rf, dtype=np.int64) // self.rack_count)

    def topic_cap(self, topic_total: int) -> np.ndarray:
        """Per-broker cap on one topic's replicas (0 on drained brokers)."""
        cap = int(self.topic_caps(np.asarray([topic_total]))[0])
        return np.where(self.drained, 0, cap)


def compute_targets(
    universe: BrokerUniverse,
    total_replicas: int,
    total_partitions: int,
    options: BalanceOptions,
    load_totals: Sequence[int] = (0, 0, 0, 0),
) -> Targets:
    eligible = max(1, int((~universe.drained).sum()))
    t = options.threshold
    avg = total_replicas / eligible
    lavg = total_partitions / eligible
    drained = universe.drained
    cap_value = (
        UNLIMITED if options.max_replicas_per_broker is None else options.max_replicas_per_broker
    )
    cap = np.where(drained, 0, cap_value).astype(np.int64)

    def band(mean: float, lower_ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.where(lower_ok, math.floor(mean * (1 - t) + 1e-9), 0)
        hi = np.where(drained, 0, math.ceil(mean * (1 + t) - 1e-9))
        return lo.astype(np.int64), hi.astype(np.int64)

    lo, hi = band(avg, universe.receivable)
    llo, lhi = band(lavg, universe.receivable)
    racks = len(set(universe.rack[~drained].tolist())) or 1
    bands = [band(total / eligible, universe.receivable) for total in load_totals]
    rlo = np.asarray([b[0] for b in bands], dtype=np.int64).reshape(len(RESOURCES), -1)
    rhi = np.asarray([b[1] for b in bands], dtype=np.int64).reshape(len(RESOURCES), -1)
    rmid = tuple(math.floor(total / eligible) for total in load_totals)
    return Targets(
        cap, lo, hi, llo, lhi, math.floor(avg), math.floor(lavg), racks, eligible, drained,
        options.topic_balance, options.topic_min_gap, options.topic_max_gap, rlo, rhi, rmid,
    )  # fmt: skip


@dataclass(frozen=True)
class GoalValues:
    """One value per goal, lower is better, 0 satisfied; plus spread figures for people."""

    rack_awareness: int
    replica_capacity: int
    disk_usage: int
    network_inbound: int
    network_outbound: int
    leader_bytes_in: int
    replica_distribution: int
    leader_distribution: int
    topic_replica_distribution: int
    replicas_min: int = 0
    replicas_max: int = 0
    leaders_min: int = 0
    leaders_max: int = 0
    # Per-broker resource loads (hosting brokers): bytes, bytes/s.
    disk_bytes_min: int = 0
    disk_bytes_max: int = 0
    bytes_in_per_s_min: int = 0
    bytes_in_per_s_max: int = 0
    bytes_out_per_s_min: int = 0
    bytes_out_per_s_max: int = 0
    leader_bytes_in_per_s_min: int = 0
    leader_bytes_in_per_s_max: int = 0

    def vector(self) -> tuple[int, ...]:
        return tuple(getattr(self, g) for g in GOALS)

    def not_worse_than(self, other: GoalValues) -> bool:
        return all(a <= b for a, b in zip(self.vector(), other.vector(), strict=True))

    def as_dict(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.__dict__.items()}

    def never_worse_on_a_higher_goal(self, before: GoalValues) -> bool:
        """Lexicographically no worse than ``before``: the first goal that changed improved."""
        return self.vector() <= before.vector()


_LOAD_SPREAD = ("disk_bytes", "bytes_in_per_s", "bytes_out_per_s", "leader_bytes_in_per_s")


def broker_loads(
    broker_index: np.ndarray,
    is_leader: np.ndarray,
    rf: np.ndarray,
    size: np.ndarray,
    rate: np.ndarray,
    brokers: int,
) -> np.ndarray:
    """(len(RESOURCES), brokers) int64 loads from one entry per replica: the broker index,
    whether it is the preferred leader, and its partition's replica count, size and rate."""
    lead = np.asarray(is_leader, bool)
    size = np.asarray(size, np.float64)
    rate = np.asarray(rate, np.float64)
    out = np.zeros((len(RESOURCES), brokers), dtype=np.int64)
    if len(broker_index) == 0:
        return out
    out[0] = np.rint(np.bincount(broker_index, weights=size, minlength=brokers))
    out[1] = np.rint(np.bincount(broker_index, weights=rate, minlength=brokers))
    fanout = rate[lead] * (np.asarray(rf)[lead] - 1)
    out[2] = np.rint(np.bincount(broker_index[lead], weights=fanout, minlength=brokers))
    out[3] = np.rint(np.bincount(broker_index[lead], weights=rate[lead], minlength=brokers))
    return out


def resource_goal_values(
    universe: BrokerUniverse, targets: Targets, loads: np.ndarray
) -> tuple[list[int], dict[str, int]]:
    """Goals 3-6 from per-broker loads, and the loads' spread over hosting brokers."""
    values = [
        int(band_penalty(loads[k], targets.rlo[k], targets.rhi[k]).sum())
        for k in range(len(RESOURCES))
    ]
    hosting = ~universe.drained
    spread: dict[str, int] = {}
    for k, name in enumerate(_LOAD_SPREAD):
        row = loads[k][hosting] if hosting.any() else loads[k][:0]
        spread[f"{name}_min"] = int(row.min()) if row.size else 0
        spread[f"{name}_max"] = int(row.max()) if row.size else 0
    return values, spread


def resource_quotas(universe: BrokerUniverse, targets: Targets, loads: np.ndarray) -> np.ndarray:
    """Per resource and broker, how much load it should be ready to give (as
    :func:`surplus_quotas` does for counts)."""
    give = np.maximum(loads - targets.rhi, 0)
    for k in range(len(RESOURCES)):
        deficit = np.maximum(0, targets.rlo[k] - loads[k])[universe.receivable].sum()
        if deficit:
            give[k] = np.maximum(give[k], loads[k] - targets.rmid[k])
    return np.maximum(give, 0)


def band_penalty(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.maximum(0, counts - hi) + np.maximum(0, lo - counts)


def broker_goal_values(
    universe: BrokerUniverse, targets: Targets, counts: np.ndarray, leaders: np.ndarray
) -> tuple[int, int, int, dict[str, int]]:
    """Goals 2-4 from per-broker replica and preferred-leader counts."""
    g2 = int(np.maximum(0, counts - targets.cap).sum())
    g3 = int(band_penalty(counts, targets.lo, targets.hi).sum())
    g4 = int(band_penalty(leaders, targets.llo, targets.lhi).sum())
    hosting = ~universe.drained
    c, lead = (counts[hosting], leaders[hosting]) if hosting.any() else (counts[:0], leaders[:0])
    spread = {
        "replicas_min": int(c.min()) if c.size else 0,
        "replicas_max": int(c.max()) if c.size else 0,
        "leaders_min": int(lead.min()) if lead.size else 0,
        "leaders_max": int(lead.max()) if lead.size else 0,
    }
    return g2, g3, g4, spread


def goal_values(
    universe: BrokerUniverse,
    targets: Targets,
    replicas: np.ndarray,
    topic_of: np.ndarray,
    size: np.ndarray | None = None,
    rate: np.ndarray | None = None,
) -> GoalValues:
    """Every goal for a whole assignment: ``replicas`` is (partitions x max rf) broker indexes,
    padded with -1; ``topic_of`` gives each partition's topic index, ``size`` and ``rate`` its
    bytes and bytes in per second (0 when not given)."""
    b = universe.size
    present = replicas >= 0
    flat = replicas[present]
    counts = np.bincount(flat, minlength=b)
    has_leader = present[:, 0] if replicas.shape[1] else np.zeros(0, bool)
    leaders = np.bincount(replicas[has_leader, 0], minlength=b)
    g2, g3, g4, spread = broker_goal_values(universe, targets, counts, leaders)
    rows = np.nonzero(present)[0]
    rf = present.sum(axis=1)
    # Goal 1: replicas above the rack cap per (partition, rack).
    rack_key = rows * (len(universe.rack_names) + 1) + universe.rack[flat]
    rk, rcount = np.unique(rack_key, return_counts=True)
    rpart = rk // (len(universe.rack_names) + 1)
    g1 = int(np.maximum(0, rcount - targets.rack_cap(rf[rpart])).sum())
    # Goal 5: replicas above the topic cap per (topic, broker).
    topics = topic_of[rows]
    cell, ccount = np.unique(topics * b + flat, return_counts=True)
    ctopic, cbroker = cell // b, cell % b
    totals = np.bincount(topics, minlength=int(topic_of.max(initial=-1)) + 1)
    tcap = targets.topic_caps(totals)[ctopic]
    tcap = np.where(universe.drained[cbroker], 0, tcap)
    g5 = int(np.maximum(0, ccount - tcap).sum())
    n = len(replicas)
    size = np.zeros(n) if size is None else np.asarray(size, np.float64)
    rate = np.zeros(n) if rate is None else np.asarray(rate, np.float64)
    pos = np.nonzero(present)[1]
    loads = broker_loads(flat, pos == 0, rf[rows], size[rows], rate[rows], b)
    resources, load_spread = resource_goal_values(universe, targets, loads)
    return GoalValues(
        rack_awareness=g1,
        replica_capacity=g2,
        disk_usage=resources[0],
        network_inbound=resources[1],
        network_outbound=resources[2],
        leader_bytes_in=resources[3],
        replica_distribution=g3,
        leader_distribution=g4,
        topic_replica_distribution=g5,
        **spread,
        **load_spread,
    )


def surplus_quotas(
    universe: BrokerUniverse,
    targets: Targets,
    counts: np.ndarray,
    leaders: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """How many replicas (and preferred leaderships) each broker should be ready to give.

    A broker gives what lies above its capacity or band; when some broker sits below its band it
    also offers what lies above the average, because the deficit must come from somewhere. The
    candidate selection takes ``choice_factor`` times this many replicas per broker.
    """
    deficit = int(np.maximum(0, targets.lo - counts)[universe.receivable].sum())
    ldeficit = int(np.maximum(0, targets.llo - leaders)[universe.receivable].sum())
    give = np.maximum(counts - np.minimum(targets.cap, targets.hi), 0)
    if deficit:
        give = np.maximum(give, counts - targets.mid)
    lgive = np.maximum(leaders - targets.lhi, 0)
    if ldeficit:
        lgive = np.maximum(lgive, leaders - targets.lmid)
    return np.maximum(give, 0), np.maximum(lgive, 0)


def mix_key(topic_crc: np.ndarray, partition: np.ndarray, broker_id: np.ndarray) -> np.ndarray:
    """A reproducible pseudo-random order of replicas, the same in numpy and in Spark SQL.

    ``topic_crc`` is zlib's CRC-32 of the topic name (Spark's ``crc32``); two MINSTD steps mix
    it with the partition and broker ids. All arithmetic stays below 2^63.
    """
    m = KEY_MODULUS
    k = (
        np.asarray(topic_crc, np.int64)
        + np.asarray(partition, np.int64) * 40503
        + np.asarray(broker_id, np.int64) * 69069
    ) % m
    k = (k * 48271) % m
    return (k * 48271) % m
