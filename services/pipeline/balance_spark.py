"""The balance plan on Spark: aggregations and candidate selection distributed, greedy on the
driver.

Only per-broker counters (one row per broker), the candidate replicas (a small multiple of the
cluster's surplus) and the topic cells of candidate topics ever reach the driver; the full
replica table (3M rows for 1M partitions at rf 3) stays in Spark. The candidate rules are the
ones :mod:`services.pipeline.candidates` implements in numpy, expressed as window ranks, so both
paths plan the same moves.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from services.pipeline.candidates import CandidateFrames
from services.pipeline.goals import (
    KEY_MODULUS,
    RESOURCES,
    BalanceOptions,
    BrokerUniverse,
    GoalValues,
    Targets,
    broker_goal_values,
    compute_targets,
    resource_goal_values,
    resource_quotas,
    surplus_quotas,
)
from services.pipeline.plan_core import Plan, run_greedy, summarize


def explode_replicas(partitions: DataFrame) -> DataFrame:
    """One row per replica: topic, partition, pos (0 = preferred leader), broker_id, rf, and
    what it weighs in each resource (columns named as ``goals.RESOURCES``)."""
    size = F.coalesce(F.col("size_bytes").cast("long"), F.lit(0).cast("long"))
    rate = (
        F.round(F.coalesce(F.col("bytes_in_per_s").cast("double"), F.lit(0.0))).cast("long")
        if "bytes_in_per_s" in partitions.columns
        else F.lit(0).cast("long")
    )
    rows = partitions.select(
        "topic",
        F.col("partition").cast("long").alias("partition"),
        F.size("replicas").alias("rf"),
        size.alias("_size"),
        rate.alias("_rate"),
        F.posexplode("replicas").alias("pos", "broker_id"),
    ).withColumn("broker_id", F.col("broker_id").cast("long"))
    lead = F.col("pos") == 0
    zero = F.lit(0).cast("long")
    weights = (
        F.col("_size"),
        F.col("_rate"),
        F.when(lead, F.col("_rate") * (F.col("rf") - 1)).otherwise(zero),
        F.when(lead, F.col("_rate")).otherwise(zero),
    )
    for name, w in zip(RESOURCES, weights, strict=True):
        rows = rows.withColumn(name, w)
    return rows.drop("_size", "_rate")


def replica_key(topic: Column, partition: Column, broker_id: Column) -> Column:
    """Spark SQL twin of :func:`services.pipeline.goals.mix_key`."""
    m = F.lit(KEY_MODULUS)
    k = F.pmod(
        F.crc32(topic.cast("binary")) + partition.cast("long") * 40503 + broker_id * 69069, m
    )
    k = F.pmod(k * 48271, m)
    return F.pmod(k * 48271, m)


def broker_counts(replicas: DataFrame) -> DataFrame:
    """Replicas, preferred leaders and resource loads per broker."""
    return replicas.groupBy("broker_id").agg(
        F.count(F.lit(1)).alias("replicas"),
        F.sum(F.when(F.col("pos") == 0, 1).otherwise(0)).alias("leaders"),
        *[F.sum(name).cast("long").alias(name) for name in RESOURCES],
    )


def topic_cells(replicas: DataFrame) -> DataFrame:
    """Replicas per (topic, broker) and the topic's total."""
    cells = replicas.groupBy("topic", "broker_id").agg(F.count(F.lit(1)).alias("count"))
    return cells.withColumn("total", F.sum("count").over(Window.partitionBy("topic")))


def _broker_table(
    spark: SparkSession, universe: BrokerUniverse, **columns: np.ndarray
) -> DataFrame:
    data = {"broker_id": universe.ids, "rack": universe.rack, "drained": universe.drained}
    return F.broadcast(spark.createDataFrame(pd.DataFrame({**data, **columns})))


def _over_cells(cells: DataFrame, brokers: DataFrame, targets: Targets) -> DataFrame:
    avg = F.col("total").cast("double") / F.lit(float(targets.eligible))
    gap = F.ceil(avg * F.lit(targets.topic_balance - 1.0))
    gap = F.least(F.greatest(gap, F.lit(targets.topic_min_gap)), F.lit(targets.topic_max_gap))
    cap = F.when(F.col("drained"), 0).otherwise(F.ceil(avg) + gap)
    return cells.join(brokers, "broker_id").withColumn("excess", F.col("count") - cap)


def _rack_excess(replicas: DataFrame, brokers: DataFrame, targets: Targets) -> DataFrame:
    per_rack = (
        replicas.join(brokers, "broker_id")
        .groupBy("topic", "partition", "rf", "rack")
        .agg(F.count(F.lit(1)).alias("n"))
    )
    return per_rack.withColumn("excess", F.col("n") - F.ceil(F.col("rf") / targets.rack_count))


