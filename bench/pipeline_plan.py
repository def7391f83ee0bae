"""Balance plan on 1,000 brokers x 1,000,000 partitions: Spark vs a single process, same run.

``python -m bench.pipeline_plan`` (``--small`` / ``--quick``: 50 brokers x 20,000 partitions).
A synthetic cluster (skewed placement, 10 racks, rf 3, a few rack violations, 20 new empty
brokers, 2 brokers to drain) is written as a snapshot directory; then the plan job runs on it
three times: the single-process engine (numpy over Arrow: the baseline), the Spark engine on
``local[*]`` (or ``--master``) and the Spark engine submitted to a Spark standalone cluster this
benchmark starts on loopback (a master and ``--standalone-workers`` workers, separate JVMs from
the pyspark distribution; 0 skips it). All read the Parquet snapshot and must produce the same
plan; the table shows wall times (Spark's session start-up is reported apart) and the moves.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.framework import Column, Result, Row
from services.pipeline.goals import GOALS, BalanceOptions
from services.pipeline.plan_job import PlanConfig, compute_plan
from services.pipeline.synthetic import SyntheticSpec, write_synthetic_snapshot

FULL = SyntheticSpec(brokers=1000, racks=10, topics=2000, partitions=1_000_000, rf=3, skew=0.2,
                     new_brokers=20, rack_violations=0.002, seed=1)  # fmt: skip
SMALL = SyntheticSpec(brokers=50, racks=5, topics=100, partitions=20_000, rf=3, skew=0.2,
                      new_brokers=3, rack_violations=0.002, seed=1)  # fmt: skip
COLUMNS = (
    Column("wall_s", "wall s", ".1f"),
    Column("partitions_changed", "partitions changed"),
    Column("replica_moves", "replica moves"),
    Column("leader_moves", "leader moves"),
    Column("gib_to_move", "GiB to move", ".1f"),
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pipeline_plan", description=__doc__)
    p.add_argument("--small", "--quick", dest="small", action="store_true", help="small sizes")
    p.add_argument("--brokers", type=int)
    p.add_argument("--partitions", type=int)
    p.add_argument("--topics", type=int)
    p.add_argument("--drain", type=int, default=2, help="drain brokers 1..N")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--skip-spark", action="store_true", help="baseline only")
    p.add_argument("--standalone-workers", type=int, default=2, help="0: no standalone run")
    p.add_argument("--worker-cores", type=int, default=1)
    p.add_argument("--executor-memory", default="3g")
    return p.parse_args(list(argv) if argv is not None else [])


def spec_of(args: argparse.Namespace) -> SyntheticSpec:
    base = SMALL if args.small else FULL
    changes = {k: getattr(args, k) for k in ("brokers", "partitions", "topics") if getattr(args, k)}
    return SyntheticSpec(**{**base.__dict__, **changes})


def _row(label: str, plan, wall: float, note: str = "") -> Row:
    s = plan.summary
    values = {
        "wall_s": wall,
        "partitions_changed": s.partitions_changed,
        "replica_moves": s.replica_moves,
        "leader_moves": s.leader_moves,
        "gib_to_move": s.bytes_to_move / 2**30,
    }
    return Row(label, values, note)


def _spark_row(args: argparse.Namespace, config: PlanConfig, master: str | None):
    from services.pipeline.session import SparkSettings, build_session

    conf = {"spark.executor.memory": args.executor_memory}
    t0 = time.perf_counter()
    spark = build_session(SparkSettings(master=master, driver_memory=args.driver_memory, conf=conf))
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        plan = compute_plan(config, spark)
        wall = time.perf_counter() - t0
        label = f"spark {spark.sparkContext.master}"
    finally:
        spark.stop()
    return plan, _row(label, plan, wall, f"+{started:.1f}s session start")


def run(args: argparse.Namespace) -> list[Result]:
    spec = spec_of(args)
    options = BalanceOptions(drain=frozenset(range(1, args.drain + 1)))
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        snapshot = Path(tmp) / "snapshot"
        t0 = time.perf_counter()
        write_synthetic_snapshot(spec, snapshot)
        generated = time.perf_counter() - t0

        def config(engine: str) -> PlanConfig:
            return PlanConfig(snapshot, Path(tmp) / engine, "balance", engine, options)  # type: ignore[arg-type]

        t0 = time.perf_counter()
        local = compute_plan(config("local"))
        rows = [_row("single process (numpy)", local, time.perf_counter() - t0)]
        notes = [
            f"cluster: {spec.brokers} brokers in {spec.racks} racks, {spec.partitions:,} "
            f"partitions in {spec.topics} topics, rf {spec.rf}, {spec.new_brokers} new brokers, "
            f"draining {sorted(options.drain)} (generated and written in {generated:.1f}s)",
            "goals before -> after: "
            + ", ".join(
                f"{g} {local.summary.goals_before[g]} -> {local.summary.goals_after[g]}"
                for g in GOALS
            ),
        ]
        if not args.skip_spark:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            masters: list[str | None] = [args.master]
            standalone = None
            if args.standalone_workers > 0:
                from leasehold.testing.spark_standalone import StandaloneCluster, StandaloneSpec

                memory = f"{int(args.executor_memory.rstrip('g')) + 1}g"
                standalone = StandaloneCluster(
                    StandaloneSpec(args.standalone_workers, args.worker_cores, memory)
                ).start()
                os.environ.update(standalone.env())
                masters.append(standalone.master_url)
            try:
                for master in masters:
                    plan, row = _spark_row(args, config("spark"), master)
                    rows.append(row)
                    same = plan.changes == local.changes
                    notes.append(f"{row.label}: identical plan to numpy: {'yes' if same else 'NO'}")
                notes.append(f"candidates: {plan.summary.details.get('candidates'):,}")
                if standalone is not None:
                    notes.append(
                        f"standalone: {args.standalone_workers} workers x {args.worker_cores} "
                        f"core(s), executors {args.executor_memory}, on loopback"
                    )
            finally:
                if standalone is not None:
                    standalone.stop()
                    standalone.remove_workdir()
        notes.append(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return [
        Result(
            "plan --mode balance",
            COLUMNS,
            tuple(rows),
            baseline="single process (numpy)",
            ratio_of="wall_s",
            notes=tuple(notes),
        )
    ]


def main(argv: Sequence[str] | None = None) -> list[Result]:
    return run(parse_args(argv))


if __name__ == "__main__":
    from rich.console import Console

    from bench.report import result_table

    console = Console(width=max(120, Console().width))
    for result in main(sys.argv[1:]):
        console.print(result_table(result))
        for note in result.notes:
            console.print(f"  · {note}")
