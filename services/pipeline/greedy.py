"""Greedy move selection for the ``balance`` plan: pure Python + numpy, no Spark, no I/O.

The planner sees every broker's counters but only the *candidate* partitions: those with a
replica or preferred leadership the cluster has too much of (chosen by Spark or numpy in
:mod:`services.pipeline.candidates`). It walks the goals in priority order and, for each
surplus replica, prices moving it to every broker at once (one numpy pass over ~1,000 brokers)
as a vector of goal changes. Every goal value is a sum of the per-broker (per-cell) penalties
these changes are computed from, so the planner always knows the exact goal values.

Acceptance is lexicographic, as in Cruise Control: a move must improve the first goal it
changes, so it never breaks a higher goal while fixing a lower one; among acceptable moves the
planner takes the best vector, then the emptiest broker. A move for a high goal may cost a lower
goal (a rack fix may need one broker to go above its band until another move evens it out).
The plan must never end worse than the cluster on any goal, so after a run the planner looks at
each goal's net change; goals that ended worse become *protected* (no move may raise them) and
the run is repeated. Protecting every goal means each move lowers no goal at all, which is
always safe, so this ends after at most five reruns.

Leader moves come first where they suffice: a preferred leader is moved by reordering a
partition's replicas (no data moves) before any replica is moved for the leader goal; and when a
leader replica is moved, the planner also considers handing leadership to an existing follower.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from services.pipeline.goals import BalanceOptions, BrokerUniverse, Targets


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
    net: tuple[int, ...] = (0, 0, 0, 0, 0)  # change of each goal's value


_ZERO_KEY = sum(8 * 16**i for i in range(5))  # the key of "no goal changes"
_NO_KEY = 16**5  # above every key: not an acceptable destination


def _up(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Penalty change of a band when a count grows by one."""
    return (c >= hi).astype(np.int64) - (c < lo)


def _down(c: int, lo: int, hi: int) -> int:
    """Penalty change of a band when a count shrinks by one."""
    return int(c <= lo) - int(c > hi)


