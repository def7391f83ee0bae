"""``leasehold cluster``: the active controller, its epoch, standbys and live brokers; and the
dynamic broker configs (per broker, or the cluster-wide default)."""

from __future__ import annotations

import click

from leasehold.cli.context import obj
from leasehold.cli.render import cluster_dict, cluster_table, config_dicts, configs_table
from leasehold.cli.topics import alter_ops, check_results, config_alter_options
from leasehold.client.admin import BROKER


@click.group("cluster")
def cluster() -> None:
    """Describe the cluster and change broker configs."""


@cluster.command("describe")
def describe() -> None:
    """The active controller (and epoch), standby controllers and live brokers."""
    ctx = obj()
    resp = ctx.admin().describe_cluster()
    ctx.emit(cluster_dict(resp), lambda: cluster_table(resp))


def _resource(broker: int | None) -> tuple[int, str]:
    return BROKER, "" if broker is None else str(broker)


@cluster.group("configs")
def configs() -> None:
    """Dynamic broker configs: --broker N for one broker, else the cluster-wide default."""


@configs.command("describe")
@click.option("--broker", type=int, default=None, help="Broker id (default: cluster default).")
@click.option("--all", "all_", is_flag=True, help="Also show keys at their defaults.")
def configs_describe(broker, all_) -> None:
    """Show the dynamic configs of a broker or the cluster default (--all: every key)."""
    ctx = obj()
    (result,) = ctx.admin().describe_configs([_resource(broker)])
    title = f"Configs for broker {broker}" if broker is not None else "Cluster-wide default configs"
    ctx.emit(config_dicts(result.entries), lambda: configs_table(title, result.entries, all_))


@configs.command("alter")
@click.option("--broker", type=int, default=None, help="Broker id (default: cluster default).")
@config_alter_options
def configs_alter(broker, set_, delete_, append, subtract, validate_only) -> None:
    """Change the dynamic configs of a broker or of the cluster default."""
    ctx = obj()
    ops = alter_ops(set_, delete_, append, subtract)
    resp = ctx.admin().alter_configs(_resource(broker), ops, validate_only=validate_only)
    check_results(resp.results)
    target = f"broker {broker}" if broker is not None else "the cluster default"
    data = {"broker": broker, "changes": [{"name": n, "op": o, "value": v} for n, o, v in ops]}
    ctx.emit(data, lambda: f"Updated configs for {target}.")


def register(group: click.Group) -> None:
    group.add_command(cluster)
