"""Greedy move selection for the ``balance`` plan: pure Python + numpy, no Spark, no I/O.

The planner sees every broker's counters but only the *candidate* partitions: those with a
replica or preferred leadership the cluster has too much of (chosen by Spark or numpy in
:mod:`services.pipeline.candidates`). It walks the goals in priority order and, for each
surplus replica, prices moving it to every broker at once (one numpy pass over ~1,000 brokers)
as a vector of goal changes. Every goal value is a sum of the per-broker (per-cell) penalties
these changes are computed from, so the planner always knows the exact goal values.

Resource goals (bytes on disk, bytes in and out per second, leader bytes in) are priced the
same way, in bytes: moving a replica of size ``S`` and rate ``R`` moves ``S`` and ``R`` from the
source to the destination, and when it is the preferred leader also its ``R * (rf - 1)`` bytes
out and its ``R`` leader bytes in (to the destination, or to the follower that takes over).
Since those changes are too large for a packed key, destinations are compared goal by goal: the
lexicographically smallest change vector is found by narrowing the destinations one goal at a
time.

Acceptance is lexicographic, as in Cruise Control: a move must improve the first goal it
changes, so it never breaks a higher goal while fixing a lower one; among acceptable moves the
planner takes the best vector, then the emptiest broker. A move for a high goal may cost a lower
goal (a rack fix may need one broker to go above its band until another move evens it out).
The plan must never end worse than the cluster on any goal, so after a run the planner looks at
each goal's net change; goals that ended worse become *protected* (no move may raise them) and
the run is repeated. Protecting every goal means each move lowers no goal at all, which is
always safe, so this ends after at most nine reruns.

Leader moves come first where they suffice: a preferred leader is moved by reordering a
partition's replicas (no data moves) before any replica is moved for the leader goal; and when a
leader replica is moved, the planner also considers handing leadership to an existing follower.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from services.pipeline.goals import (
    FIRST_RESOURCE,
    G_LEADERS,
    G_REPLICAS,
    G_TOPICS,
    GOALS,
    RESOURCES,
    BalanceOptions,
    BrokerUniverse,
    Targets,
)
from services.pipeline.greedy_phases import GreedyPhases

N_GOALS = len(GOALS)
G_DISK, G_IN, G_OUT, G_LBI = range(FIRST_RESOURCE, FIRST_RESOURCE + len(RESOURCES))


@dataclass
class GreedyInput:
    """Counters of the whole cluster and the candidate partitions, all by index."""

    universe: BrokerUniverse
    targets: Targets
    options: BalanceOptions
    counts: np.ndarray  # replicas per broker (whole cluster)
    leaders: np.ndarray  # preferred leaders per broker (whole cluster)
    replicas: list[list[int]]  # candidate partition -> broker indexes, leader first
    topic_of: list[int]
    topic_cells: dict[int, dict[int, int]]  # topic -> {broker: replicas of it} (whole cluster)
    topic_totals: dict[int, int]
    cand_replica: dict[int, list[int]] = field(default_factory=dict)  # broker -> partitions
    cand_leader: dict[int, list[int]] = field(default_factory=dict)
    cand_rack: list[int] = field(default_factory=list)
    cand_topic: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    # Resources: per-broker loads (len(RESOURCES) x brokers), per candidate partition its bytes
    # and bytes in per second, and per resource the candidate partitions by broker.
    loads: np.ndarray | None = None
    size: list[int] = field(default_factory=list)
    rate: list[int] = field(default_factory=list)
    cand_resource: dict[int, dict[int, list[int]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Move:
    partition: int
    source: int
    dest: int
    new_leader: int | None  # a follower that takes over the preferred leadership, if any
    delta: tuple[int, ...]


@dataclass(frozen=True)
class GreedyResult:
    replicas: dict[int, list[int]]  # changed candidate partitions -> new broker indexes
    steps: int  # replica moves and reorders taken (one replica may move more than once)
    protected: tuple[int, ...] = ()  # goals (0-based) the final run kept from rising
    net: tuple[int, ...] = (0,) * N_GOALS  # change of each goal's value


def _first_nonzero_negative(vector: tuple[int, ...]) -> bool:
    for d in vector:
        if d:
            return d < 0
    return False


def _lex_less(a: tuple, b: tuple, n: int) -> np.ndarray:
    """Per destination (``n`` of them), whether change vector ``a`` is lexicographically
    smaller than ``b`` (entries are scalars or length-``n`` vectors)."""
    less = np.zeros(n, dtype=bool)
    undecided = np.ones(n, dtype=bool)
    for x, y in zip(a, b, strict=True):
        diff = np.broadcast_to(np.asarray(x) - np.asarray(y), (n,))
        less |= undecided & (diff < 0)
        undecided &= diff == 0
    return less


def _up(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Penalty change of a band when a count grows by one."""
    return (c >= hi).astype(np.int64) - (c < lo)


