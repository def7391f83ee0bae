"""The ``kafka`` plan mode: ``kafka-reassign-partitions --generate`` (seed 002) over Spark.

Kafka's tool places each topic afresh with ``assignReplicasToBrokers`` over the broker list,
keeping the topic's partition count and the replication factor of its first partition, from a
random start index. Topics are independent, so Spark aggregates each topic's shape (partition
count, replication factor) and places topics in parallel with ``mapInPandas``; the placement
itself is :func:`leasehold.assignment.assign_replicas_to_brokers`, bit-for-bit Kafka's.

Kafka draws one ``Random`` for the whole run; parallel topics cannot share one, so each topic's
generator is seeded from the run's seed and the topic name (:func:`topic_seed`). The seed is in
the plan summary, so a plan can be regenerated exactly.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from leasehold.assignment import BrokerMetadata, assign_replicas_to_brokers, placement_brokers
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from services.pipeline.balance_spark import (
    broker_counts,
    explode_replicas,
    spark_goal_values,
    with_changes,
)
from services.pipeline.candidates import ReplicaArrays
from services.pipeline.goals import RESOURCES, BalanceOptions, BrokerUniverse, compute_targets
from services.pipeline.plan_core import PartitionChange, Plan, local_goal_values, summarize

PROPOSAL_SCHEMA = "topic string, partition long, new array<int>"


@dataclass(frozen=True)
class KafkaOptions:
    broker_ids: tuple[int, ...] | None = None  # --broker-list; None means every registered one
    topics: tuple[str, ...] | None = None  # topics to move; None means every topic
    rack_aware: bool = True
    seed: int | None = None
    start_index: int | None = None  # a fixed start index and shift, as Kafka's tests use
    threshold: float = 0.10  # only for the goal values in the summary


def topic_seed(seed: int, topic: str) -> int:
    digest = hashlib.sha256(f"{seed}/{topic}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def place_topic(
    brokers: Sequence[BrokerMetadata], topic: str, n: int, rf: int, seed: int, start: int | None
) -> dict[int, list[int]]:
    rng = random.Random(topic_seed(seed, topic))
    return assign_replicas_to_brokers(
        brokers, n, rf, fixed_start_index=-1 if start is None else start, rng=rng
    )


def placement(registered: Mapping[int, str | None], options: KafkaOptions) -> list[BrokerMetadata]:
    """The broker list handed to the placer, checked as Kafka's tool checks it."""
    brokers = placement_brokers(
        [BrokerMetadata(b, r) for b, r in registered.items()],
        rack_aware=options.rack_aware,
        only_ids=None if options.broker_ids is None else set(options.broker_ids),
    )
    if not brokers:
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
            "No registered broker is in the broker list",
        )
    return brokers


def topic_shapes(partitions: DataFrame, topics: Sequence[str] | None) -> DataFrame:
    """topic, n (partitions), rf (replicas of the lowest partition)."""
    if topics is not None:
        partitions = partitions.where(F.col("topic").isin(list(topics)))
    return partitions.groupBy("topic").agg(
        F.count(F.lit(1)).alias("n"),
        F.min_by(F.size("replicas"), F.col("partition")).alias("rf"),
    )


