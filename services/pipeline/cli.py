"""``leasehold pipeline``: the Spark jobs from a terminal or ``spark-submit``.

``snapshot`` reads the cluster from etcd (no Spark); ``plan`` and ``analyze`` run on Spark
(``--master``, default ``local[*]`` or what spark-submit set). The main ``leasehold`` CLI mounts
this group through :func:`register`; ``python -m services.pipeline`` runs it on its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from leasehold.errors import LeaseholdError
from leasehold.reassign_json import parse_broker_list, parse_topics_to_move
from services.pipeline.goals import BalanceOptions
from services.pipeline.kafka_plan import KafkaOptions
from services.pipeline.offsets import OffsetSpecError
from services.pipeline.session import SparkSettings


def _ids(text: str | None) -> frozenset[int]:
    if not text:
        return frozenset()
    try:
        return frozenset(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"expected broker ids like 1,2,3, got {text!r}") from None


class PipelineGroup(click.Group):
    """Domain and input errors become one ``Error:`` line (exit 1), not a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LeaseholdError as e:
            raise click.ClickException(e.message) from e
        except (OffsetSpecError, FileNotFoundError) as e:
            raise click.ClickException(str(e)) from e


@click.group("pipeline", cls=PipelineGroup)
@click.option(
    "--master",
    envvar="LEASEHOLD_SPARK_MASTER",
    default=None,
    help="Spark master (default: spark-submit's, else local[*]).",
)
@click.option("--shuffle-partitions", type=int, default=None, help="spark.sql.shuffle.partitions")
@click.option("--driver-memory", default=None, help="spark.driver.memory, e.g. 4g (local runs).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Extra Spark config.")
@click.pass_context
def pipeline(ctx: click.Context, master, shuffle_partitions, driver_memory, confs) -> None:
    """Cluster snapshots, reassignment plans and state-change analytics on Spark."""
    conf = dict(c.split("=", 1) for c in confs if "=" in c)
    ctx.meta["pipeline.settings"] = SparkSettings(
        master, "leasehold-pipeline", shuffle_partitions, driver_memory, conf
    )


def _settings(ctx: click.Context) -> SparkSettings:
    return ctx.meta.get("pipeline.settings", SparkSettings())


@pipeline.command("snapshot")
@click.option(
    "--etcd",
    envvar="LEASEHOLD_ETCD",
    default="127.0.0.1:2379",
    show_default=True,
    help="etcd endpoints, comma separated (env LEASEHOLD_ETCD).",
)
@click.option(
    "--cluster-id",
    envvar="LEASEHOLD_CLUSTER_ID",
    default="leasehold",
    show_default=True,
    help="The cluster's etcd key prefix (env LEASEHOLD_CLUSTER_ID).",
)
@click.option(
    "--output",
    "output",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory for the Parquet tables and manifest.json.",
)
@click.option(
    "--sizes/--no-sizes",
    default=True,
    show_default=True,
    help="Ask partition leaders for log offsets and sizes.",
)
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Seconds per call.")
@click.option(
    "--rate-window",
    type=float,
    default=2.0,
    show_default=True,
    help="Seconds between the two readings of log end offsets that give produce rates (0: none).",
)
def snapshot(etcd, cluster_id, output, sizes, timeout, rate_window) -> None:
    """Read the whole cluster at one etcd revision and write Parquet tables."""
    from services.pipeline.snapshot_job import SnapshotConfig, run_snapshot

    endpoints = tuple(e.strip() for e in etcd.split(",") if e.strip())
    manifest = run_snapshot(
        SnapshotConfig(endpoints, cluster_id, output, sizes, timeout, rate_window_s=rate_window)
    )
    counts = manifest["counts"]
    click.echo(
        f"snapshot of {cluster_id} at revision {manifest['revision']}: "
        + ", ".join(f"{n} {name}" for name, n in counts.items())  # type: ignore[union-attr]
        + f" -> {output}"
    )
    problems = manifest["log_sizes"]["problems"]  # type: ignore[index]
    for problem in problems:
        click.echo(f"warning: log sizes unavailable: {problem}", err=True)


