"""Synthetic clusters for the plan benchmark, property tests and dry runs of the planner.

Vectorised numpy, so a 1,000-broker, 1,000,000-partition cluster takes a second or two. The
shape mimics what makes real clusters unbalanced: placements skewed toward some brokers
(``skew``), freshly added brokers that hold nothing yet (``new_brokers``) and a fraction of
partitions with two replicas in one rack (``rack_violations``). Seeded: one spec, one cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from services.pipeline.snapshot_rows import BROKERS_SCHEMA, TOPICS_SCHEMA


@dataclass(frozen=True)
class SyntheticSpec:
    brokers: int = 12
    racks: int = 3  # 0: no rack information
    topics: int = 4
    partitions: int = 100  # in total, spread over the topics
    rf: int = 3
    skew: float = 1.0  # 0 = uniform placement; larger = more weight on low-index brokers
    new_brokers: int = 0  # the last brokers start empty
    rack_violations: float = 0.0  # fraction of partitions with a second replica in one rack
    max_size_bytes: int = 1 << 30
    max_bytes_in_per_s: int = 1 << 20  # produce rate per partition, uniform below this
    seed: int = 0


def _skewed(rng: np.random.Generator, n: int, size: int, skew: float) -> np.ndarray:
    weights = 1.0 / np.power(np.arange(1, n + 1), skew / 2) if skew > 0 else np.ones(n)
    order = rng.permutation(n)  # which brokers are the heavy ones is itself random
    return order[rng.choice(n, size=size, p=weights / weights.sum())]


def synthetic_cluster(spec: SyntheticSpec) -> tuple[pa.Table, dict[int, str | None]]:
    """(partitions table: topic, partition, replicas, size_bytes, bytes_in_per_s; broker id ->
    rack)."""
    rng = np.random.default_rng(spec.seed)
    ids = np.arange(1, spec.brokers + 1)
    racks = [f"rack-{(b - 1) % spec.racks}" if spec.racks else None for b in ids.tolist()]
    old = spec.brokers - spec.new_brokers
    if old < spec.rf:
        raise ValueError("need at least rf brokers that start with replicas")
    p = spec.partitions
    if spec.racks >= spec.rf and old >= spec.racks:
        members = [ids[:old][np.arange(old) % spec.racks == r] for r in range(spec.racks)]
        width = min(len(m) for m in members)
        table = np.stack([m[:width] for m in members])  # rack x broker
        chosen_racks = np.argsort(rng.random((p, spec.racks)), axis=1)[:, : spec.rf]
        within = _skewed(rng, width, p * spec.rf, spec.skew).reshape(p, spec.rf)
        replicas = table[chosen_racks, within]
        bad = np.flatnonzero(rng.random(p) < spec.rack_violations)
        if width > 1 and spec.rf > 1 and bad.size:
            replicas[bad, 1] = table[chosen_racks[bad, 0], (within[bad, 0] + 1) % width]
    else:
        first = _skewed(rng, old, p, spec.skew)
        shift = rng.integers(1, old - spec.rf + 2, size=p)
        cols = [first] + [(first + shift + j) % old for j in range(spec.rf - 1)]
        replicas = ids[np.stack(cols, axis=1)]
    per_topic = np.full(spec.topics, p // spec.topics)
    per_topic[: p % spec.topics] += 1
    topic_names = np.repeat([f"topic-{t:05d}" for t in range(spec.topics)], per_topic)
    partition = np.concatenate([np.arange(n) for n in per_topic])
    offsets = np.arange(0, p * spec.rf + 1, spec.rf, dtype=np.int32)
    values = pa.array(replicas.reshape(-1).astype(np.int32))
    table = pa.table(
        {
            "topic": pa.array(topic_names, pa.string()),
            "partition": pa.array(partition.astype(np.int32)),
            "replicas": pa.ListArray.from_arrays(pa.array(offsets), values),
            "size_bytes": pa.array(rng.integers(0, spec.max_size_bytes, size=p), pa.int64()),
            "bytes_in_per_s": pa.array(
                rng.integers(0, max(spec.max_bytes_in_per_s, 1), size=p).astype(np.float64)
            ),
        }
    )
    return table, dict(zip(ids.tolist(), racks, strict=True))


def write_synthetic_snapshot(
    spec: SyntheticSpec, output: Path
) -> tuple[pa.Table, dict[int, str | None]]:
    """A snapshot directory the plan job reads, from a synthetic cluster."""
    import json

    import pyarrow.parquet as pq

    partitions, brokers = synthetic_cluster(spec)
    output.mkdir(parents=True, exist_ok=True)
    n = partitions.num_rows
    empty_ints = pa.array([[]] * n, pa.list_(pa.int32()))
    full = partitions.append_column("removing_replicas", empty_ints)
    pq.write_table(full, output / "partitions.parquet")
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"broker_id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": r, "epoch": b,
                 "registered_at_ms": 0}
                for b, r in brokers.items()
            ],
            BROKERS_SCHEMA,
        ),
        output / "brokers.parquet",
    )  # fmt: skip
    topics = sorted(set(partitions.column("topic").to_pylist()))
    pq.write_table(
        pa.Table.from_pylist(
            [{"topic": t, "topic_id": t, "partition_count": 0, "replication_factor": spec.rf,
              "created_at_ms": 0, "marked_for_deletion": False, "configs": []} for t in topics],
            TOPICS_SCHEMA,
        ),
        output / "topics.parquet",
    )  # fmt: skip
    manifest = {"format": "leasehold-snapshot", "version": 1, "cluster_id": "synthetic",
                "revision": 0, "taken_at_ms": 0, "synthetic": spec.__dict__,
                "counts": {"partitions": n}, "log_sizes": {"measured": n}}  # fmt: skip
    (output / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return partitions, brokers