class GreedyPlanner:
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
        self.net = [0] * 5  # applied change of each goal so far
        self.counts = inp.counts.astype(np.int64).copy()
        self.leaders = inp.leaders.astype(np.int64).copy()
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

    def _best_follower(self, reps: list[int]) -> tuple[int | None, int]:
        """The follower whose taking the preferred leadership costs the leader goal least."""
        best: tuple[int, int, int] | None = None
        for f in reps[1:]:
            if not self.u.can_lead[f]:
                continue
            cand = (int(self.up4[f]), int(self.leaders[f]), f)
            best = cand if best is None or cand < best else best
        return (None, 0) if best is None else (best[2], best[0])

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
        all); a destination is acceptable when the change vector is lexicographically negative
        and no protected goal rises. Vectors compare through a base-16 key (changes lie in
        -8..7), so the lexicographically best destination is an argmin.
        """
        reps, tg = self.reps[p], self.t
        c_s, cell, tcap = (
            int(self.counts[s]),
            self.cell(self.topic_of[p]),
            self.tcap(self.topic_of[p]),
        )
        d1 = self._rack_delta(reps, s)
        d2 = self.up2 - int(c_s > tg.cap[s])
        d3 = self.up3 + _down(c_s, int(tg.lo[s]), int(tg.hi[s]))
        d4: int | np.ndarray = 0
        follower, use_follower = None, None
        if reps[0] == s:
            down = _down(int(self.leaders[s]), int(tg.llo[s]), int(tg.lhi[s]))
            d4 = self.up4 + down
            follower, f_up = self._best_follower(reps)
            if follower is not None:
                use_follower = (f_up + down) < d4
                d4 = np.minimum(d4, f_up + down)
        d5 = (cell >= tcap).astype(np.int64) - int(cell[s] > tcap[s])
        deltas = (d1, d2, d3, d4, d5)
        bad = ~self.u.receivable.copy()
        bad[reps] = True
        key: int | np.ndarray = 0
        for g, d in enumerate(deltas):
            if g in self.protected:
                if isinstance(d, np.ndarray):
                    bad |= d > 0
                elif d > 0:
                    return None
            key = key * 16 + d + 8
        key = np.where(bad, _NO_KEY, key)
        best = int(key.min())
        if best >= _ZERO_KEY:
            return None
        ties = np.flatnonzero(key == best)
        dest = (
            int(ties[np.lexsort((ties, cell[ties], self.counts[ties]))[0]])
            if ties.size > 1
            else int(ties[0])
        )
        delta = tuple(int(d[dest]) if isinstance(d, np.ndarray) else int(d) for d in deltas)
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
        if i == 0:
            self.leaders[m.source] -= 1
            if m.new_leader is not None:
                j = reps.index(m.new_leader)
                reps[0], reps[j] = reps[j], reps[0]
            self.leaders[reps[0]] += 1
        self._touch(m.source, m.dest, reps[0])
        for g, d in enumerate(m.delta):
            self.net[g] += d
        self.steps += 1

    def reorder(self, p: int) -> bool:
        """Hand ``p``'s preferred leadership to a follower if that helps the leader goal."""
        reps = self.reps[p]
        s = reps[0]
        down = _down(int(self.leaders[s]), int(self.t.llo[s]), int(self.t.lhi[s]))
        follower, up = self._best_follower(reps)
        if follower is None or up + down >= 0:
            return False
        j = reps.index(follower)
        reps[0], reps[j] = reps[j], reps[0]
        self.leaders[s] -= 1
        self.leaders[follower] += 1
        self._touch(s, follower)
        self.net[3] += up + down
        self.steps += 1
        return True

    # ---- phases, in goal order ------------------------------------------------------------------

    def _drain_list(
        self, sources: list[int], lists: dict[int, list[int]], gives: Callable[[int], bool]
    ) -> int:
        taken = 0
        for s in sources:
            for p in lists.get(s, ()):
                if not gives(s):
                    break
                if s in self.reps[p]:
                    move = self.best_move(p, s)
                    if move is not None:
                        self.apply(move)
                        taken += 1
        return taken

    def phase_rack(self) -> int:
        taken = 0
        for p in self.inp.cand_rack:
            for _ in range(len(self.reps[p])):
                reps = self.reps[p]
                cap = math.ceil(len(reps) / self.t.rack_count)
                per_rack: dict[int, int] = {}
                for r in reps:
                    per_rack[int(self.u.rack[r])] = per_rack.get(int(self.u.rack[r]), 0) + 1
                sources = [r for r in reps if per_rack[int(self.u.rack[r])] > cap]
                if not sources:
                    break
                # Price every replica that could leave and take the best move of them all.
                moves = [m for s in sources if (m := self.best_move(p, s)) is not None]
                if not moves:
                    break
                move = min(moves, key=lambda m: (m.delta, m.source == reps[0], m.source))
                self.apply(move)
                taken += 1
        return taken

    def phase_capacity(self) -> int:
        over = [b for b in range(self.u.size) if self.counts[b] > self.t.cap[b]]
        over.sort(key=lambda b: (not self.u.drained[b], -int(self.counts[b] - self.t.cap[b]), b))
        return self._drain_list(
            over, self.inp.cand_replica, lambda s: self.counts[s] > self.t.cap[s]
        )

    def _deficit(self, counts: np.ndarray, lo: np.ndarray) -> bool:
        return bool((np.maximum(0, lo - counts)[self.u.receivable]).any())

    def phase_replicas(self) -> int:
        c, tg = self.counts, self.t
        sources = sorted(
            self.inp.cand_replica, key=lambda b: (-int(c[b] - tg.hi[b]), -int(c[b]), b)
        )

        def gives(s: int) -> bool:
            return bool(c[s] > tg.hi[s] or (c[s] > tg.mid and self._deficit(c, tg.lo)))

        return self._drain_list(sources, self.inp.cand_replica, gives)

    def phase_leaders(self) -> int:
        lead, tg = self.leaders, self.t
        sources = sorted(
            self.inp.cand_leader, key=lambda b: (-int(lead[b] - tg.lhi[b]), -int(lead[b]), b)
        )

        def gives(s: int) -> bool:
            return bool(lead[s] > tg.lhi[s] or (lead[s] > tg.lmid and self._deficit(lead, tg.llo)))

        taken = 0
        for s in sources:  # reorders first: they move no data
            for p in self.inp.cand_leader[s]:
                if not gives(s):
                    break
                if self.reps[p][0] == s and self.reorder(p):
                    taken += 1
        for s in sources:
            for p in self.inp.cand_leader[s]:
                if not gives(s):
                    break
                if self.reps[p][0] == s and (move := self.best_move(p, s)) is not None:
                    self.apply(move)
                    taken += 1
        return taken

    def phase_topics(self) -> int:
        def surplus(cell: tuple[int, int]) -> int:
            t, b = cell
            return int(self.cell(t)[b] - self.tcap(t)[b])

        taken = 0
        for cell in sorted(self.inp.cand_topic, key=lambda k: (-surplus(k), k)):
            t, s = cell
            for p in self.inp.cand_topic[cell]:
                if surplus(cell) <= 0:
                    break
                if s in self.reps[p] and (move := self.best_move(p, s)) is not None:
                    self.apply(move)
                    taken += 1
        return taken

    def _run_once(self) -> None:
        phases = (
            self.phase_rack,
            self.phase_capacity,
            self.phase_replicas,
            self.phase_leaders,
            self.phase_topics,
        )
        for _ in range(max(1, self.opt.max_rounds)):
            if sum(phase() for phase in phases) == 0:
                break

    def run(self) -> GreedyResult:
        """Plan, protecting goals that ended worse and planning again until none does."""
        self._run_once()
        while worse := {g for g, d in enumerate(self.net) if d > 0}:
            self._reset(self.protected | worse)
            self._run_once()
        changed = {p: reps for p, reps in enumerate(self.reps) if tuple(reps) != self.original[p]}
        return GreedyResult(changed, self.steps, tuple(sorted(self.protected)), tuple(self.net))