def _ranked(rows: DataFrame, by: list[str]) -> DataFrame:
    order = Window.partitionBy(*by).orderBy("key", "topic", "partition")
    return rows.withColumn("rank", F.row_number().over(order) - 1)


def _goal_row(excess: DataFrame, goal: str) -> DataFrame:
    null = F.lit(None).cast("long")
    total = F.sum(F.greatest(F.col("excess"), F.lit(0))).alias("value")
    return excess.agg(total).select(
        F.lit(goal).alias("goal"),
        null.alias("broker_id"),
        null.alias("replicas"),
        null.alias("leaders"),
        *[null.alias(name) for name in RESOURCES],
        F.col("value").cast("long"),
    )


def spark_goal_values(
    spark: SparkSession, replicas: DataFrame, universe: BrokerUniverse, targets: Targets
) -> GoalValues:
    """Every goal of the assignment in ``replicas`` (exploded), in one Spark action."""
    brokers = _broker_table(spark, universe)
    per_broker = broker_counts(replicas).select(
        F.lit("broker").alias("goal"),
        "broker_id",
        "replicas",
        F.col("leaders").cast("long"),
        *RESOURCES,
        F.lit(None).cast("long").alias("value"),
    )
    rows = (
        per_broker.unionByName(_goal_row(_rack_excess(replicas, brokers, targets), "rack"))
        .unionByName(_goal_row(_over_cells(topic_cells(replicas), brokers, targets), "topic"))
        .toPandas()
    )
    counts = rows[rows["goal"] == "broker"].set_index("broker_id")
    counts = counts.reindex(universe.ids).fillna(0)
    g2, g3, g4, spread = broker_goal_values(
        universe,
        targets,
        counts["replicas"].to_numpy(np.int64),
        counts["leaders"].to_numpy(np.int64),
    )
    loads = np.stack([counts[name].to_numpy(np.int64) for name in RESOURCES])
    resources, load_spread = resource_goal_values(universe, targets, loads)
    value = rows.set_index("goal")["value"].fillna(0)
    return GoalValues(
        rack_awareness=int(value["rack"]),
        replica_capacity=g2,
        disk_usage=resources[0],
        network_inbound=resources[1],
        network_outbound=resources[2],
        leader_bytes_in=resources[3],
        replica_distribution=g3,
        leader_distribution=g4,
        topic_replica_distribution=int(value["topic"]),
        **spread,
        **load_spread,
    )


def _by_resource(on: DataFrame, name: str) -> DataFrame:
    """On each broker with a surplus of resource ``name``: its replicas, heaviest first, while
    the ones before add up to less than the broker's limit (``candidates`` in numpy)."""
    rows = on.where((F.col(name) > 0) & (F.col(f"limit_{name}") > 0))
    order = Window.partitionBy("broker_id").orderBy(F.desc(name), "key", "topic", "partition")
    before = F.sum(name).over(order.rowsBetween(Window.unboundedPreceding, -1))
    rows = rows.withColumn("_before", F.coalesce(before, F.lit(0)))
    return rows.where(F.col("_before") < F.col(f"limit_{name}")).select(
        "topic", "partition", "broker_id", "key"
    )


def with_keys(replicas: DataFrame) -> DataFrame:
    return replicas.withColumn(
        "key", replica_key(F.col("topic"), F.col("partition"), F.col("broker_id"))
    )