@pipeline.command("plan")
@click.option(
    "--snapshot",
    "snapshot_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A directory written by `leasehold pipeline snapshot`.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory for reassignment.json, rollback.json and summary.json.",
)
@click.option(
    "--mode",
    type=click.Choice(["balance", "kafka"]),
    default="balance",
    show_default=True,
    help="balance: even out the cluster; kafka: kafka-reassign-partitions --generate.",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="spark",
    show_default=True,
    help="local: numpy in one process, no JVM (small clusters).",
)
@click.option("--broker-list", default=None, help="kafka: brokers to place onto (1,2,3).")
@click.option("--topics", default=None, help="kafka: topics to move, comma separated.")
@click.option(
    "--topics-to-move-json-file",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help='kafka: {"version":1,"topics":[{"topic":"t"}]}',
)
@click.option("--disable-rack-aware", is_flag=True, help="kafka: ignore racks.")
@click.option("--seed", type=int, default=None, help="kafka: seed of the random start indexes.")
@click.option("--drain", default=None, help="balance: brokers to empty (1,2).")
@click.option("--exclude", default=None, help="balance: brokers that get no new replicas.")
@click.option(
    "--threshold",
    type=float,
    default=0.10,
    show_default=True,
    help="Allowed distance from the average replica/leader count (0.10 = 10%).",
)
@click.option(
    "--max-replicas-per-broker",
    type=int,
    default=None,
    help="balance: the most replicas one broker may hold.",
)
@click.option(
    "--topic-balance",
    type=float,
    default=3.0,
    show_default=True,
    help="A broker may hold this many times a topic's average (Cruise Control's 3.0).",
)
@click.pass_context
def plan(
    ctx,
    snapshot_dir,
    output,
    mode,
    engine,
    broker_list,
    topics,
    topics_to_move_json_file,
    disable_rack_aware,
    seed,
    drain,
    exclude,
    threshold,
    max_replicas_per_broker,
    topic_balance,
) -> None:
    """Compute a reassignment plan (Kafka's --generate, or a goal-based balance)."""
    from services.pipeline.plan_job import PlanConfig, format_summary, run_plan

    topic_list = None
    if topics_to_move_json_file is not None:
        topic_list = tuple(parse_topics_to_move(topics_to_move_json_file.read_text()))
    elif topics:
        topic_list = tuple(t.strip() for t in topics.split(",") if t.strip())
    brokers = tuple(parse_broker_list(broker_list)) if broker_list else None
    config = PlanConfig(
        snapshot=snapshot_dir,
        output=output,
        mode=mode,
        engine=engine,
        balance=BalanceOptions(
            threshold=threshold,
            max_replicas_per_broker=max_replicas_per_broker,
            drain=_ids(drain),
            exclude=_ids(exclude),
            topic_balance=topic_balance,
        ),
        kafka=KafkaOptions(
            broker_ids=brokers,
            topics=topic_list,
            rack_aware=not disable_rack_aware,
            seed=seed,
            threshold=threshold,
        ),
    )
    spark = None if engine == "local" else _spark_for(ctx)
    result, paths = run_plan(config, spark)
    click.echo(format_summary(result))
    click.echo(
        f"wrote {paths['reassignment']} (use with: leasehold reassign --execute "
        f"--reassignment-json-file {paths['reassignment']})"
    )


@pipeline.command("analyze")
@click.argument("logs", nargs=-1, required=True)
@click.option(
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory for report.html, summary.json and Parquet tables.",
)
@click.option(
    "--gap-seconds",
    type=float,
    default=60.0,
    show_default=True,
    help="Quiet time that separates two incidents.",
)
@click.option(
    "--snapshot",
    "snapshot_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Take replication factors from this snapshot.",
)
@click.pass_context
def analyze(ctx, logs, output, gap_seconds, snapshot_dir) -> None:
    """Analyze controller state-change logs (files or directories of *.log)."""
    from services.pipeline.analyze_job import AnalyzeConfig, expand_logs, run_analyze

    config = AnalyzeConfig(expand_logs(logs), output, int(gap_seconds * 1000), snapshot_dir)
    analysis, paths = run_analyze(_spark_for(ctx), config)
    click.echo(json.dumps(analysis.overall, indent=2, sort_keys=True))
    click.echo(f"report: {paths['report']}")


def _spark_for(ctx: click.Context):
    from services.pipeline.session import build_session

    return build_session(_settings(ctx))


def register(group: click.Group) -> None:
    """Mount ``pipeline`` under the main ``leasehold`` CLI (leasehold.cli.main)."""
    group.add_command(pipeline)
