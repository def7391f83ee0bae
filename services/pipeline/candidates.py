"""Candidate selection for the balance plan, single-process (numpy over Arrow), and the shared
conversion of candidate frames into the greedy planner's input.

The Spark path (:mod:`services.pipeline.balance_spark`) computes the very same frames with
DataFrame aggregations and window ranks; both hand them to :func:`greedy_input`, so for one
snapshot both paths plan exactly the same moves (a test checks it). Candidates are:

- ``replica``: on each broker, the first ``choice_factor * give`` replicas in key order, where
  ``give`` is its surplus (:func:`~services.pipeline.goals.surplus_quotas`);
- ``leader``: the same over the preferred-leader replicas, with the leader surplus;
- ``rack``: every partition that breaks the rack goal;
- ``topic``: per (topic, broker) above the topic cap, ``choice_factor * excess`` replicas;
- one kind per resource (``disk_usage``, ``network_inbound``, ``network_outbound``,
  ``leader_bytes_in``): on each broker with a surplus of it, its replicas (leaders only for the
  last two) by load, largest first, until they add up to ``choice_factor`` times the surplus.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from services.pipeline.goals import (
    RESOURCES,
    BalanceOptions,
    BrokerUniverse,
    Targets,
    broker_loads,
    compute_targets,
    mix_key,
    resource_quotas,
    surplus_quotas,
)
from services.pipeline.greedy import GreedyInput

KINDS = ("replica", "leader", "rack", "topic", *RESOURCES)


@dataclass(frozen=True)
class ReplicaArrays:
    """A partitions table flattened into arrays (one entry per replica), indexed for numpy."""

    topics: np.ndarray  # sorted unique topic names (object)
    topic_of: np.ndarray  # partition -> topic index
    partition: np.ndarray  # partition -> partition number
    size: np.ndarray  # partition -> bytes (0 when unknown)
    rate: np.ndarray  # partition -> bytes in per second (0 when unknown)
    offsets: np.ndarray  # partition -> start in ``broker`` (length P + 1)
    broker: np.ndarray  # replica -> broker id, leader first within a partition

    @classmethod
    def from_table(cls, table: pa.Table) -> ReplicaArrays:
        """From columns topic, partition, replicas (list<int>) and optional size_bytes."""
        table = table.sort_by([("topic", "ascending"), ("partition", "ascending")])
        topic_names = np.asarray(table.column("topic").to_numpy(zero_copy_only=False), dtype=object)
        topics, topic_of = np.unique(topic_names, return_inverse=True)
        replicas = table.column("replicas").combine_chunks()
        if isinstance(replicas, pa.ChunkedArray):  # empty tables stay chunked
            replicas = (
                pa.concat_arrays(replicas.chunks)
                if replicas.chunks
                else pa.array([], pa.list_(pa.int32()))
            )
        offsets = np.asarray(replicas.offsets, dtype=np.int64)
        flat = np.asarray(replicas.flatten().to_numpy(zero_copy_only=False), dtype=np.int64)
        if "size_bytes" in table.column_names:
            size = table.column("size_bytes").fill_null(0).to_numpy().astype(np.int64)
        else:
            size = np.zeros(table.num_rows, dtype=np.int64)
        if "bytes_in_per_s" in table.column_names:
            rate = np.rint(table.column("bytes_in_per_s").fill_null(0).to_numpy()).astype(np.int64)
        else:
            rate = np.zeros(table.num_rows, dtype=np.int64)
        partition = table.column("partition").to_numpy().astype(np.int64)
        return cls(topics, topic_of.astype(np.int64), partition, size, rate, offsets, flat)

    @property
    def n_partitions(self) -> int:
        return len(self.partition)

    def part_of(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_partitions), np.diff(self.offsets))

    def position(self) -> np.ndarray:
        return np.arange(len(self.broker)) - self.offsets[self.part_of()]

    def loads(self, universe: BrokerUniverse) -> np.ndarray:
        """Per-broker resource loads (``goals.broker_loads``) of this assignment."""
        part = self.part_of()
        rf = np.diff(self.offsets)[part]
        return broker_loads(
            universe.index_of(self.broker),
            self.position() == 0,
            rf,
            self.size[part],
            self.rate[part],
            universe.size,
        )

    def replica_loads(self) -> np.ndarray:
        """(len(RESOURCES), replicas): what each replica weighs in each resource."""
        part = self.part_of()
        lead = self.position() == 0
        rate = self.rate[part]
        rf = np.diff(self.offsets)[part]
        return np.stack(
            [self.size[part], rate, np.where(lead, rate * (rf - 1), 0), np.where(lead, rate, 0)]
        ).astype(np.int64)

    def matrix(self, universe: BrokerUniverse) -> np.ndarray:
        """(partitions x max rf) broker indexes padded with -1, for ``goal_values``."""
        width = int(np.diff(self.offsets).max(initial=0))
        out = np.full((self.n_partitions, max(width, 1)), -1, dtype=np.int64)
        out[self.part_of(), self.position()] = universe.index_of(self.broker)
        return out


@dataclass(frozen=True)
class CandidateFrames:
    """What the planner needs, as small pandas frames (the same from Spark and numpy)."""

    # broker_id, replicas, leaders and one column per resource: every broker of the universe
    brokers: pd.DataFrame
    # topic, partition, replicas, size_bytes, bytes_in_per_s: candidate partitions
    partitions: pd.DataFrame
    candidates: pd.DataFrame  # kind, topic, partition, broker_id, key
    cells: pd.DataFrame  # topic, broker_id, count: every non-empty cell of candidate topics
    totals: pd.DataFrame  # topic, total: replicas of each candidate topic


def _rank_within(groups: np.ndarray, *keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order rows by (group, keys...) and return (order, rank of each ordered row in its group)."""
    order = np.lexsort((*reversed(keys), groups))
    g = groups[order]
    rank = np.arange(len(g)) - np.searchsorted(g, g, side="left")
    return order, rank


