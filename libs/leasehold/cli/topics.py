"""``leasehold topics``: create, delete, describe, list, alter (partitions) and configs.

Creation and growth return as soon as the assignment is written and then, unless ``--no-wait``,
show a progress bar while the controller brings the partitions online (polling DescribeTopics).
Deletion waits for the controller's outcome with a spinner.
"""

from __future__ import annotations

import time

import click
from rich.console import Group

from leasehold.cli.context import (
    CliFailure,
    ExitCode,
    obj,
    parse_kv,
    parse_replica_assignment,
)
from leasehold.cli.render import (
    code_name,
    config_dicts,
    configs_table,
    ids,
    topic_dict,
    topic_table,
)
from leasehold.client.admin import TOPIC, SyncAdminClient
from leasehold.client.errors import error_from_code
from leasehold.common.v1 import common_pb2

_NONE = common_pb2.ERROR_CODE_NONE
_TIMED_OUT = common_pb2.ERROR_CODE_REQUEST_TIMED_OUT


def check_item(code: int, message: str) -> None:
    """A refused item of a per-item answer fails the command with the error model's exit code."""
    if code != _NONE:
        raise error_from_code(code, message or code_name(code))


def check_results(results) -> None:
    """Every result of an AlterConfigs answer (or any with error_code/error_message) is OK."""
    for r in results:
        check_item(r.error_code, r.error_message)


def wait_for_leaders(
    admin: SyncAdminClient, name: str, partitions: set[int], timeout: float
) -> int:
    """Poll until every partition in ``partitions`` has a leader; return how many still lack one."""
    ctx = obj()
    deadline = time.monotonic() + timeout
    with ctx.progress(f"Waiting for leaders of {name}", len(partitions)) as update:
        while True:
            (desc,) = admin.describe_topics([name])
            led = {p.partition for p in desc.partitions if p.leader >= 0} & partitions
            update(len(led))
            if len(led) == len(partitions) or time.monotonic() >= deadline:
                return len(partitions) - len(led)
            time.sleep(0.2)


@click.group("topics")
def topics() -> None:
    """Create, inspect, grow and delete topics (kafka-topics)."""


@topics.command("create")
@click.argument("name")
@click.option("--partitions", type=int, default=-1, help="Partition count (cluster default).")
@click.option("--replication-factor", type=int, default=-1, help="Replicas per partition.")
@click.option("--replica-assignment", default=None, help="Explicit: 1:2,2:3 (partition by ',').")
@click.option("--config", "configs", multiple=True, help="Topic config override key=value.")
@click.option("--validate-only", is_flag=True, help="Check and show the plan, write nothing.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for leaders.")
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait.")
def create(name, partitions, replication_factor, replica_assignment, configs, validate_only,
           wait, timeout) -> None:  # fmt: skip
    """Create topic NAME."""
    ctx = obj()
    assignment = parse_replica_assignment(replica_assignment) if replica_assignment else None
    admin = ctx.admin()
    result = admin.create_topic(
        name,
        partitions,
        replication_factor,
        assignment=assignment,
        configs=parse_kv(configs, "--config"),
        validate_only=validate_only,
    )
    check_item(result.error_code, result.error_message)
    missing = 0
    if wait and not validate_only:
        missing = wait_for_leaders(admin, name, set(range(result.num_partitions)), timeout)
    data = {
        "name": result.name,
        "topic_id": result.topic_id,
        "partitions": result.num_partitions,
        "replication_factor": result.replication_factor,
        "assignment": {str(a.partition): list(a.broker_ids) for a in result.assignments},
        "validate_only": validate_only,
        "partitions_without_leader": missing if wait and not validate_only else None,
    }
    if missing:  # written, but not serving: say so instead of "Created topic"
        if ctx.json:
            ctx.emit(data, lambda: None)
        raise CliFailure(
            ExitCode.UNAVAILABLE,
            f"Topic {name} ({result.topic_id}) was written, but {missing} of its "
            f"{result.num_partitions} partition(s) had no leader after {timeout}s; see "
            f"`leasehold topics describe {name}`.",
        )
    text = (
        f"Topic {name} would be created with {result.num_partitions} partitions and replication "
        f"factor {result.replication_factor}."
        if validate_only
        else f"Created topic {name} ({result.topic_id}) with {result.num_partitions} partitions "
        f"and replication factor {result.replication_factor}."
    )
    ctx.emit(data, lambda: text)


@topics.command("delete")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Wait for the controller's outcome."
)
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait.")
def delete(names, wait, timeout) -> None:
    """Delete topics NAMES (the controller removes their replicas)."""
    ctx = obj()
    timeout_ms = int(timeout * 1000) if wait else 0
    with ctx.progress(f"Deleting {', '.join(names)}", None):
        resp = ctx.admin().delete_topics(list(names), timeout_ms=timeout_ms)
    data = {
        "request_id": resp.request_id,
        "topics": [
            {
                "name": t.name,
                "topic_id": t.topic_id,
                "error": code_name(t.error_code),
                "message": t.error_message,
            }
            for t in resp.topics
        ],  # fmt: skip
    }
    done = "Deleted" if wait else "Marked for deletion:"
    ok = [t.name for t in resp.topics if t.error_code == _NONE]
    ctx.emit(data, lambda: f"{done} {', '.join(ok)} (request {resp.request_id})." if ok else None)
    for t in resp.topics:
        check_item(t.error_code, f"{t.name}: {t.error_message}")