def spark_candidates(
    spark: SparkSession,
    partitions: DataFrame,
    replicas: DataFrame,
    registered: Mapping[int, str | None],
    options: BalanceOptions,
) -> tuple[CandidateFrames, BrokerUniverse, Targets]:
    """Candidate frames from ``partitions`` and its exploded, keyed ``replicas``."""
    counts = broker_counts(replicas).toPandas()
    universe = BrokerUniverse.build(registered, counts["broker_id"].tolist(), options)
    counts = counts.set_index("broker_id").reindex(universe.ids, fill_value=0)
    c, lead = counts["replicas"].to_numpy(np.int64), counts["leaders"].to_numpy(np.int64)
    loads = np.stack([counts[name].to_numpy(np.int64) for name in RESOURCES])
    targets = compute_targets(
        universe, int(c.sum()), int(lead.sum()), options, loads.sum(axis=1).tolist()
    )
    give, lgive = surplus_quotas(universe, targets, c, lead)
    rgive = resource_quotas(universe, targets, loads)
    f = options.choice_factor
    brokers = _broker_table(
        spark,
        universe,
        limit_replica=np.minimum(c, f * give),
        limit_leader=np.minimum(lead, f * lgive),
        **{f"limit_{name}": f * rgive[k] for k, name in enumerate(RESOURCES)},
    )
    on = replicas.join(brokers, "broker_id")
    cols = ["topic", "partition", "broker_id", "key"]
    by_replica = _ranked(on.where(F.col("limit_replica") > 0), ["broker_id"])
    by_replica = by_replica.where(F.col("rank") < F.col("limit_replica")).select(*cols)
    by_leader = _ranked(on.where((F.col("pos") == 0) & (F.col("limit_leader") > 0)), ["broker_id"])
    by_leader = by_leader.where(F.col("rank") < F.col("limit_leader")).select(*cols)
    bad_racks = _rack_excess(replicas, brokers, targets).where(F.col("excess") > 0)
    by_rack = (
        bad_racks.select("topic", "partition")
        .distinct()
        .join(replicas.where(F.col("pos") == 0), ["topic", "partition"])
        .select("topic", "partition", F.lit(-1).cast("long").alias("broker_id"), "key")
    )
    cells = topic_cells(replicas)
    over = _over_cells(cells, brokers, targets).where(F.col("excess") > 0)
    in_over = replicas.join(over.select("topic", "broker_id", "excess"), ["topic", "broker_id"])
    by_topic = _ranked(in_over, ["topic", "broker_id"])
    by_topic = by_topic.where(F.col("rank") < f * F.col("excess")).select(*cols)
    candidates = (
        by_replica.withColumn("kind", F.lit("replica"))
        .unionByName(by_leader.withColumn("kind", F.lit("leader")))
        .unionByName(by_rack.withColumn("kind", F.lit("rack")))
        .unionByName(by_topic.withColumn("kind", F.lit("topic")))
    )
    for name in RESOURCES:
        candidates = candidates.unionByName(_by_resource(on, name).withColumn("kind", F.lit(name)))
    candidates = candidates.select("kind", *cols).persist()
    cand_pdf = candidates.toPandas()
    keys = candidates.select("topic", "partition").distinct()
    cand_parts = partitions.withColumn("partition", F.col("partition").cast("long")).join(
        keys, ["topic", "partition"]
    )
    parts_pdf = cand_parts.select(
        "topic", "partition", "replicas", "size_bytes", "bytes_in_per_s"
    ).toPandas()
    topics = keys.select("topic").distinct()
    cells_pdf = cells.join(topics, "topic").toPandas()
    candidates.unpersist()
    frames = CandidateFrames(
        brokers=counts.reset_index().rename(columns={"index": "broker_id"}),
        partitions=parts_pdf,
        candidates=cand_pdf,
        cells=cells_pdf[["topic", "broker_id", "count"]],
        totals=cells_pdf[["topic", "total"]].drop_duplicates("topic"),
    )
    return frames, universe, targets


def with_changes(spark: SparkSession, partitions: DataFrame, changes: pd.DataFrame) -> DataFrame:
    """``partitions`` with the replicas of ``changes`` (topic, partition, new) swapped in."""
    if changes.empty:
        return partitions
    new = spark.createDataFrame(changes, "topic string, partition long, new array<int>")
    joined = partitions.withColumn("partition", F.col("partition").cast("long")).join(
        new, ["topic", "partition"], "left"
    )
    return joined.withColumn("replicas", F.coalesce("new", "replicas")).drop("new")


def spark_balance(
    spark: SparkSession,
    partitions: DataFrame,
    registered: Mapping[int, str | None],
    options: BalanceOptions,
) -> Plan:
    """The balance plan of ``partitions`` (topic, partition, replicas, size_bytes)."""
    if "bytes_in_per_s" not in partitions.columns:
        partitions = partitions.withColumn("bytes_in_per_s", F.lit(None).cast("double"))
    partitions = partitions.select(
        "topic", "partition", "replicas", "size_bytes", "bytes_in_per_s"
    ).persist()
    replicas = with_keys(explode_replicas(partitions)).persist()
    frames, universe, targets = spark_candidates(spark, partitions, replicas, registered, options)
    changes, details = run_greedy(frames, universe, targets, options)
    before = spark_goal_values(spark, replicas, universe, targets)
    replicas.unpersist()
    changed = pd.DataFrame(
        {
            "topic": [c.topic for c in changes],
            "partition": [c.partition for c in changes],
            "new": [list(c.new) for c in changes],
        }
    )
    after_partitions = with_changes(spark, partitions, changed)
    after = spark_goal_values(spark, explode_replicas(after_partitions), universe, targets)
    partitions.unpersist()
    details = {"engine": "spark", **details}
    return Plan(tuple(changes), summarize("balance", changes, before, after, details))