def propose(
    shapes: DataFrame, brokers: Sequence[BrokerMetadata], seed: int, start: int | None
) -> DataFrame:
    """topic, partition, new: every partition of every topic in ``shapes``, placed afresh."""
    brokers = list(brokers)

    def place(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            rows = [
                (topic, p, replicas)
                for topic, n, rf in pdf[["topic", "n", "rf"]].itertuples(index=False)
                for p, replicas in sorted(
                    place_topic(brokers, topic, int(n), int(rf), seed, start).items()
                )
            ]
            yield pd.DataFrame(rows, columns=["topic", "partition", "new"])

    return shapes.repartition("topic").mapInPandas(place, PROPOSAL_SCHEMA)


def _changes(rows: pd.DataFrame) -> tuple[list[PartitionChange], list[PartitionChange]]:
    changed, kept = [], []
    for topic, partition, old, new, size in rows.itertuples(index=False):
        c = PartitionChange(
            topic,
            int(partition),
            tuple(int(b) for b in old),
            tuple(int(b) for b in new),
            0 if pd.isna(size) else int(size),
        )
        (changed if c.old != c.new else kept).append(c)
    key = lambda c: (c.topic, c.partition)  # noqa: E731
    return sorted(changed, key=key), sorted(kept, key=key)


def spark_kafka_plan(
    spark: SparkSession,
    partitions: DataFrame,
    registered: Mapping[int, str | None],
    options: KafkaOptions,
) -> Plan:
    brokers = placement(registered, options)
    seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(63)
    if "bytes_in_per_s" not in partitions.columns:
        partitions = partitions.withColumn("bytes_in_per_s", F.lit(None).cast("double"))
    partitions = partitions.select(
        "topic", "partition", "replicas", "size_bytes", "bytes_in_per_s"
    ).persist()
    shapes = topic_shapes(partitions, options.topics).persist()
    max_rf = shapes.agg(F.max("rf")).first()[0]
    if max_rf is not None:
        assign_replicas_to_brokers(brokers, 1, int(max_rf), 0)  # Kafka's error, on the driver
    proposal = propose(shapes, brokers, seed, options.start_index)
    rows = (
        proposal.join(
            partitions.withColumn("partition", F.col("partition").cast("long")),
            ["topic", "partition"],
        )
        .select("topic", "partition", "replicas", "new", "size_bytes")
        .toPandas()
    )
    changed, kept = _changes(rows)
    replicas = explode_replicas(partitions)
    counts = broker_counts(replicas).toPandas()
    balance = BalanceOptions(threshold=options.threshold)
    universe = BrokerUniverse.build(registered, counts["broker_id"].tolist(), balance)
    targets = compute_targets(
        universe,
        int(counts["replicas"].sum()),
        int(counts["leaders"].sum()),
        balance,
        [int(counts[name].sum()) for name in RESOURCES],
    )
    before = spark_goal_values(spark, replicas, universe, targets)
    new = pd.DataFrame(
        {
            "topic": [c.topic for c in changed],
            "partition": [c.partition for c in changed],
            "new": [list(c.new) for c in changed],
        }
    )
    after = spark_goal_values(
        spark, explode_replicas(with_changes(spark, partitions, new)), universe, targets
    )
    shapes.unpersist()
    partitions.unpersist()
    details = {
        "engine": "spark",
        "seed": seed,
        "brokers": [b.id for b in brokers],
        "rack_aware": options.rack_aware and any(b.rack for b in brokers),
        "topics": int(rows["topic"].nunique()),
    }
    return Plan(tuple(changed), summarize("kafka", changed, before, after, details), tuple(kept))


def local_kafka_plan(
    table: pa.Table, registered: Mapping[int, str | None], options: KafkaOptions
) -> Plan:
    """The same plan in one process (tests, and small clusters without a JVM)."""
    brokers = placement(registered, options)
    seed = options.seed if options.seed is not None else random.SystemRandom().getrandbits(63)
    arrays = ReplicaArrays.from_table(table)
    wanted = None if options.topics is None else set(options.topics)
    changed, kept = [], []
    bounds = arrays.offsets.tolist()
    for t, topic in enumerate(arrays.topics.tolist()):
        if wanted is not None and topic not in wanted:
            continue
        rows = np.flatnonzero(arrays.topic_of == t)
        first = rows[np.argmin(arrays.partition[rows])]
        rf = bounds[first + 1] - bounds[first]
        proposal = place_topic(brokers, topic, len(rows), rf, seed, options.start_index)
        for row in rows.tolist():
            p = int(arrays.partition[row])
            old = tuple(arrays.broker[bounds[row] : bounds[row + 1]].tolist())
            c = PartitionChange(topic, p, old, tuple(proposal[p]), int(arrays.size[row]))
            (changed if c.old != c.new else kept).append(c)
    balance = BalanceOptions(threshold=options.threshold)
    before = local_goal_values(arrays, registered, balance)
    after = local_goal_values(arrays, registered, balance, changed)
    details = {
        "engine": "local",
        "seed": seed,
        "brokers": [b.id for b in brokers],
        "rack_aware": options.rack_aware and any(b.rack for b in brokers),
        "topics": len({c.topic for c in (*changed, *kept)}),
    }
    return Plan(tuple(changed), summarize("kafka", changed, before, after, details), tuple(kept))
