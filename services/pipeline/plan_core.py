"""What a plan is (changed partitions plus a summary), and the single-process balance path.

:func:`local_balance` is the pure pandas/numpy planner: the baseline the benchmark measures the
Spark path against, and what small clusters and tests run without a JVM. It shares the goal
arithmetic, the candidate rules and the greedy planner with the Spark path; only the
aggregations differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa

from leasehold.reassign_json import format_reassignment_json
from services.pipeline.candidates import (
    CandidateFrames,
    ReplicaArrays,
    greedy_input,
    local_candidates,
)
from services.pipeline.goals import (
    GOALS,
    BalanceOptions,
    BrokerUniverse,
    GoalValues,
    Targets,
    compute_targets,
    goal_values,
)
from services.pipeline.greedy import GreedyPlanner


@dataclass(frozen=True)
class PartitionChange:
    topic: str
    partition: int
    old: tuple[int, ...]
    new: tuple[int, ...]
    size_bytes: int = 0

    @property
    def added(self) -> int:
        return len(set(self.new) - set(self.old))

    @property
    def leader_moved(self) -> bool:
        return bool(self.old) and bool(self.new) and self.old[0] != self.new[0]


@dataclass(frozen=True)
class PlanSummary:
    """The figures an operator reads before executing a plan."""

    mode: str
    partitions_changed: int
    replica_moves: int
    leader_moves: int
    bytes_to_move: int
    goals_before: dict[str, int]
    goals_after: dict[str, int]
    details: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    """Changed partitions, plus (kafka mode) proposed partitions that keep their replicas:
    Kafka's ``--generate`` lists every partition of the topics it was given."""

    changes: tuple[PartitionChange, ...]
    summary: PlanSummary
    unchanged: tuple[PartitionChange, ...] = ()

    def reassignment_json(self) -> str:
        """Kafka's reassignment file of the proposal, for ``leasehold reassign --execute``."""
        entries = (*self.changes, *self.unchanged)
        return format_reassignment_json({(c.topic, c.partition): c.new for c in entries})

    def rollback_json(self) -> str:
        """The current assignment of every partition in the proposal (Kafka prints it too)."""
        entries = (*self.changes, *self.unchanged)
        return format_reassignment_json({(c.topic, c.partition): c.old for c in entries})


def summarize(
    mode: str,
    changes: Sequence[PartitionChange],
    before: GoalValues,
    after: GoalValues,
    details: Mapping[str, object] | None = None,
) -> PlanSummary:
    return PlanSummary(
        mode=mode,
        partitions_changed=len(changes),
        replica_moves=sum(c.added for c in changes),
        leader_moves=sum(c.leader_moved for c in changes),
        bytes_to_move=sum(c.size_bytes * c.added for c in changes),
        goals_before=before.as_dict(),
        goals_after=after.as_dict(),
        details=dict(details or {}),
    )


def universe_for(
    brokers: Mapping[int, str | None], referenced: Iterable[int], options: BalanceOptions
) -> BrokerUniverse:
    return BrokerUniverse.build(brokers, referenced, options)


def apply_changes(
    arrays: ReplicaArrays,
    matrix: np.ndarray,
    universe: BrokerUniverse,
    changes: Iterable[PartitionChange],
) -> np.ndarray:
    """A copy of ``matrix`` with the changed partitions' rows replaced."""
    out = matrix.copy()
    changes = list(changes)
    if not changes:
        return out
    composite = arrays.topic_of * (1 << 32) + arrays.partition
    topic_index = {t: i for i, t in enumerate(arrays.topics.tolist())}
    wanted = np.asarray([topic_index[c.topic] * (1 << 32) + c.partition for c in changes])
    rows = np.searchsorted(composite, wanted)
    width = max(out.shape[1], max(len(c.new) for c in changes))
    if width > out.shape[1]:
        out = np.pad(out, ((0, 0), (0, width - out.shape[1])), constant_values=-1)
    for row, change in zip(rows.tolist(), changes, strict=True):
        out[row, :] = -1
        out[row, : len(change.new)] = universe.index_of(list(change.new))
    return out


def local_goal_values(
    arrays: ReplicaArrays,
    brokers: Mapping[int, str | None],
    options: BalanceOptions,
    changes: Iterable[PartitionChange] = (),
) -> GoalValues:
    """Goal values of the assignment in ``arrays`` (after ``changes`` if given)."""
    referenced = set(arrays.broker.tolist()) | {b for c in changes for b in c.new}
    universe = universe_for(brokers, referenced, options)
    n_lead = int((np.diff(arrays.offsets) > 0).sum())
    totals = arrays.loads(universe).sum(axis=1).tolist()
    targets = compute_targets(universe, len(arrays.broker), n_lead, options, totals)
    matrix = apply_changes(arrays, arrays.matrix(universe), universe, changes)
    return goal_values(universe, targets, matrix, arrays.topic_of, arrays.size, arrays.rate)


def local_balance(
    table: pa.Table, brokers: Mapping[int, str | None], options: BalanceOptions
) -> Plan:
    """The whole balance plan in one process: numpy candidates, greedy, goals before/after."""
    arrays = ReplicaArrays.from_table(table)
    universe = universe_for(brokers, arrays.broker.tolist(), options)
    frames, targets = local_candidates(arrays, universe, options)
    changes, details = run_greedy(frames, universe, targets, options)
    matrix = arrays.matrix(universe)
    before = goal_values(universe, targets, matrix, arrays.topic_of, arrays.size, arrays.rate)
    after_matrix = apply_changes(arrays, matrix, universe, changes)
    after = goal_values(universe, targets, after_matrix, arrays.topic_of, arrays.size, arrays.rate)
    details = {"engine": "local", **details}
    return Plan(tuple(changes), summarize("balance", changes, before, after, details))


def run_greedy(
    frames: CandidateFrames, universe: BrokerUniverse, targets: Targets, options: BalanceOptions
) -> tuple[list[PartitionChange], dict[str, object]]:
    """Frames -> greedy -> the changed partitions, in (topic, partition) order, and details."""
    inp, keys, sizes = greedy_input(frames, universe, targets, options)
    result = GreedyPlanner(inp).run()
    changes = [
        PartitionChange(
            keys[p][0],
            keys[p][1],
            tuple(int(universe.ids[b]) for b in inp.replicas[p]),
            tuple(int(universe.ids[b]) for b in new),
            sizes[p],
        )
        for p, new in sorted(result.replicas.items())
    ]
    details = {
        "candidates": len(frames.candidates),
        "candidate_partitions": len(keys),
        "steps": result.steps,
        "protected_goals": [GOALS[g] for g in result.protected],
    }
    return changes, details


def options_dict(options: BalanceOptions) -> dict[str, object]:
    data = asdict(options)
    data["drain"] = sorted(options.drain)
    data["exclude"] = sorted(options.exclude)
    return data


def table_from_rows(rows: Iterable[tuple]) -> pa.Table:
    """A partitions table from (topic, partition, replicas, size_bytes[, bytes_in_per_s]) rows
    (tests, tools)."""
    rows = list(rows)
    return pa.table(
        {
            "topic": pa.array([r[0] for r in rows], pa.string()),
            "partition": pa.array([r[1] for r in rows], pa.int32()),
            "replicas": pa.array([list(r[2]) for r in rows], pa.list_(pa.int32())),
            "size_bytes": pa.array([r[3] for r in rows], pa.int64()),
            "bytes_in_per_s": pa.array(
                [float(r[4]) if len(r) > 4 else 0.0 for r in rows], pa.float64()
            ),
        }
    )
