"""When faults began: the best evidence in the state-change log, and windows dated by it.

A controller records a broker's loss when etcd tells it, which is one lease TTL after the
broker's last confirmed keep-alive; it records a failover when its campaign is won, one lease
TTL after the old controller's last keep-alive. Counting from those records hides the detection
delay, and it is the larger part of an outage. So every fault is dated by its best evidence
(the latest proof of life before it, never later than its detection), and the windows a fault
caused start there:

- **broker lost**: ``clean shutdown`` (a controlled shutdown preceded the lost registration:
  the broker left when the controller saw it go), else the later of ``last keep-alive`` (the
  lost registration's detection time minus its lease TTL) and ``registration`` (the lost
  incarnation registered after that), else ``detection`` (the record itself).
- **controller failover**: ``resignation`` (the previous controller's record of it), else the
  later of ``controller heartbeat`` (the previous epoch's last record, heartbeats included) and
  ``last keep-alive`` (the win minus the predecessor's lease TTL), else ``first election`` (no
  predecessor: nothing failed).
- **offline windows and under-replicated intervals** caused by a lost broker (the partition's
  leader, or a replica its ISR just lost, is that broker, and the window opened while the
  controller handled the loss) start where that loss starts; others start at the record
  (``detection``).

``detection_delay_ms`` is the detection minus the start: how long the cluster took to notice.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

CLEAN_SHUTDOWN = "clean shutdown"
KEEPALIVE = "last keep-alive"
REGISTRATION = "registration"
HEARTBEAT = "controller heartbeat"
RESIGNATION = "resignation"
FIRST_ELECTION = "first election"
DETECTION = "detection"


def _positive(col: str) -> Column:
    return F.when(F.col(col) > 0, F.col(col))


def _latest(candidates: list[tuple[Column, str]], fallback: tuple[Column, str]) -> list[Column]:
    """(start, evidence): the latest non-null candidate, else the fallback."""
    starts = [c for c, _ in candidates]
    best = F.greatest(*starts) if len(starts) > 1 else starts[0]
    evidence = F.lit(None).cast("string")
    for col, name in reversed(candidates):
        evidence = F.when(col.isNotNull() & (col == best), F.lit(name)).otherwise(evidence)
    start = F.coalesce(best, fallback[0])
    return [start, F.coalesce(evidence, F.lit(fallback[1]))]


def broker_losses(records: DataFrame) -> DataFrame:
    """One row per lost broker registration: broker_id, detected_ms, start_ms, start_evidence,
    lease_ttl_ms, end_ms (registered again; null while down)."""
    broker = records.where(
        (F.col("kind") == "broker")
        & F.col("event").isin("expired", "registered", "controlled_shutdown")
    )
    w = Window.partitionBy("broker_id").orderBy("ts_ms", "seq")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    event = F.col("event")

    def last_before(value: Column) -> Column:
        return F.last(value, ignorenulls=True).over(before)

    marked = (
        broker.withColumn(
            "last_shutdown", last_before(F.when(event == "controlled_shutdown", F.col("ts_ms")))
        )
        .withColumn("last_registered", last_before(F.when(event == "registered", F.col("ts_ms"))))
        .withColumn("prev_event", last_before(F.when(event != "controlled_shutdown", event)))
    )
    transitions = marked.where(F.col("event") != "controlled_shutdown").where(
        F.col("prev_event").isNull() | (F.col("prev_event") != F.col("event"))
    )
    w2 = Window.partitionBy("broker_id").orderBy("ts_ms", "seq")
    transitions = transitions.withColumn("next_ts", F.lead("ts_ms").over(w2)).withColumn(
        "next_registered_ms", F.lead("registered_ms").over(w2)
    )
    lost = transitions.where(F.col("event") == "expired")
    detected = F.coalesce(_positive("detected_ms"), F.col("ts_ms"))
    lost = lost.withColumn("detected", F.least(detected, F.col("ts_ms")))
    clean = F.col("last_shutdown").isNotNull() & (
        F.col("last_registered").isNull() | (F.col("last_shutdown") > F.col("last_registered"))
    )
    keepalive = F.when(F.col("lease_ttl_ms") > 0, F.col("detected") - F.col("lease_ttl_ms")).cast(
        "long"
    )
    registration = F.when(
        (F.col("registered_ms") > 0) & (F.col("registered_ms") <= F.col("detected")),
        F.col("registered_ms"),
    ).cast("long")
    start, evidence = _latest(
        [(keepalive, KEEPALIVE), (registration, REGISTRATION)], (F.col("detected"), DETECTION)
    )
    # The broker's own registration time says when it was back, if it is not later than the
    # controller's record of it.
    back = F.coalesce(
        F.when(
            (F.col("next_registered_ms") > 0) & (F.col("next_registered_ms") <= F.col("next_ts")),
            F.col("next_registered_ms"),
        ),
        F.col("next_ts"),
    )
    return lost.select(
        "broker_id",
        F.col("detected").alias("detected_ms"),
        F.when(clean, F.col("detected"))
        .otherwise(F.least(start, F.col("detected")))
        .alias("start_ms"),
        F.when(clean, F.lit(CLEAN_SHUTDOWN)).otherwise(evidence).alias("start_evidence"),
        F.when(F.col("lease_ttl_ms") > 0, F.col("lease_ttl_ms")).alias("lease_ttl_ms"),
        F.greatest(back, F.col("detected")).alias("end_ms"),
    )


def failover_evidence(records: DataFrame) -> DataFrame:
    """Per controller epoch that was won: controller_epoch, detected_ms (the win), start_ms,
    start_evidence (when the previous controller stopped, by the rules above)."""
    ctl = records.where(F.col("controller_epoch") >= 0)
    elected = ctl.where((F.col("kind") == "controller") & (F.col("event") == "elected"))
    elected = elected.groupBy("controller_epoch").agg(
        F.min(F.coalesce(_positive("detected_ms"), F.col("ts_ms"))).alias("won"),
        F.min("ts_ms").alias("elected_ts"),
        F.max("lease_ttl_ms").alias("ttl"),
    )
    won = F.least("won", "elected_ts")
    elected = elected.withColumn("won", won)
    per_epoch = ctl.groupBy(F.col("controller_epoch").alias("prev_epoch")).agg(
        F.max("ts_ms").alias("last_seen"),
        F.max(F.when(F.col("event") == "resigned", F.col("ts_ms"))).alias("resigned"),
    )
    epochs = per_epoch.select("prev_epoch")
    # The previous epoch: the largest one below, among those the logs show.
    below = epochs["prev_epoch"] < elected["controller_epoch"]
    prev = (
        elected.join(F.broadcast(epochs), below, "left")
        .groupBy("controller_epoch", "won", "ttl")
        .agg(F.max("prev_epoch").alias("prev_epoch"))
    )
    joined = prev.join(F.broadcast(per_epoch), "prev_epoch", "left")
    last_seen = F.when(F.col("last_seen") <= F.col("won"), F.col("last_seen"))
    keepalive = F.when(F.col("ttl") > 0, F.col("won") - F.col("ttl")).cast("long")
    start, evidence = _latest(
        [(last_seen, HEARTBEAT), (keepalive, KEEPALIVE)], (F.col("won"), FIRST_ELECTION)
    )
    resigned = F.col("resigned").isNotNull() & (F.col("resigned") <= F.col("won"))
    return joined.select(
        "controller_epoch",
        F.col("won").alias("detected_ms"),
        F.when(resigned, F.col("resigned"))
        .otherwise(F.least(start, F.col("won")))
        .alias("start_ms"),
        F.when(resigned, F.lit(RESIGNATION)).otherwise(evidence).alias("start_evidence"),
    )


def attribute(windows: DataFrame, losses: DataFrame, causes: Column, horizon_ms: int) -> DataFrame:
    """``windows`` (one per topic, partition and ``start_ms``, the record's time; ``causes``:
    broker ids the record points at) dated by the broker loss that caused them, if any: adds
    ``detected_ms``, ``start_evidence``, ``cause`` and moves ``start_ms`` to the loss's start.

    A loss caused a window when its broker is among the window's causes and the window opened
    while the controller was handling it: at or after its detection, within ``horizon_ms``, and
    before the broker came back.
    """
    # A window is one (topic, partition, start): a key that, unlike a generated id, is the same
    # in both branches of the plan below.
    key = ["topic", "partition", "start_ms"]
    keyed = windows.withColumn("_causes", causes)
    exploded = keyed.select(*key, F.explode("_causes").alias("broker_id"))
    lost = F.broadcast(
        losses.select(
            "broker_id",
            F.col("detected_ms").alias("_det"),
            F.col("start_ms").alias("_start"),
            F.col("start_evidence").alias("_evidence"),
            F.col("end_ms").alias("_end"),
        )
    )
    matched = exploded.join(lost, "broker_id").where(
        (F.col("start_ms") >= F.col("_det"))
        & (F.col("start_ms") <= F.col("_det") + horizon_ms)
        & (F.col("_end").isNull() | (F.col("start_ms") <= F.col("_end")))
    )
    # Of several losses that fit (a broker lost twice in a row), the latest detected.
    best = matched.groupBy(*key).agg(
        F.max_by(F.struct("_start", "_evidence", "broker_id"), F.col("_det")).alias("_m")
    )
    out = keyed.join(best, key, "left")
    found = F.col("_m").isNotNull()
    return out.select(
        *[c for c in windows.columns if c != "start_ms"],
        F.when(found, F.least(F.col("_m._start"), F.col("start_ms")))
        .otherwise(F.col("start_ms"))
        .alias("start_ms"),
        F.col("start_ms").alias("detected_ms"),
        F.when(found, F.col("_m._evidence")).otherwise(F.lit(DETECTION)).alias("start_evidence"),
        F.when(found, F.concat(F.lit("broker "), F.col("_m.broker_id").cast("string")))
        .otherwise(F.lit(""))
        .alias("cause"),
    )


def with_delays(df: DataFrame) -> DataFrame:
    """``detection_delay_ms`` and ``duration_ms`` from start, detection and end."""
    return df.withColumn("detection_delay_ms", F.col("detected_ms") - F.col("start_ms")).withColumn(
        "duration_ms", F.col("end_ms") - F.col("start_ms")
    )