def local_candidates(
    arrays: ReplicaArrays, universe: BrokerUniverse, options: BalanceOptions
) -> tuple[CandidateFrames, Targets]:
    """Select candidates with numpy, exactly as the Spark path does with window ranks."""
    b = universe.size
    part = arrays.part_of()
    pos = arrays.position()
    bidx = universe.index_of(arrays.broker)
    counts = np.bincount(bidx, minlength=b)
    leaders = np.bincount(bidx[pos == 0], minlength=b)
    n_lead = int((np.diff(arrays.offsets) > 0).sum())
    loads = arrays.loads(universe)
    targets = compute_targets(universe, len(bidx), n_lead, options, loads.sum(axis=1).tolist())
    give, lgive = surplus_quotas(universe, targets, counts, leaders)
    rgive = resource_quotas(universe, targets, loads)
    crc = np.asarray([zlib.crc32(t.encode()) for t in arrays.topics], dtype=np.int64)
    topic = arrays.topic_of[part]
    key = mix_key(crc[topic], arrays.partition[part], arrays.broker)
    f = options.choice_factor
    tie = (key, topic, arrays.partition[part])
    chosen: dict[str, np.ndarray] = {}
    order, rank = _rank_within(bidx, *tie)
    chosen["replica"] = order[rank < np.minimum(counts, f * give)[bidx[order]]]
    lead_rows = np.flatnonzero(pos == 0)
    order, rank = _rank_within(bidx[lead_rows], *(k[lead_rows] for k in tie))
    limit = np.minimum(leaders, f * lgive)[bidx[lead_rows][order]]
    chosen["leader"] = lead_rows[order[rank < limit]]
    # Rack goal: partitions with more replicas in one rack than their cap allows.
    width = len(universe.rack_names) + 1
    rk, rcount = np.unique(part * width + universe.rack[bidx], return_counts=True)
    rf = np.diff(arrays.offsets)
    bad = np.unique(rk[rcount > targets.rack_cap(rf[rk // width])] // width)
    chosen["rack"] = arrays.offsets[bad]  # one row (the leader's) per partition
    # Topic goal: cells above the cap.
    cell = topic * b + bidx
    ck, ccount = np.unique(cell, return_counts=True)
    totals = np.bincount(topic, minlength=len(arrays.topics))
    tcap = np.where(universe.drained[ck % b], 0, targets.topic_caps(totals)[ck // b])
    excess = np.zeros(len(bidx), dtype=np.int64)
    excess_by_cell = dict(zip(ck.tolist(), (ccount - tcap).tolist(), strict=True))
    over_cells = np.asarray([c for c, e in excess_by_cell.items() if e > 0], dtype=np.int64)
    in_over = np.isin(cell, over_cells)
    rows = np.flatnonzero(in_over)
    excess[rows] = [excess_by_cell[c] for c in cell[rows].tolist()]
    order, rank = _rank_within(cell[rows], *(k[rows] for k in tie))
    chosen["topic"] = rows[order[rank < f * excess[rows][order]]]
    # Resources: the heaviest replicas first, until they cover choice_factor x the surplus.
    weights = arrays.replica_loads()
    for k, name in enumerate(RESOURCES):
        w = weights[k]
        rows = np.flatnonzero((w > 0) & (rgive[k][bidx] > 0))
        order, _ = _rank_within(bidx[rows], -w[rows], *(t[rows] for t in tie))
        ordered = rows[order]
        group = bidx[ordered]
        cum = np.cumsum(w[ordered])
        starts = np.searchsorted(group, group, side="left")
        before = cum - w[ordered] - np.where(starts > 0, cum[starts - 1], 0)
        chosen[name] = ordered[before < f * rgive[k][group]]

    frames = []
    for kind in KINDS:
        r = chosen[kind]
        frames.append(
            pd.DataFrame(
                {
                    "kind": kind,
                    "topic": arrays.topics[topic[r]],
                    "partition": arrays.partition[part[r]],
                    "broker_id": arrays.broker[r] if kind != "rack" else -1,
                    "key": key[r],
                }
            )
        )
    cand = pd.concat(frames, ignore_index=True)
    cand_parts = np.unique(np.concatenate([part[chosen[k]] for k in KINDS]))
    partitions = pd.DataFrame(
        {
            "topic": arrays.topics[arrays.topic_of[cand_parts]],
            "partition": arrays.partition[cand_parts],
            "replicas": [
                arrays.broker[arrays.offsets[p] : arrays.offsets[p + 1]].tolist()
                for p in cand_parts.tolist()
            ],
            "size_bytes": arrays.size[cand_parts],
            "bytes_in_per_s": arrays.rate[cand_parts],
        }
    )
    cand_topics = np.unique(arrays.topic_of[cand_parts])
    keep = np.isin(ck // b, cand_topics)
    cells = pd.DataFrame(
        {
            "topic": arrays.topics[ck[keep] // b],
            "broker_id": universe.ids[ck[keep] % b],
            "count": ccount[keep],
        }
    )
    brokers = pd.DataFrame(
        {
            "broker_id": universe.ids,
            "replicas": counts,
            "leaders": leaders,
            **{name: loads[k] for k, name in enumerate(RESOURCES)},
        }
    )
    totals_df = pd.DataFrame({"topic": arrays.topics[cand_topics], "total": totals[cand_topics]})
    return CandidateFrames(brokers, partitions, cand, cells, totals_df), targets


def _group_lists(keys: np.ndarray, values: np.ndarray) -> dict:
    """``{key: [values in the given order]}`` without a Python loop per row."""
    if len(keys) == 0:
        return {}
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    cuts = np.flatnonzero(np.diff(k)) + 1
    return {
        int(group[0]): chunk.tolist()
        for group, chunk in zip(np.split(k, cuts), np.split(v, cuts), strict=True)
    }


def greedy_input(
    frames: CandidateFrames, universe: BrokerUniverse, targets: Targets, options: BalanceOptions
) -> tuple[GreedyInput, list[tuple[str, int]], list[int]]:
    """Frames -> planner input, ordered deterministically; also the partition keys and sizes."""
    parts = frames.partitions.sort_values(["topic", "partition"], kind="stable")
    parts = parts.reset_index(drop=True)
    parts["partition"] = parts["partition"].astype(np.int64)
    keys = list(zip(parts["topic"].tolist(), parts["partition"].tolist(), strict=True))
    topic_names = sorted(set(parts["topic"].tolist()))
    tidx = {t: i for i, t in enumerate(topic_names)}
    lens = np.asarray([len(r) for r in parts["replicas"]], dtype=np.int64)
    flat = (
        universe.index_of(np.concatenate([np.asarray(r, np.int64) for r in parts["replicas"]]))
        if len(parts)
        else np.zeros(0, np.int64)
    ).tolist()
    bounds = np.concatenate([[0], np.cumsum(lens)]).tolist()
    brokers = frames.brokers.set_index("broker_id").reindex(universe.ids, fill_value=0)
    loads = np.stack(
        [
            brokers[name].to_numpy(np.int64) if name in brokers else np.zeros(universe.size, int)
            for name in RESOURCES
        ]
    )
    cells = frames.cells[frames.cells["topic"].isin(tidx)]
    cell_lists = _group_lists(
        cells["topic"].map(tidx).to_numpy(np.int64),
        universe.index_of(cells["broker_id"].to_numpy(np.int64)) * (1 << 32)
        + cells["count"].to_numpy(np.int64),
    )
    inp = GreedyInput(
        universe=universe,
        targets=targets,
        options=options,
        counts=brokers["replicas"].to_numpy(np.int64),
        loads=loads,
        leaders=brokers["leaders"].to_numpy(np.int64),
        replicas=[flat[bounds[i] : bounds[i + 1]] for i in range(len(parts))],
        topic_of=[tidx[t] for t in parts["topic"]],
        topic_cells={t: {v >> 32: v & 0xFFFFFFFF for v in vs} for t, vs in cell_lists.items()},
        topic_totals={
            tidx[t]: int(n)
            for t, n in frames.totals[["topic", "total"]].itertuples(index=False)
            if t in tidx
        },
    )
    index = parts[["topic", "partition"]].assign(pidx=np.arange(len(parts)))
    cand = frames.candidates.astype({"partition": np.int64, "broker_id": np.int64})
    cand = cand.sort_values(["kind", "broker_id", "key", "topic", "partition"], kind="stable")
    cand = cand.merge(index, on=["topic", "partition"], how="left", sort=False)
    kind = cand["kind"].to_numpy()
    pid = cand["pidx"].to_numpy(np.int64)
    racked = kind == "rack"
    bidx = np.full(len(cand), -1, dtype=np.int64)
    bidx[~racked] = universe.index_of(cand["broker_id"].to_numpy(np.int64)[~racked])
    inp.cand_rack = sorted(set(pid[racked].tolist()))
    inp.cand_replica = _group_lists(bidx[kind == "replica"], pid[kind == "replica"])
    inp.cand_leader = _group_lists(bidx[kind == "leader"], pid[kind == "leader"])
    is_topic = kind == "topic"
    topic_ids = np.asarray([inp.topic_of[p] for p in pid[is_topic].tolist()], dtype=np.int64)
    by_cell = _group_lists(topic_ids * (1 << 32) + bidx[is_topic], pid[is_topic])
    inp.cand_topic = {(k >> 32, k & 0xFFFFFFFF): v for k, v in by_cell.items()}
    sizes = parts["size_bytes"].fillna(0).astype(np.int64).tolist()
    inp.size = sizes
    rates = parts["bytes_in_per_s"] if "bytes_in_per_s" in parts else pd.Series(0, parts.index)
    inp.rate = np.rint(rates.fillna(0).to_numpy(np.float64)).astype(np.int64).tolist()
    weight = (
        np.asarray(sizes, np.int64),
        np.asarray(inp.rate, np.int64),
        np.asarray(inp.rate, np.int64) * (lens - 1),
        np.asarray(inp.rate, np.int64),
    )
    for k, name in enumerate(RESOURCES):
        mine = kind == name
        lists = _group_lists(bidx[mine], pid[mine])
        # heaviest first (stable: ties keep the key order)
        inp.cand_resource[k] = {
            b: sorted(ps, key=lambda p, w=weight[k]: -int(w[p])) for b, ps in lists.items()
        }
    return inp, keys, sizes
