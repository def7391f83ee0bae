"""State-change log analytics as DataFrame -> DataFrame transforms: the windows themselves.

Input: the controllers' state-change logs (JSON lines of :class:`leasehold.statechange.
StateChangeRecord`; several files, one per controller, are simply unioned). Records are ordered
by ``ts_ms`` and, within a millisecond, by their position in the file (``seq``), which is the
order the controller wrote them. The words used here (offline, under-replicated, failover,
incident, detection delay) are defined for readers in :data:`services.pipeline.analyze_report.
DEFINITIONS`; :mod:`services.pipeline.analyze_faults` dates every window by the best evidence
of the fault behind it, and :mod:`services.pipeline.analyze_incidents` groups them.

Every table carries ``start_ms`` (the fault, by its best evidence), ``start_evidence``,
``detected_ms`` (the controller's record), ``detection_delay_ms``, ``end_ms`` and
``duration_ms = end_ms - start_ms``, computed once here: the incident summary and the overall
figures only add these columns up, so the tables agree.
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

from services.pipeline.analyze_faults import (
    DETECTION,
    attribute,
    broker_losses,
    failover_evidence,
    with_delays,
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
        StructField("detected_ms", LongType()),
        StructField("lease_ttl_ms", LongType()),
        StructField("registered_ms", LongType()),
    ]
)
OFFLINE, ONLINE, GONE = "OfflinePartition", "OnlinePartition", "NonExistentPartition"
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
        F.coalesce("isr", F.array().cast("array<int>")).alias("isr"),
        F.size(F.coalesce("isr", F.array().cast("array<int>"))).alias("isr_size"),
        F.coalesce("reason", F.lit("")).alias("reason"),
        F.coalesce("event", F.lit("")).alias("event"),
        F.coalesce("broker_id", F.lit(-1)).alias("broker_id"),
        F.coalesce("duration_ms", F.lit(-1.0)).alias("duration_ms"),
        F.coalesce("detected_ms", F.lit(-1)).alias("detected_ms"),
        F.coalesce("lease_ttl_ms", F.lit(-1)).alias("lease_ttl_ms"),
        F.coalesce("registered_ms", F.lit(-1)).alias("registered_ms"),
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
    """Open windows end, provisionally, where the log ends; then delays and durations."""
    closed = (
        windows.crossJoin(log_end(records))
        .withColumn("open", F.col("end_ms").isNull())
        .withColumn("end_ms", F.coalesce("end_ms", "log_end_ms"))
        .drop("log_end_ms")
    )
    return with_delays(closed)


def offline_windows(
    records: DataFrame, losses: DataFrame | None = None, horizon_ms: int = DEFAULT_GAP_MS
) -> DataFrame:
    """topic, partition, start_ms, start_evidence, cause, detected_ms, detection_delay_ms,
    end_ms, duration_ms, open, deleted, start_reason, end_reason.

    A move to Offline names the leader it lost: a broker loss of that broker dates the window.
    """
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
        F.when(F.col("leader") >= 0, F.array(F.col("leader"))).alias("lost_leader"),
    )
    windows = windows.withColumn("deleted", F.coalesce("deleted", F.lit(False)))
    windows = windows.where(F.col("start_reason") != "deletion")
    dated = _dated(windows, losses, F.col("lost_leader"), horizon_ms).drop("lost_leader")
    return _close(dated, records).select(*WINDOW_COLUMNS, "deleted", "start_reason", "end_reason")


WINDOW_COLUMNS = [
    "topic",
    "partition",
    "start_ms",
    "start_evidence",
    "cause",
    "detected_ms",
    "detection_delay_ms",
    "end_ms",
    "duration_ms",
    "open",
]


def _dated(
    windows: DataFrame, losses: DataFrame | None, causes: Column, horizon_ms: int
) -> DataFrame:
    """Windows dated by the broker loss behind them (``analyze_faults.attribute``), or by
    their own record when ``losses`` is None."""
    if losses is not None:
        return attribute(windows, losses, F.coalesce(causes, F.array()), horizon_ms)
    return (
        windows.withColumn("detected_ms", F.col("start_ms"))
        .withColumn("start_evidence", F.lit(DETECTION))
        .withColumn("cause", F.lit(""))
    )


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


def under_replicated(
    records: DataFrame,
    factors: DataFrame | None = None,
    losses: DataFrame | None = None,
    horizon_ms: int = DEFAULT_GAP_MS,
) -> DataFrame:
    """The WINDOW_COLUMNS plus rf and isr_at_start: ISR below rf.

    The brokers the ISR just lost (and a replica record's own broker) are the candidate causes.
    """
    factors = factors if factors is not None else replication_factors(records)
    state = records.where(
        F.col("kind").isin("partition", "replica")
        & (F.col("leader_epoch") >= 0)
        & (F.col("to_state") != GONE)
        & (F.col("reason") != "deletion")
    ).join(factors.select("topic", "partition", "rf"), ["topic", "partition"])
    state = state.withColumn(
        "category", F.when(F.col("isr_size") < F.col("rf"), "urp").otherwise("ok")
    ).withColumn("prev_isr", F.lag("isr").over(_partition_order()))
    removed = F.array_except(F.coalesce("prev_isr", F.array().cast("array<int>")), F.col("isr"))
    own = F.when(F.col("kind") == "replica", F.array(F.col("replica"))).otherwise(
        F.array().cast("array<int>")
    )
    state = state.withColumn("lost", F.array_union(removed, own))
    urp = _changes(state, "category").where(F.col("category") == "urp")
    intervals = urp.select(
        "topic",
        "partition",
        "rf",
        F.col("ts_ms").alias("start_ms"),
        "end_ms",
        F.col("isr_size").alias("isr_at_start"),
        "lost",
    )
    dated = _dated(intervals, losses, F.col("lost"), horizon_ms).drop("lost")
    return _close(dated, records).select(*WINDOW_COLUMNS, "rf", "isr_at_start")


def controller_failovers(records: DataFrame) -> DataFrame:
    """controller_id, controller_epoch, start_ms, start_evidence, detected_ms (the win),
    detection_delay_ms, elected_ms, done_ms, failover_ms, end_ms, duration_ms, completed.

    ``failover_ms`` is the failover's own duration (the ``failover_done`` record's, measured
    from the instant the ``elected`` record is stamped): from taking office to every broker
    told. ``duration_ms`` adds the detection delay: from the previous controller's end to done.
    """
    ctl = records.where(F.col("kind") == "controller")
    elected = ctl.where(F.col("event") == "elected").groupBy("controller_id", "controller_epoch")
    elected = elected.agg(F.min("ts_ms").alias("elected_ms"))
    done = ctl.where(F.col("event") == "failover_done").groupBy("controller_id", "controller_epoch")
    done = done.agg(F.min("ts_ms").alias("done_ms"), F.max("duration_ms").alias("reported_ms"))
    joined = elected.join(done, ["controller_id", "controller_epoch"], "full")
    measured = (F.col("done_ms") - F.col("elected_ms")).cast("double")
    failover = F.when(F.col("reported_ms") >= 0, F.col("reported_ms")).otherwise(measured)
    elected_ms = F.coalesce("elected_ms", (F.col("done_ms") - F.col("reported_ms")).cast("long"))
    base = joined.select(
        "controller_id",
        "controller_epoch",
        elected_ms.alias("elected_ms"),
        "done_ms",
        failover.alias("failover_ms"),
        F.col("done_ms").isNotNull().alias("completed"),
    )
    evidence = failover_evidence(records)
    out = base.join(evidence, "controller_epoch", "left")
    detected = F.least(F.coalesce("detected_ms", "elected_ms"), F.col("elected_ms"))
    out = out.withColumn("detected_ms", detected).withColumn(
        "start_ms", F.least(F.coalesce("start_ms", "detected_ms"), F.col("detected_ms"))
    )
    out = out.withColumn("start_evidence", F.coalesce("start_evidence", F.lit(DETECTION)))
    out = out.withColumn("end_ms", F.coalesce("done_ms", "elected_ms"))
    return with_delays(out).select(
        "controller_id",
        "controller_epoch",
        "start_ms",
        "start_evidence",
        "detected_ms",
        "detection_delay_ms",
        "elected_ms",
        "done_ms",
        "failover_ms",
        "end_ms",
        "duration_ms",
        "completed",
    )


def broker_downtime(records: DataFrame, losses: DataFrame | None = None) -> DataFrame:
    """broker_id, start_ms, start_evidence, detected_ms, detection_delay_ms, end_ms (registered
    again), duration_ms, open, lease_ttl_ms."""
    losses = losses if losses is not None else broker_losses(records)
    down = losses.select(
        "broker_id", "start_ms", "start_evidence", "detected_ms", "end_ms", "lease_ttl_ms"
    )
    return _close(down, records).select(
        "broker_id",
        "start_ms",
        "start_evidence",
        "detected_ms",
        "detection_delay_ms",
        "end_ms",
        "duration_ms",
        "open",
        "lease_ttl_ms",
    )
