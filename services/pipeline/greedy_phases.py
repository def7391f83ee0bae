"""The greedy planner's phases, in goal order, and its run loop (see :mod:`.greedy`).

Each phase walks the brokers with a surplus of its goal and offers their candidate partitions to
the planner's pricing (``best_move``, ``reorder``), which accepts only moves that improve the
first goal they change; ``run`` repeats the phases, protecting any goal that ended worse.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from services.pipeline.goals import RESOURCES

if TYPE_CHECKING:
    from services.pipeline.greedy import GreedyResult


class GreedyPhases:
    """Mixed into :class:`services.pipeline.greedy.GreedyPlanner` (its state and pricing)."""

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

    def phase_resource(self, k: int) -> int:
        """Resource ``k`` (index into RESOURCES): brokers above their band give, largest load
        first; for the leadership resources a reorder (no data moved) is tried first."""
        load, hi, lo = self.loads[k], self.t.rhi[k], self.t.rlo[k]
        lists = self.inp.cand_resource.get(k, {})
        mid = self.t.rmid[k]

        def gives(s: int) -> bool:
            if load[s] > hi[s]:
                return True
            deficit = bool((np.maximum(0, lo - load)[self.u.receivable]).any())
            return bool(load[s] > mid and deficit)

        sources = sorted(lists, key=lambda b: (-int(load[b] - hi[b]), -int(load[b]), b))
        taken = 0
        leadership = RESOURCES[k] in ("network_outbound", "leader_bytes_in")
        for s in sources:
            for p in lists[s]:
                if not gives(s):
                    break
                if s not in self.reps[p]:
                    continue
                if leadership:
                    if self.reps[p][0] != s:
                        continue
                    if self.reorder(p):
                        taken += 1
                        continue
                move = self.best_move(p, s)
                if move is not None:
                    self.apply(move)
                    taken += 1
        return taken

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
            *(partial(self.phase_resource, k) for k in range(len(RESOURCES))),
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
        from services.pipeline.greedy import GreedyResult

        return GreedyResult(changed, self.steps, tuple(sorted(self.protected)), tuple(self.net))
