"""``leasehold reassign``: kafka-reassign-partitions, with Kafka's flags, files and wording.

``--generate`` proposes a placement for the topics of a topics-to-move file over a broker list;
``--execute`` prints the current assignment (keep it for rollback) and starts the reassignment of
a reassignment file, optionally throttled; ``--verify`` shows progress until the reassignment is
done (then clears the throttles); ``--list`` shows what is moving; ``--cancel`` stops it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

import click

from leasehold import reassign_json, reassign_report
from leasehold.cli.context import CliFailure, ExitCode, obj, read_file
from leasehold.cli.render import code_name, outcome_dicts
from leasehold.client.admin import BROKER, TOPIC, SyncAdminClient
from leasehold.common.v1 import common_pb2
from leasehold.reassign_json import TopicPartition as Tp

_ACTIONS = ("generate", "execute", "verify", "list", "cancel")
_TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
_BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _as_json(assignment: Mapping[Tp, Sequence[int]]) -> dict:
    return json.loads(reassign_json.format_reassignment_json(assignment))


def current_replicas(admin: SyncAdminClient, topics: Sequence[str]) -> dict[Tp, list[int]]:
    described = admin.describe_topics(sorted(set(topics)))
    return {Tp(t.name, p.partition): list(p.replicas) for t in described for p in t.partitions}


def ongoing_of(admin: SyncAdminClient, parts=()) -> dict[Tp, reassign_report.OngoingReassignment]:
    return {
        Tp(o.topic, o.partition): reassign_report.OngoingReassignment(
            tuple(o.replicas), tuple(o.adding_replicas), tuple(o.removing_replicas)
        )
        for o in admin.list_partition_reassignments(parts)
    }


@click.command("reassign")
@click.option("--generate", is_flag=True, help="Propose a placement (needs the next two).")
@click.option("--execute", is_flag=True, help="Start the reassignment in the JSON file.")
@click.option("--verify", is_flag=True, help="Show progress of the file's reassignment.")
@click.option("--list", "list_", is_flag=True, help="List reassignments in progress.")
@click.option("--cancel", is_flag=True, help="Cancel the file's reassignment.")
@click.option("--topics-to-move-json-file", default=None, help='{"version":1,"topics":[...]}')
@click.option("--broker-list", default=None, help="Brokers to place onto: 1,2,3")
@click.option("--reassignment-json-file", default=None, help='{"version":1,"partitions":[...]}')
@click.option("--throttle", type=int, default=0, help="Replication throttle, bytes/s (--execute).")
@click.option("--additional", is_flag=True, help="Execute although reassignments are running.")
@click.option("--disable-rack-aware", is_flag=True, help="Ignore racks when generating.")
@click.option("--preserve-throttles", is_flag=True, help="Keep throttles after --verify.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="--verify: until done.")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="--verify: seconds.")
def reassign(generate, execute, verify, list_, cancel, topics_to_move_json_file, broker_list,
             reassignment_json_file, throttle, additional, disable_rack_aware,
             preserve_throttles, wait, timeout) -> None:  # fmt: skip
    """Move partition replicas between brokers (kafka-reassign-partitions)."""
    chosen = [
        a for a, on in zip(_ACTIONS, (generate, execute, verify, list_, cancel), strict=True) if on
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "Command must include exactly one action: --generate, --execute, --verify, --list "
            "or --cancel"
        )
    action = chosen[0]
    if action == "generate":
        if not topics_to_move_json_file or not broker_list:
            raise click.UsageError(
                "If --generate option is used, command must include both "
                "--topics-to-move-json-file and --broker-list options"
            )
        _generate(topics_to_move_json_file, broker_list, disable_rack_aware)
    elif action == "list":
        _list()
    else:
        if not reassignment_json_file:
            raise click.UsageError(f"--{action} needs --reassignment-json-file")
        text = read_file(reassignment_json_file)
        if action == "execute":
            if throttle < 0:
                raise click.BadParameter("must not be negative", param_hint="--throttle")
            _execute(text, throttle, additional)
        elif action == "verify":
            _verify(text, preserve_throttles, wait, timeout)
        else:
            _cancel(text)


def _generate(path: str, broker_list: str, disable_rack_aware: bool) -> None:
    ctx = obj()
    topics = reassign_json.parse_topics_to_move(read_file(path))
    brokers = reassign_json.parse_broker_list(broker_list)
    resp = ctx.admin().generate_reassignment(topics, brokers, disable_rack_aware=disable_rack_aware)
    current = {Tp(p.topic, p.partition): list(p.replicas) for p in resp.current}
    proposed = {Tp(p.topic, p.partition): list(p.replicas) for p in resp.proposed}
    ctx.emit(
        {"current": _as_json(current), "proposed": _as_json(proposed)},
        lambda: reassign_report.format_generate_output(current, proposed).rstrip("\n"),
    )


def _execute(text: str, throttle: int, additional: bool) -> None:
    ctx = obj()
    proposed = reassign_json.check_execute_targets(reassign_json.parse_reassignment(text))
    admin = ctx.admin()
    if not additional and ongoing_of(admin):
        raise CliFailure(ExitCode.FAILED, reassign_report.EXISTING_REASSIGNMENT_MESSAGE)
    live = [b.broker_id for b in admin.describe_cluster().brokers]
    reassign_json.check_brokers_exist(proposed, live)  # before printing, as Kafka does
    current = current_replicas(admin, [tp.topic for tp in proposed])
    ctx.echo(reassign_report.format_rollback_output(proposed, current) + "\n")
    resp = admin.alter_partition_reassignments(
        {(tp.topic, tp.partition): r for tp, r in proposed.items()},
        throttle_bytes_per_sec=throttle,
    )
    failed = {
        Tp(r.topic, r.partition): r.error_message or code_name(r.error_code)
        for r in resp.results
        if r.error_code != common_pb2.ERROR_CODE_NONE
    }
    data = {
        "request_id": resp.request_id,
        "rollback": _as_json({tp: current[tp] for tp in proposed if tp in current}),
        "results": outcome_dicts(resp.results),
        "throttle_bytes_per_sec": throttle,
    }
    if ctx.json:
        ctx.emit(data, lambda: None)
    if failed:
        raise CliFailure(ExitCode.FAILED, reassign_report.format_execute_errors(failed))
    if throttle > 0:
        ctx.echo(f"Warning: The inter-broker throttle limit was set to {throttle} B/s")
        ctx.echo(reassign_report.VERIFY_PERIODICALLY_MESSAGE)
    ctx.echo(reassign_report.format_execute_started(proposed))


def _states(admin: SyncAdminClient, targets: Mapping[Tp, Sequence[int]]):
    ongoing = ongoing_of(admin, [(tp.topic, tp.partition) for tp in targets])
    current = current_replicas(admin, [tp.topic for tp in targets])
    return reassign_report.reassignment_states(targets, current, ongoing)


def clear_throttles(admin: SyncAdminClient, topics: Sequence[str]) -> tuple[list[int], list[str]]:
    """Remove KIP-73 throttles from every broker and from ``topics``, as Kafka's --verify does."""
    brokers = [b.broker_id for b in admin.describe_cluster().brokers]
    for broker in brokers:
        admin.alter_configs((BROKER, str(broker)), [(k, "delete", "") for k in _BROKER_THROTTLES])
    names = sorted(set(topics))
    for topic in names:
        admin.alter_configs((TOPIC, topic), [(k, "delete", "") for k in _TOPIC_THROTTLES])
    return brokers, names