def _down(c: int, lo: int, hi: int) -> int:
    """Penalty change of a band when a count shrinks by one."""
    return int(c <= lo) - int(c > hi)


class GreedyPlanner(GreedyPhases):
    """Holds the mutable counters of one planning run; ``run()`` returns the new replicas."""

    def __init__(self, inp: GreedyInput) -> None:
        self.u, self.t, self.opt = inp.universe, inp.targets, inp.options
        self.inp = inp
        self.rack = self.u.rack.tolist()
        self.n_racks = len(self.u.rack_names)
        self.original = [tuple(r) for r in inp.replicas]
        self.topic_of = inp.topic_of
        self._tcaps: dict[int, np.ndarray] = {}
        self._reset(frozenset())

    def _reset(self, protected: frozenset[int]) -> None:
        """Start over from the cluster as it is, protecting the given goals (0-based)."""
        inp = self.inp
        self.protected = protected
        self.net = [0] * N_GOALS  # applied change of each goal so far
        self.counts = inp.counts.astype(np.int64).copy()
        self.leaders = inp.leaders.astype(np.int64).copy()
        b = self.u.size
        self.loads = (
            np.zeros((len(RESOURCES), b), np.int64)
            if inp.loads is None
            else inp.loads.astype(np.int64).copy()
        )
        self.reps = [list(r) for r in inp.replicas]
        self._cells: dict[int, np.ndarray] = {}
        self.steps = 0
        # Penalty change of goals 2-4 if a broker gained one replica / preferred leadership,
        # kept current incrementally: a move touches two brokers, not all of them.
        tg = self.t
        self.up2 = (self.counts >= tg.cap).astype(np.int64)
        self.up3 = _up(self.counts, tg.lo, tg.hi)
        self.up4 = _up(self.leaders, tg.llo, tg.lhi)

    def _touch(self, *brokers: int) -> None:
        tg = self.t
        for b in brokers:
            c, lead = int(self.counts[b]), int(self.leaders[b])
            self.up2[b] = int(c >= tg.cap[b])
            self.up3[b] = int(c >= tg.hi[b]) - int(c < tg.lo[b])
            self.up4[b] = int(lead >= tg.lhi[b]) - int(lead < tg.llo[b])

    def cell(self, t: int) -> np.ndarray:
        """Topic ``t``'s replicas per broker, made dense only for topics the planner touches."""
        dense = self._cells.get(t)
        if dense is None:
            dense = np.zeros(self.u.size, dtype=np.int64)
            sparse = self.inp.topic_cells.get(t, {})
            if sparse:
                dense[list(sparse)] = list(sparse.values())
            self._cells[t] = dense
        return dense

    def tcap(self, t: int) -> np.ndarray:
        cap = self._tcaps.get(t)
        if cap is None:
            cap = self._tcaps[t] = self.t.topic_cap(self.inp.topic_totals[t])
        return cap

    # ---- pricing ------------------------------------------------------------------------------

    def _size(self, p: int) -> int:
        return self.inp.size[p] if p < len(self.inp.size) else 0

    def _rate(self, p: int) -> int:
        return self.inp.rate[p] if p < len(self.inp.rate) else 0

    def _pen(self, k: int, x: np.ndarray | int, b: np.ndarray | int) -> np.ndarray | int:
        lo, hi = self.t.rlo[k][b], self.t.rhi[k][b]
        return np.maximum(0, x - hi) + np.maximum(0, lo - x)

    def _res_up(self, k: int, amount: int) -> np.ndarray | int:
        """Penalty change of resource ``k`` on every broker if it took ``amount`` more."""
        if not amount:
            return 0
        load = self.loads[k]
        every = slice(None)
        return self._pen(k, load + amount, every) - self._pen(k, load, every)

    def _res_one(self, k: int, b: int, amount: int) -> int:
        """Penalty change of resource ``k`` on broker ``b`` if its load changed by ``amount``."""
        if not amount:
            return 0
        load = int(self.loads[k][b])
        return int(self._pen(k, load + amount, b)) - int(self._pen(k, load, b))

    def _lead_deltas(self, reps: list[int], f: int, s: int, rate: int) -> tuple[int, int, int]:
        """(bytes out, leader bytes in, leader count) changes when follower ``f`` takes
        ``s``'s preferred leadership of a partition with ``reps`` and ``rate``."""
        out = rate * (len(reps) - 1)
        d_out = self._res_one(G_OUT - FIRST_RESOURCE, s, -out) + self._res_one(
            G_OUT - FIRST_RESOURCE, f, out
        )
        d_lbi = self._res_one(G_LBI - FIRST_RESOURCE, s, -rate) + self._res_one(
            G_LBI - FIRST_RESOURCE, f, rate
        )
        down = _down(int(self.leaders[s]), int(self.t.llo[s]), int(self.t.lhi[s]))
        return d_out, d_lbi, int(self.up4[f]) + down

    def _best_follower(self, p: int, s: int) -> tuple[int | None, tuple[int, int, int]]:
        """The follower whose taking the preferred leadership from ``s`` costs the leadership
        goals (bytes out, leader bytes in, leader count) least, lexicographically."""
        reps = self.reps[p]
        best: tuple[tuple[int, int, int], int, int] | None = None
        for f in reps[1:]:
            if not self.u.can_lead[f]:
                continue
            cand = (self._lead_deltas(reps, f, s, self._rate(p)), int(self.leaders[f]), f)
            best = cand if best is None or cand < best else best
        return (None, (0, 0, 0)) if best is None else (best[2], best[0])

    def _rack_delta(self, reps: list[int], s: int) -> int | np.ndarray:
        """Goal 1's change per destination when ``s`` leaves ``reps``."""
        cap = -(-len(reps) // self.t.rack_count)
        per_rack: dict[int, int] = {}
        for r in reps:
            if r != s:
                per_rack[self.rack[r]] = per_rack.get(self.rack[r], 0) + 1
        n_s = per_rack.get(self.rack[s], 0)
        leaving = max(0, n_s + 1 - cap) - max(0, n_s - cap)  # what s's replica cost
        full = [k for k, n in per_rack.items() if n >= cap]
        if not full:
            return -leaving
        rack_full = np.zeros(self.n_racks, dtype=np.int64)
        rack_full[full] = 1
        return rack_full[self.u.rack] - leaving

    def best_move(self, p: int, s: int) -> Move | None:
        """The best acceptable destination for partition ``p``'s replica on broker ``s``.

        Each goal's change is a vector over destinations (or a scalar when it is the same for
        all); a destination is acceptable when its change vector is lexicographically negative
        and no protected goal rises. The lexicographically smallest vector is found by keeping,
        goal by goal, the destinations with the smallest change.
        """
        reps, tg = self.reps[p], self.t
        c_s, cell, tcap = (
            int(self.counts[s]),
            self.cell(self.topic_of[p]),
            self.tcap(self.topic_of[p]),
        )
        size, rate = self._size(p), self._rate(p)
        deltas: list[int | np.ndarray] = [0] * N_GOALS
        deltas[0] = self._rack_delta(reps, s)
        deltas[1] = self.up2 - int(c_s > tg.cap[s])
        deltas[G_DISK] = self._res_up(0, size) + self._res_one(0, s, -size)
        deltas[G_IN] = self._res_up(1, rate) + self._res_one(1, s, -rate)
        deltas[G_REPLICAS] = self.up3 + _down(c_s, int(tg.lo[s]), int(tg.hi[s]))
        deltas[G_TOPICS] = (cell >= tcap).astype(np.int64) - int(cell[s] > tcap[s])
        use_follower: np.ndarray | None = None
        follower = None
        if reps[0] == s:
            out = rate * (len(reps) - 1)
            down = _down(int(self.leaders[s]), int(tg.llo[s]), int(tg.lhi[s]))
            own = (
                self._res_up(2, out) + self._res_one(2, s, -out),
                self._res_up(3, rate) + self._res_one(3, s, -rate),
                self.up4 + down,
            )
            follower, handed = self._best_follower(p, s)
            if follower is not None:
                use_follower = _lex_less(handed, own, self.u.size)
                own = tuple(np.where(use_follower, h, o) for h, o in zip(handed, own, strict=True))
            deltas[G_OUT], deltas[G_LBI], deltas[G_LEADERS] = own
        bad = ~self.u.receivable.copy()
        bad[reps] = True
        for g in self.protected:
            d = deltas[g]
            if isinstance(d, np.ndarray):
                bad |= d > 0
            elif d > 0:
                return None
        cand = ~bad
        for d in deltas:
            if not cand.any():
                return None
            if isinstance(d, np.ndarray):
                cand &= d == d[cand].min()
            if np.count_nonzero(cand) == 1:
                break
        ties = np.flatnonzero(cand)
        if ties.size == 0:
            return None
        dest = (
            int(ties[np.lexsort((ties, cell[ties], self.counts[ties]))[0]])
            if ties.size > 1
            else int(ties[0])
        )
        delta = tuple(int(d[dest]) if isinstance(d, np.ndarray) else int(d) for d in deltas)
        if not _first_nonzero_negative(delta):
            return None
        new_leader = follower if use_follower is not None and use_follower[dest] else None
        return Move(p, s, dest, new_leader, delta)

    # ---- applying -----------------------------------------------------------------------------

    def apply(self, m: Move) -> None:
        reps, t = self.reps[m.partition], self.topic_of[m.partition]
        i = reps.index(m.source)
        reps[i] = m.dest
        self.counts[m.source] -= 1
        self.counts[m.dest] += 1
        cell = self.cell(t)
        cell[m.source] -= 1
        cell[m.dest] += 1
        size, rate = self._size(m.partition), self._rate(m.partition)
        self.loads[0][m.source] -= size
        self.loads[0][m.dest] += size
        self.loads[1][m.source] -= rate
        self.loads[1][m.dest] += rate
        if i == 0:
            self.leaders[m.source] -= 1
            if m.new_leader is not None:
                j = reps.index(m.new_leader)
                reps[0], reps[j] = reps[j], reps[0]
            self.leaders[reps[0]] += 1
            self._move_leader_loads(m.source, reps[0], rate, len(reps))
        self._touch(m.source, m.dest, reps[0])
        for g, d in enumerate(m.delta):
            self.net[g] += d
        self.steps += 1

    def _move_leader_loads(self, old: int, new: int, rate: int, rf: int) -> None:
        out = rate * (rf - 1)
        self.loads[2][old] -= out
        self.loads[2][new] += out
        self.loads[3][old] -= rate
        self.loads[3][new] += rate

    def reorder(self, p: int) -> bool:
        """Hand ``p``'s preferred leadership to a follower if that helps the leadership goals
        (bytes out, leader bytes in, leader count: lexicographically) and raises no protected
        goal."""
        reps = self.reps[p]
        s = reps[0]
        follower, (d_out, d_lbi, d_lead) = self._best_follower(p, s)
        if follower is None or not _first_nonzero_negative((d_out, d_lbi, d_lead)):
            return False
        if any(
            d > 0 and g in self.protected
            for g, d in ((G_OUT, d_out), (G_LBI, d_lbi), (G_LEADERS, d_lead))
        ):
            return False
        j = reps.index(follower)
        reps[0], reps[j] = reps[j], reps[0]
        self.leaders[s] -= 1
        self.leaders[follower] += 1
        self._move_leader_loads(s, follower, self._rate(p), len(reps))
        self._touch(s, follower)
        self.net[G_OUT] += d_out
        self.net[G_LBI] += d_lbi
        self.net[G_LEADERS] += d_lead
        self.steps += 1
        return True
