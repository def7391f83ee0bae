"""The plan job: snapshot in, Kafka reassignment JSON + rollback JSON + summary out.

What the planners see of a partition is its *effective* replicas: the assignment minus replicas
an in-flight reassignment is removing (KIP-455 keeps the union of old and new while it runs),
and topics queued for deletion are left out entirely, since moving them would be wasted work.

Engines: ``spark`` (the default; scales past one machine) and ``local`` (numpy in one process:
the benchmark's baseline and the choice for small clusters without a JVM). Both produce the
same plan for the same snapshot and options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from services.pipeline.balance_spark import spark_balance
from services.pipeline.goals import GOALS, BalanceOptions
from services.pipeline.kafka_plan import KafkaOptions, local_kafka_plan, spark_kafka_plan
from services.pipeline.plan_core import Plan, local_balance, options_dict
from services.pipeline.snapshot_job import load_manifest
from services.pipeline.snapshot_rows import registered_racks

Mode = Literal["kafka", "balance"]
Engine = Literal["spark", "local"]
PLAN_COLUMNS = ["topic", "partition", "replicas", "size_bytes", "bytes_in_per_s"]


@dataclass(frozen=True)
class PlanConfig:
    snapshot: Path
    output: Path
    mode: Mode = "balance"
    engine: Engine = "spark"
    balance: BalanceOptions = field(default_factory=BalanceOptions)
    kafka: KafkaOptions = field(default_factory=KafkaOptions)


def _effective(replicas: list[int], removing: list[int] | None) -> list[int]:
    gone = set(removing or ())
    return [b for b in replicas if b not in gone]


def load_partitions_local(snapshot: Path) -> pa.Table:
    """The partitions the planners may move, as an Arrow table (local engine)."""
    parts = pq.read_table(snapshot / "partitions.parquet")
    topics = pq.read_table(snapshot / "topics.parquet", columns=["topic", "marked_for_deletion"])
    deleting = topics.filter(pc.field("marked_for_deletion")).column("topic")
    parts = parts.filter(pc.invert(pc.is_in(parts.column("topic"), value_set=deleting)))
    removing = parts.column("removing_replicas").to_pylist()
    if any(removing):
        fixed = [
            _effective(r, g)
            for r, g in zip(parts.column("replicas").to_pylist(), removing, strict=True)
        ]
        index = parts.column_names.index("replicas")
        parts = parts.set_column(index, "replicas", pa.array(fixed, pa.list_(pa.int32())))
    if "bytes_in_per_s" not in parts.column_names:  # a snapshot taken without rates
        parts = parts.append_column("bytes_in_per_s", pa.nulls(parts.num_rows, pa.float64()))
    return parts.select(PLAN_COLUMNS)


def load_partitions_spark(spark: SparkSession, snapshot: Path) -> DataFrame:
    """The same, as a DataFrame read from the snapshot's Parquet."""
    parts = spark.read.parquet(str(snapshot / "partitions.parquet"))
    deleting = (
        spark.read.parquet(str(snapshot / "topics.parquet"))
        .where(F.col("marked_for_deletion"))
        .select("topic")
    )
    parts = parts.join(deleting, "topic", "left_anti")
    removing = F.coalesce(F.col("removing_replicas"), F.array().cast("array<int>"))
    effective = F.filter("replicas", lambda b: ~F.array_contains(removing, b))
    if "bytes_in_per_s" not in parts.columns:  # a snapshot taken without rates
        parts = parts.withColumn("bytes_in_per_s", F.lit(None).cast("double"))
    return parts.withColumn("replicas", effective).select(*PLAN_COLUMNS)


def compute_plan(config: PlanConfig, spark: SparkSession | None = None) -> Plan:
    manifest = load_manifest(config.snapshot)
    registered = registered_racks(pq.read_table(config.snapshot / "brokers.parquet"))
    if config.engine == "local":
        table = load_partitions_local(config.snapshot)
        if config.mode == "kafka":
            plan = local_kafka_plan(table, registered, config.kafka)
        else:
            plan = local_balance(table, registered, config.balance)
    else:
        if spark is None:
            raise ValueError("the spark engine needs a SparkSession")
        parts = load_partitions_spark(spark, config.snapshot)
        if config.mode == "kafka":
            plan = spark_kafka_plan(spark, parts, registered, config.kafka)
        else:
            plan = spark_balance(spark, parts, registered, config.balance)
    plan.summary.details.update(
        snapshot_revision=manifest["revision"],
        cluster_id=manifest["cluster_id"],
        sizes_measured=manifest.get("log_sizes", {}).get("measured", 0),  # type: ignore[union-attr]
    )
    if config.mode == "balance":
        plan.summary.details["options"] = options_dict(config.balance)
    return plan


def write_plan(plan: Plan, output: Path) -> dict[str, Path]:
    """reassignment.json (for --execute), rollback.json and summary.json."""
    output.mkdir(parents=True, exist_ok=True)
    paths = {
        "reassignment": output / "reassignment.json",
        "rollback": output / "rollback.json",
        "summary": output / "summary.json",
    }
    paths["reassignment"].write_text(plan.reassignment_json() + "\n")
    paths["rollback"].write_text(plan.rollback_json() + "\n")
    summary = json.dumps(plan.summary.to_dict(), indent=2, sort_keys=True, default=str)
    paths["summary"].write_text(summary + "\n")
    return paths


def format_summary(plan: Plan) -> str:
    """A few lines a person reads in a terminal."""
    s = plan.summary
    lines = [
        f"mode {s.mode}: {s.partitions_changed} partitions change, {s.replica_moves} replica "
        f"moves, {s.leader_moves} leader moves, {s.bytes_to_move} bytes to move",
        f"{'goal':<28}{'before':>10}{'after':>10}",
    ]
    lines += [f"{g:<28}{s.goals_before[g]:>10}{s.goals_after[g]:>10}" for g in GOALS]
    for k in ("replicas_min", "replicas_max", "leaders_min", "leaders_max"):
        lines.append(f"{k:<28}{s.goals_before[k]:>10}{s.goals_after[k]:>10}")
    return "\n".join(lines)


def run_plan(config: PlanConfig, spark: SparkSession | None = None) -> tuple[Plan, dict[str, Path]]:
    plan = compute_plan(config, spark)
    return plan, write_plan(plan, config.output)