def _verify(text: str, preserve: bool, wait: bool, timeout: float) -> None:
    ctx = obj()
    targets = reassign_json.targets_of(reassign_json.parse_reassignment(text))
    if not targets:
        raise CliFailure(ExitCode.USAGE, "Partition reassignment list cannot be empty")
    admin = ctx.admin()
    deadline = time.monotonic() + timeout
    with ctx.progress("Reassigning partitions", len(targets)) as update:
        while True:
            states = _states(admin, targets)
            done = sum(1 for s in states.values() if s.done)
            update(done)
            if done == len(targets) or not wait or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
    finished = done == len(targets)
    mismatched = [
        tp for tp, s in states.items() if s.done and s.current_replicas != s.target_replicas
    ]
    data = {
        "partitions": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "done": s.done,
                "current_replicas": list(s.current_replicas),
                "target_replicas": list(s.target_replicas),
            }
            for tp, s in sorted(states.items())
        ],  # fmt: skip
        "completed": finished,
        "throttles_cleared": False,
    }
    ctx.echo(reassign_report.format_verify_status(states))
    if finished and not preserve:
        brokers, topics = clear_throttles(admin, [tp.topic for tp in targets])
        data["throttles_cleared"] = True
        ctx.echo(f"\nClearing broker-level throttles on brokers {','.join(map(str, brokers))}")
        ctx.echo(f"Clearing topic-level throttles on topic(s) {','.join(topics)}")
    if ctx.json:
        ctx.emit(data, lambda: None)
    if mismatched:
        raise CliFailure(ExitCode.FAILED)
    if not finished and wait:
        raise CliFailure(ExitCode.UNAVAILABLE, f"Reassignment still in progress after {timeout}s")


def _list() -> None:
    ctx = obj()
    ongoing = ongoing_of(ctx.admin())
    data = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(o.replicas),
         "adding": list(o.adding), "removing": list(o.removing)}
        for tp, o in sorted(ongoing.items())
    ]  # fmt: skip
    ctx.emit(data, lambda: reassign_report.format_current_reassignments(ongoing))


def _cancel(text: str) -> None:
    ctx = obj()
    targets = reassign_json.targets_of(reassign_json.parse_reassignment(text))
    admin = ctx.admin()
    active = ongoing_of(admin, [(tp.topic, tp.partition) for tp in targets])
    if not active:
        ctx.emit(
            {"cancelled": []}, lambda: "None of the specified partition reassignments are active."
        )
        return
    resp = admin.alter_partition_reassignments({(tp.topic, tp.partition): None for tp in active})
    names = ",".join(str(tp) for tp in sorted(active))
    ctx.emit(
        {"request_id": resp.request_id, "cancelled": [str(tp) for tp in sorted(active)]},
        lambda: f"Successfully cancelled partition reassignment(s) for: {names}",
    )


def register(group: click.Group) -> None:
    group.add_command(reassign)