@topics.command("describe")
@click.argument("names", nargs=-1)
def describe(names) -> None:
    """Describe topics NAMES (every topic when none is named)."""
    ctx = obj()
    described = ctx.admin().describe_topics(list(names))
    ctx.emit(
        [topic_dict(t) for t in described],
        lambda: _group_tables(described) if described else "No topics.",
    )


def _group_tables(described) -> Group:
    return Group(*(topic_table(t) for t in described))


@topics.command("list")
def list_() -> None:
    """List every topic."""
    ctx = obj()
    listed = ctx.admin().list_topics()
    data = [
        {"name": t.name, "topic_id": t.topic_id, "partitions": t.partition_count,
         "replication_factor": t.replication_factor, "marked_for_deletion": t.marked_for_deletion}
        for t in listed
    ]  # fmt: skip
    lines = [t.name + (" - marked for deletion" if t.marked_for_deletion else "") for t in listed]
    ctx.emit(data, lambda: "\n".join(lines) if lines else "No topics.")


@topics.command("alter")
@click.argument("name")
@click.option("--partitions", type=int, required=True, help="The new total partition count.")
@click.option("--replica-assignment", default=None, help="Replicas of the NEW partitions: 1:2,2:3")
@click.option("--validate-only", is_flag=True, help="Check and show the plan, write nothing.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for leaders.")
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait.")
def alter(name, partitions, replica_assignment, validate_only, wait, timeout) -> None:
    """Add partitions to topic NAME."""
    ctx = obj()
    admin = ctx.admin()
    added = parse_replica_assignment(replica_assignment) if replica_assignment else {}
    result = admin.create_partitions(
        name,
        partitions,
        assignments=[added[i] for i in sorted(added)],
        validate_only=validate_only,
    )
    check_item(result.error_code, result.error_message)
    new = {a.partition: list(a.broker_ids) for a in result.assignments}
    missing = 0
    if wait and not validate_only:
        missing = wait_for_leaders(admin, name, set(new), timeout)
    data = {"name": name, "added": {str(p): r for p, r in new.items()}, "partitions": partitions}
    lines = [f"Partition {p}: replicas {ids(r)}" for p, r in new.items()]
    head = "Would add" if validate_only else "Added"
    ctx.emit(data, lambda: "\n".join([f"{head} {len(new)} partition(s) to {name}.", *lines]))
    if missing:
        raise CliFailure(ExitCode.UNAVAILABLE, f"{missing} new partition(s) had no leader yet")


@topics.group("configs")
def configs() -> None:
    """Show or change a topic's config overrides."""


@configs.command("describe")
@click.argument("name")
@click.option("--all", "all_", is_flag=True, help="Also show keys at their defaults.")
def configs_describe(name, all_) -> None:
    """Show the config overrides of topic NAME (--all: every key)."""
    ctx = obj()
    (result,) = ctx.admin().describe_configs([(TOPIC, name)])
    ctx.emit(
        config_dicts(result.entries),
        lambda: configs_table(f"Configs for topic {name}", result.entries, all_),
    )


def alter_ops(set_, delete_, append, subtract) -> list[tuple[str, str, str]]:
    ops = [(k, "set", v) for k, v in parse_kv(set_, "--set").items()]
    ops += [(k, "delete", "") for k in delete_]
    ops += [(k, "append", v) for k, v in parse_kv(append, "--append").items()]
    ops += [(k, "subtract", v) for k, v in parse_kv(subtract, "--subtract").items()]
    if not ops:
        raise click.UsageError("give at least one of --set, --delete, --append, --subtract")
    return ops


def config_alter_options(f):
    f = click.option("--subtract", multiple=True, help="Remove list items: key=a,b")(f)
    f = click.option("--append", multiple=True, help="Add list items: key=a,b")(f)
    f = click.option("--delete", "delete_", multiple=True, help="Remove an override: key")(f)
    f = click.option("--set", "set_", multiple=True, help="Set an override: key=value")(f)
    return click.option("--validate-only", is_flag=True, help="Check the changes, apply none.")(f)


@configs.command("alter")
@click.argument("name")
@config_alter_options
def configs_alter(name, set_, delete_, append, subtract, validate_only) -> None:
    """Set, delete, append to or subtract from config overrides of topic NAME."""
    ctx = obj()
    ops = alter_ops(set_, delete_, append, subtract)
    resp = ctx.admin().alter_configs((TOPIC, name), ops, validate_only=validate_only)
    check_results(resp.results)
    data = {"topic": name, "changes": [{"name": n, "op": o, "value": v} for n, o, v in ops]}
    verb = "Validated" if validate_only else "Updated"
    ctx.emit(data, lambda: f"{verb} configs for topic {name}.")


def register(group: click.Group) -> None:
    group.add_command(topics)
