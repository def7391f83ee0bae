"""Impairments grouped into incidents, and what happened in each (DataFrame -> DataFrame).

Every impairment keeps the ``start_ms``, ``detected_ms``, ``end_ms`` and ``duration_ms`` its
source table computed (:mod:`services.pipeline.analyze_transforms`), and a failover keeps its
``failover_ms``: sums and maxima here are of those very columns, so an incident's figures are
the detail tables' figures.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

INTERVAL_COLUMNS = [
    "kind",
    "topic",
    "partition",
    "broker_id",
    "start_ms",
    "start_evidence",
    "detected_ms",
    "detection_delay_ms",
    "end_ms",
    "duration_ms",
    "failover_ms",
    "detail",
]


def impairments(
    offline: DataFrame, urp: DataFrame, failovers: DataFrame, downs: DataFrame, elected: DataFrame
) -> DataFrame:
    """Every impairment as an interval with the INTERVAL_COLUMNS."""
    null_int, null_str = F.lit(None).cast("int"), F.lit(None).cast("string")
    null_ms = F.lit(None).cast("double")
    timing = ["start_ms", "start_evidence", "detected_ms", "detection_delay_ms", "end_ms"]
    parts = [
        offline.select(
            F.lit("offline").alias("kind"),
            "topic",
            "partition",
            null_int.alias("broker_id"),
            *timing,
            "duration_ms",
            null_ms.alias("failover_ms"),
            F.col("start_reason").alias("detail"),
        ),
        urp.select(
            F.lit("under_replicated").alias("kind"),
            "topic",
            "partition",
            null_int.alias("broker_id"),
            *timing,
            "duration_ms",
            null_ms.alias("failover_ms"),
            F.concat(
                F.lit("isr "),
                F.col("isr_at_start").cast("string"),
                F.lit("/"),
                F.col("rf").cast("string"),
            ).alias("detail"),
        ),
        failovers.where(F.col("elected_ms").isNotNull()).select(
            F.lit("failover").alias("kind"),
            null_str.alias("topic"),
            null_int.alias("partition"),
            F.col("controller_id").alias("broker_id"),
            *timing,
            "duration_ms",
            "failover_ms",
            F.concat(F.lit("epoch "), F.col("controller_epoch").cast("string")).alias("detail"),
        ),
        downs.select(
            F.lit("broker_down").alias("kind"),
            null_str.alias("topic"),
            null_int.alias("partition"),
            "broker_id",
            *timing,
            "duration_ms",
            null_ms.alias("failover_ms"),
            F.lit("registration lost").alias("detail"),
        ),
        elected.where(F.col("unclean")).select(
            F.lit("unclean_election").alias("kind"),
            "topic",
            "partition",
            F.col("leader").alias("broker_id"),
            F.col("ts_ms").alias("start_ms"),
            F.lit("detection").alias("start_evidence"),
            F.col("ts_ms").alias("detected_ms"),
            F.lit(0).cast("long").alias("detection_delay_ms"),
            F.col("ts_ms").alias("end_ms"),
            F.lit(0).cast("long").alias("duration_ms"),
            null_ms.alias("failover_ms"),
            F.lit("unclean").alias("detail"),
        ),
    ]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out.select(*INTERVAL_COLUMNS)


def assign_incidents(intervals: DataFrame, gap_ms: int) -> DataFrame:
    """Add ``incident``: 1, 2, ... in time order; a new one starts after a quiet gap.

    The running maximum needs one global order, so this step runs in a single Spark partition
    (Spark warns about it); impairments are few (one row per window), so that is cheap.
    """
    w = Window.orderBy("start_ms", "end_ms", "kind")
    before = F.max("end_ms").over(w.rowsBetween(Window.unboundedPreceding, -1))
    fresh = (before.isNull() | (F.col("start_ms") > before + gap_ms)).cast("int")
    marked = intervals.withColumn("fresh", fresh)
    incident = F.sum("fresh").over(w.rowsBetween(Window.unboundedPreceding, 0))
    return marked.withColumn("incident", incident).drop("fresh")


def incident_summary(assigned: DataFrame, elected: DataFrame) -> DataFrame:
    """Per incident: window, duration, detection delay and what happened in it."""

    def of(kind: str, value: Column) -> Column:
        return F.when(F.col("kind") == kind, value)

    d = F.col("duration_ms")
    base = assigned.groupBy("incident").agg(
        F.min("start_ms").alias("start_ms"),
        F.max("end_ms").alias("end_ms"),
        F.min("detected_ms").alias("detected_ms"),
        F.coalesce(F.max("detection_delay_ms"), F.lit(0)).alias("max_detection_delay_ms"),
        F.count(of("offline", F.lit(1))).alias("offline_windows"),
        F.countDistinct(of("offline", F.concat_ws("-", "topic", "partition"))).alias(
            "offline_partitions"
        ),
        F.coalesce(F.sum(of("offline", d)), F.lit(0)).alias("offline_partition_ms"),
        F.coalesce(F.max(of("offline", d)), F.lit(0)).alias("max_offline_ms"),
        F.coalesce(F.sum(of("under_replicated", d)), F.lit(0)).alias(
            "under_replicated_partition_ms"
        ),
        F.count(of("failover", F.lit(1))).alias("failovers"),
        F.coalesce(F.max("failover_ms"), F.lit(0.0)).alias("max_failover_ms"),
        F.count(of("broker_down", F.lit(1))).alias("broker_downs"),
        F.count(of("unclean_election", F.lit(1))).alias("unclean_elections"),
    )
    windows = F.broadcast(base.select("incident", "start_ms", "end_ms"))
    in_window = elected.join(
        windows,
        (elected["ts_ms"] >= windows["start_ms"]) & (elected["ts_ms"] <= windows["end_ms"]),
    )
    counts = in_window.groupBy("incident").agg(F.count(F.lit(1)).alias("elections"))
    return (
        base.join(counts, "incident", "left")
        .withColumn("elections", F.coalesce("elections", F.lit(0)))
        .withColumn("duration_ms", F.col("end_ms") - F.col("start_ms"))
        .withColumn("detection_delay_ms", F.col("detected_ms") - F.col("start_ms"))
        .orderBy("incident")
    )


def elections_by_reason(elected: DataFrame, assigned: DataFrame | None = None) -> DataFrame:
    """reason, elections (overall); with ``assigned`` also per incident (0 = outside any)."""
    if assigned is None:
        return elected.groupBy("reason").agg(F.count(F.lit(1)).alias("elections")).orderBy("reason")
    windows = F.broadcast(
        assigned.groupBy("incident").agg(F.min("start_ms").alias("s"), F.max("end_ms").alias("e"))
    )
    joined = elected.join(
        windows, (elected["ts_ms"] >= windows["s"]) & (elected["ts_ms"] <= windows["e"]), "left"
    )
    return (
        joined.withColumn("incident", F.coalesce("incident", F.lit(0)))
        .groupBy("incident", "reason")
        .agg(F.count(F.lit(1)).alias("elections"))
        .orderBy("incident", "reason")
    )
