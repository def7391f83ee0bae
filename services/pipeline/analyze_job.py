"""The analyze job: state-change logs in; tables, a JSON summary and an HTML report out.

The transforms (:mod:`services.pipeline.analyze_transforms`) stay in Spark; only their results,
which are small (one row per window, failover or incident), are collected for the report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from services.pipeline import analyze_incidents as I
from services.pipeline import analyze_transforms as T
from services.pipeline.analyze_faults import broker_losses

TABLES = (
    "offline_windows",
    "under_replicated",
    "elections_by_reason",
    "elections_by_incident",
    "failovers",
    "broker_downtime",
    "incidents",
    "impairments",
)


@dataclass(frozen=True)
class AnalyzeConfig:
    logs: tuple[str, ...]
    output: Path
    gap_ms: int = T.DEFAULT_GAP_MS
    snapshot: Path | None = None  # replication factors from a snapshot, when given


@dataclass(frozen=True)
class Analysis:
    """Everything the report shows, as pandas frames, plus overall figures."""

    offline_windows: pd.DataFrame
    under_replicated: pd.DataFrame
    elections_by_reason: pd.DataFrame
    elections_by_incident: pd.DataFrame
    failovers: pd.DataFrame
    broker_downtime: pd.DataFrame
    incidents: pd.DataFrame
    impairments: pd.DataFrame
    overall: dict[str, object]
    gap_ms: int

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}


def _snapshot_factors(spark: SparkSession, snapshot: Path) -> DataFrame:
    parts = spark.read.parquet(str(snapshot / "partitions.parquet"))
    return parts.select("topic", "partition", F.size("replicas").alias("rf"))


def analyze(
    records: DataFrame, gap_ms: int = T.DEFAULT_GAP_MS, factors: DataFrame | None = None
) -> Analysis:
    """Run every transform over normalized records and collect the results."""
    records = records.persist()
    losses = broker_losses(records).persist()
    offline = T.offline_windows(records, losses, gap_ms).persist()
    urp = T.under_replicated(records, factors, losses, gap_ms).persist()
    elected = T.elections(records).persist()
    failovers = T.controller_failovers(records).persist()
    downs = T.broker_downtime(records, losses).persist()
    assigned = I.assign_incidents(
        I.impairments(offline, urp, failovers, downs, elected), gap_ms
    ).persist()
    frames = {
        "offline_windows": offline.orderBy("start_ms", "topic", "partition"),
        "under_replicated": urp.orderBy("start_ms", "topic", "partition"),
        "elections_by_reason": I.elections_by_reason(elected),
        "elections_by_incident": I.elections_by_reason(elected, assigned),
        "failovers": failovers.orderBy("controller_epoch"),
        "broker_downtime": downs.orderBy("start_ms", "broker_id"),
        "incidents": I.incident_summary(assigned, elected),
        "impairments": assigned.orderBy("start_ms", "kind"),
    }
    collected = {name: df.toPandas() for name, df in frames.items()}
    bounds = records.agg(
        F.min("ts_ms").alias("start"), F.max("ts_ms").alias("end"), F.count(F.lit(1)).alias("n")
    ).first()
    for df in (assigned, downs, failovers, elected, urp, offline, losses, records):
        df.unpersist()
    overall = overall_figures(collected, bounds["start"], bounds["end"], bounds["n"])
    return Analysis(**collected, overall=overall, gap_ms=gap_ms)


def _int(value: object) -> int:
    return 0 if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def overall_figures(
    t: dict[str, pd.DataFrame], start: int | None, end: int | None, records: int
) -> dict[str, object]:
    offline, urp, fo = t["offline_windows"], t["under_replicated"], t["failovers"]
    by_reason, downs = t["elections_by_reason"], t["broker_downtime"]
    done = fo[fo["completed"]] if len(fo) else fo
    # Failovers that followed a fault (not a cluster's first election) have a detection delay.
    faults = fo[fo["start_evidence"] != "first election"] if len(fo) else fo
    delays = [frame["detection_delay_ms"] for frame in (offline, urp, downs, faults) if len(frame)]
    return {
        "records": int(records),
        "log_start_ms": _int(start),
        "log_end_ms": _int(end),
        "incidents": len(t["incidents"]),
        "offline_windows": len(offline),
        "open_offline_windows": int(offline["open"].sum()) if len(offline) else 0,
        "offline_partitions": int(offline[["topic", "partition"]].drop_duplicates().shape[0]),
        "offline_partition_ms": _int(offline["duration_ms"].sum()) if len(offline) else 0,
        "max_offline_ms": _int(offline["duration_ms"].max()) if len(offline) else 0,
        "elections": _int(by_reason["elections"].sum()) if len(by_reason) else 0,
        "elections_by_reason": {
            str(r): int(n) for r, n in zip(by_reason["reason"], by_reason["elections"], strict=True)
        },
        "unclean_elections": _int(
            by_reason.loc[by_reason["reason"] == "unclean", "elections"].sum()
        ),
        "under_replicated_intervals": len(urp),
        "under_replicated_partition_ms": _int(urp["duration_ms"].sum()) if len(urp) else 0,
        "controller_failovers": len(fo),
        "max_failover_ms": float(done["failover_ms"].max()) if len(done) else 0.0,
        "mean_failover_ms": float(done["failover_ms"].mean()) if len(done) else 0.0,
        "max_controller_outage_ms": _int(faults["duration_ms"].max()) if len(faults) else 0,
        "broker_downs": len(downs),
        "broker_down_ms": _int(downs["duration_ms"].sum()) if len(downs) else 0,
        "max_detection_delay_ms": _int(max(float(d.max()) for d in delays)) if delays else 0,
    }


def write_analysis(analysis: Analysis, output: Path) -> dict[str, Path]:
    """Parquet per table, summary.json and report.html."""
    from services.pipeline.analyze_report import render_report

    output.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, df in analysis.tables().items():
        paths[name] = output / f"{name}.parquet"
        df.to_parquet(paths[name], index=False)
    paths["summary"] = output / "summary.json"
    paths["summary"].write_text(json.dumps(analysis.overall, indent=2, sort_keys=True) + "\n")
    paths["report"] = output / "report.html"
    paths["report"].write_text(render_report(analysis))
    return paths


def run_analyze(spark: SparkSession, config: AnalyzeConfig) -> tuple[Analysis, dict[str, Path]]:
    records = T.read_state_changes(spark, config.logs)
    factors = _snapshot_factors(spark, config.snapshot) if config.snapshot else None
    analysis = analyze(records, config.gap_ms, factors)
    return analysis, write_analysis(analysis, config.output)


def expand_logs(paths: Sequence[str]) -> tuple[str, ...]:
    """Files as given; directories contribute their ``*.log`` and ``*.jsonl`` files."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(str(f) for f in path.iterdir() if f.suffix in (".log", ".jsonl"))
        else:
            out.append(str(path))
    if not out:
        raise FileNotFoundError("no state-change log files found")
    return tuple(out)
