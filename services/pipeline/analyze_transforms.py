"""State-change log analytics as DataFrame -> DataFrame transforms.

Input: the controllers' state-change logs (JSON lines of :class:`leasehold.statechange.
StateChangeRecord`; several files, one per controller, are simply unioned). Records are ordered
by ``ts_ms`` and, within a millisecond, by their position in the file (``seq``), which is the
order the controller wrote them.

Definitions (also printed in the report):

- A partition is **offline** from a record that moves it to ``OfflinePartition``, or that
  carries its state with no leader (leader -1, leader epoch >= 0), until a record moves it to
  ``OnlinePartition`` with a leader (or deletes it: ``NonExistentPartition``). A window still
  open when the log ends is reported as open, with the log's end as its provisional end.
- A **leader election** is a move to ``OnlinePartition`` with a leader; ``reason`` names the
  selector (offline, unclean, preferred, reassigned, controlled_shutdown, new). ISR changes
  logged as Online -> Online (``isr_shrink`` / ``isr_expand``) are not elections.
- A partition is **under-replicated** while its ISR is smaller than its replication factor; the
  factor comes from the snapshot when given, else from the largest ISR / the distinct replicas
  the log shows for that partition.
- A **controller failover** runs from the ``elected`` record of an epoch to its
  ``failover_done`` record (whose ``duration_ms`` is used when set).
- An **incident** is a maximal group of impairments (offline windows, under-replicated
  intervals, broker down intervals, failovers, unclean elections) where each one starts within
  ``gap_ms`` (default 60 s) of the end of the ones before it: quiet gaps separate incidents.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

RECORD_SCHEMA = StructType(
    [
        StructField("ts_ms", LongType()),
        StructField("kind", StringType()),
        StructField("controller_id", IntegerType()),
        StructField("controller_epoch", IntegerType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("replica", IntegerType()),
        StructField("from_state", StringType()),
        StructField("to_state", StringType()),
        StructField("leader", IntegerType()),
        StructField("leader_epoch", IntegerType()),
        StructField("isr", ArrayType(IntegerType())),
        StructField("reason", StringType()),
        StructField("event", StringType()),
        StructField("broker_id", IntegerType()),
        StructField("duration_ms", DoubleType()),
        StructField("trace_id", StringType()),
    ]
)
OFFLINE, ONLINE, GONE = "OfflinePartition", "OnlinePartition", "NonExistentPartition"
INTERVAL_COLUMNS = ["kind", "topic", "partition", "broker_id", "start_ms", "end_ms", "detail"]
DEFAULT_GAP_MS = 60_000
NOT_ELECTIONS = ("isr_shrink", "isr_expand")  # Online -> Online records that elect nobody


def read_state_changes(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    return normalize(spark.read.schema(RECORD_SCHEMA).json(list(paths)))


def normalize(raw: DataFrame) -> DataFrame:
    """Defaults for missing fields (as the dataclass has them) and a per-file sequence number."""
    return raw.where(F.col("ts_ms").isNotNull()).select(
        "ts_ms",
        F.monotonically_increasing_id().alias("seq"),
        F.coalesce("kind", F.lit("")).alias("kind"),
        F.coalesce("controller_id", F.lit(-1)).alias("controller_id"),
        F.coalesce("controller_epoch", F.lit(-1)).alias("controller_epoch"),
        F.coalesce("topic", F.lit("")).alias("topic"),
        F.coalesce("partition", F.lit(-1)).alias("partition"),
        F.coalesce("replica", F.lit(-1)).alias("replica"),
        F.coalesce("from_state", F.lit("")).alias("from_state"),
        F.coalesce("to_state", F.lit("")).alias("to_state"),
        F.coalesce("leader", F.lit(-1)).alias("leader"),
        F.coalesce("leader_epoch", F.lit(-1)).alias("leader_epoch"),
        F.size(F.coalesce("isr", F.array().cast("array<int>"))).alias("isr_size"),
        F.coalesce("reason", F.lit("")).alias("reason"),
        F.coalesce("event", F.lit("")).alias("event"),
        F.coalesce("broker_id", F.lit(-1)).alias("broker_id"),
        F.coalesce("duration_ms", F.lit(-1.0)).alias("duration_ms"),
    )


def log_end(records: DataFrame) -> DataFrame:
    """One row, one column ``log_end_ms``: the last timestamp of the log."""
    return records.agg(F.max("ts_ms").alias("log_end_ms"))


def _partition_order() -> Window:
    return Window.partitionBy("topic", "partition").orderBy("ts_ms", "seq")


def _changes(rows: DataFrame, category: str) -> DataFrame:
    """Rows where ``category`` differs from the previous row's, with the next change's details."""
    w = _partition_order()
    changed = rows.withColumn("prev", F.lag(category).over(w)).where(
        F.col("prev").isNull() | (F.col("prev") != F.col(category))
    )
    return (
        changed.withColumn("end_ms", F.lead("ts_ms").over(w))
        .withColumn("end_category", F.lead(category).over(w))
        .withColumn("end_reason", F.lead("reason").over(w))
    )


def _close(windows: DataFrame, records: DataFrame) -> DataFrame:
    """Open windows end, provisionally, where the log ends."""
    return (
        windows.crossJoin(log_end(records))
        .withColumn("open", F.col("end_ms").isNull())
        .withColumn("end_ms", F.coalesce("end_ms", "log_end_ms"))
        .withColumn("duration_ms", F.col("end_ms") - F.col("start_ms"))
        .drop("log_end_ms")
    )


def offline_windows(records: DataFrame) -> DataFrame:
    """topic, partition, start_ms, end_ms, duration_ms, open, deleted, start_reason, end_reason."""
    is_partition = F.col("kind") == "partition"
    carries_state = F.col("kind").isin("partition", "replica") & (F.col("leader_epoch") >= 0)
    category: Column = (
        F.when(is_partition & (F.col("to_state") == OFFLINE), "down")
        .when(is_partition & (F.col("to_state") == GONE), "gone")
        .when(carries_state & (F.col("leader") < 0), "down")
        .when(is_partition & (F.col("to_state") == ONLINE) & (F.col("leader") >= 0), "up")
    )
    signals = records.where(F.col("topic") != "").withColumn("category", category)
    signals = signals.where(F.col("category").isNotNull())
    down = _changes(signals, "category").where(F.col("category") == "down")
    windows = down.select(
        "topic",
        "partition",
        F.col("ts_ms").alias("start_ms"),
        "end_ms",
        (F.col("end_category") == "gone").alias("deleted"),
        F.col("reason").alias("start_reason"),
        F.coalesce("end_reason", F.lit("")).alias("end_reason"),
    )
    windows = windows.withColumn("deleted", F.coalesce("deleted", F.lit(False)))
    return _close(windows, records).where(F.col("start_reason") != "deletion")


def elections(records: DataFrame) -> DataFrame:
    """ts_ms, topic, partition, leader, leader_epoch, reason, unclean."""
    return records.where(
        (F.col("kind") == "partition")
        & (F.col("to_state") == ONLINE)
        & (F.col("leader") >= 0)
        & ~F.col("reason").isin(*NOT_ELECTIONS)
    ).select(
        "ts_ms",
        "topic",
        "partition",
        "leader",
        "leader_epoch",
        F.when(F.col("reason") == "", "unknown").otherwise(F.col("reason")).alias("reason"),
        (F.col("reason") == "unclean").alias("unclean"),
    )


def replication_factors(records: DataFrame) -> DataFrame:
    """topic, partition, rf inferred from the log: the largest ISR or distinct replicas seen."""
    replica_ids = F.when(F.col("kind") == "replica", F.col("replica"))
    return (
        records.where(F.col("topic") != "")
        .groupBy("topic", "partition")
        .agg(F.max("isr_size").alias("max_isr"), F.countDistinct(replica_ids).alias("seen"))
        .select("topic", "partition", F.greatest("max_isr", "seen").alias("rf"))
    )


def under_replicated(records: DataFrame, factors: DataFrame | None = None) -> DataFrame:
    """topic, partition, rf, start_ms, end_ms, duration_ms, open, min_isr: ISR below rf."""
    factors = factors if factors is not None else replication_factors(records)
    state = records.where(
        F.col("kind").isin("partition", "replica")
        & (F.col("leader_epoch") >= 0)
        & (F.col("to_state") != GONE)
        & (F.col("reason") != "deletion")
    ).join(factors.select("topic", "partition", "rf"), ["topic", "partition"])
    state = state.withColumn(
        "category", F.when(F.col("isr_size") < F.col("rf"), "urp").otherwise("ok")
    )
    urp = _changes(state, "category").where(F.col("category") == "urp")
    intervals = urp.select(
        "topic",
        "partition",
        "rf",
        F.col("ts_ms").alias("start_ms"),
        "end_ms",
        F.col("isr_size").alias("isr_at_start"),
    )
    return _close(intervals, records)


def controller_failovers(records: DataFrame) -> DataFrame:
    """controller_id, controller_epoch, elected_ms, done_ms, duration_ms, completed."""
    ctl = records.where(F.col("kind") == "controller")
    elected = ctl.where(F.col("event") == "elected").groupBy("controller_id", "controller_epoch")
    elected = elected.agg(F.min("ts_ms").alias("elected_ms"))
    done = ctl.where(F.col("event") == "failover_done").groupBy("controller_id", "controller_epoch")
    done = done.agg(F.min("ts_ms").alias("done_ms"), F.max("duration_ms").alias("reported_ms"))
    joined = elected.join(done, ["controller_id", "controller_epoch"], "full")
    measured = F.col("done_ms") - F.col("elected_ms")
    return joined.select(
        "controller_id",
        "controller_epoch",
        F.coalesce("elected_ms", F.col("done_ms") - F.col("reported_ms").cast("long")).alias(
            "elected_ms"
        ),
        "done_ms",
        F.when(F.col("reported_ms") >= 0, F.col("reported_ms"))
        .otherwise(measured.cast("double"))
        .alias("duration_ms"),
        F.col("done_ms").isNotNull().alias("completed"),
    )


def broker_downtime(records: DataFrame) -> DataFrame:
    """broker_id, start_ms (expired), end_ms (registered again), duration_ms, open."""
    events = records.where(
        (F.col("kind") == "broker") & F.col("event").isin("expired", "registered")
    ).withColumn("category", F.col("event"))
    w = Window.partitionBy("broker_id").orderBy("ts_ms", "seq")
    changed = events.withColumn("prev", F.lag("category").over(w)).where(
        F.col("prev").isNull() | (F.col("prev") != F.col("category"))
    )
    changed = changed.withColumn("end_ms", F.lead("ts_ms").over(w))
    down = changed.where(F.col("category") == "expired").select(
        "broker_id", F.col("ts_ms").alias("start_ms"), "end_ms"
    )
    return _close(down, records)


def impairments(
    offline: DataFrame, urp: DataFrame, failovers: DataFrame, downs: DataFrame, elected: DataFrame
) -> DataFrame:
    """Every impairment as an interval: kind, topic, partition, broker_id, start/end, detail."""
    null_int, null_str = F.lit(None).cast("int"), F.lit(None).cast("string")
    parts = [
        offline.select(
            F.lit("offline").alias("kind"),
            "topic",
            "partition",
            null_int.alias("broker_id"),
            "start_ms",
            "end_ms",
            F.col("start_reason").alias("detail"),
        ),
        urp.select(
            F.lit("under_replicated").alias("kind"),
            "topic",
            "partition",
            null_int.alias("broker_id"),
            "start_ms",
            "end_ms",
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
            F.col("elected_ms").alias("start_ms"),
            F.coalesce("done_ms", "elected_ms").alias("end_ms"),
            F.concat(F.lit("epoch "), F.col("controller_epoch").cast("string")).alias("detail"),
        ),
        downs.select(
            F.lit("broker_down").alias("kind"),
            null_str.alias("topic"),
            null_int.alias("partition"),
            "broker_id",
            "start_ms",
            "end_ms",
            F.lit("lease expired").alias("detail"),
        ),
        elected.where(F.col("unclean")).select(
            F.lit("unclean_election").alias("kind"),
            "topic",
            "partition",
            F.col("leader").alias("broker_id"),
            F.col("ts_ms").alias("start_ms"),
            F.col("ts_ms").alias("end_ms"),
            F.lit("unclean").alias("detail"),
        ),
    ]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out.select(*INTERVAL_COLUMNS)


def assign_incidents(intervals: DataFrame, gap_ms: int = DEFAULT_GAP_MS) -> DataFrame:
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
    """Per incident: window, duration and what happened in it."""
    partition_ms = F.col("end_ms") - F.col("start_ms")

    def of(kind: str, value: Column) -> Column:
        return F.when(F.col("kind") == kind, value)

    base = assigned.groupBy("incident").agg(
        F.min("start_ms").alias("start_ms"),
        F.max("end_ms").alias("end_ms"),
        F.count(of("offline", F.lit(1))).alias("offline_windows"),
        F.countDistinct(of("offline", F.concat_ws("-", "topic", "partition"))).alias(
            "offline_partitions"
        ),
        F.coalesce(F.sum(of("offline", partition_ms)), F.lit(0)).alias("offline_partition_ms"),
        F.coalesce(F.max(of("offline", partition_ms)), F.lit(0)).alias("max_offline_ms"),
        F.coalesce(F.sum(of("under_replicated", partition_ms)), F.lit(0)).alias(
            "under_replicated_partition_ms"
        ),
        F.count(of("failover", F.lit(1))).alias("failovers"),
        F.coalesce(F.max(of("failover", partition_ms)), F.lit(0)).alias("max_failover_ms"),
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
