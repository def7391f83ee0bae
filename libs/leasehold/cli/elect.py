"""``leasehold elect``: kafka-leader-election (KIP-460), preferred or unclean.

Partitions come from ``--all-topic-partitions``, ``--topic`` (with ``--partition``, or all of the
topic's partitions), or ``--path-to-json-file`` in Kafka's format
``{"partitions":[{"topic":"foo","partition":1}]}``. The command waits for the controller's
per-partition outcome and reports it the way Kafka's tool does.
"""

from __future__ import annotations

import json

import click

from leasehold.cli.context import CliFailure, ExitCode, obj, read_file
from leasehold.cli.render import code_name, outcome_dicts
from leasehold.common.v1 import common_pb2
from leasehold.validation import duplicates

_TYPES = {
    "PREFERRED": common_pb2.ELECTION_TYPE_PREFERRED,
    "UNCLEAN": common_pb2.ELECTION_TYPE_UNCLEAN,
}


def parse_election_json(text: str) -> list[tuple[str, int]]:
    """Kafka's election file; refuses bad shapes and duplicate partitions (exit code 2)."""
    try:
        root = json.loads(text)
    except ValueError as e:
        raise CliFailure(ExitCode.USAGE, f"Invalid JSON: {e}") from None
    if not isinstance(root, dict) or not isinstance(root.get("partitions"), list):
        raise CliFailure(ExitCode.USAGE, 'Expected an object with a "partitions" array')
    out = []
    for entry in root["partitions"]:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or type(partition) is not int:
            raise CliFailure(
                ExitCode.USAGE, f"Each partition needs a string topic and an int partition: {entry}"
            )
        out.append((topic, partition))
    repeated = duplicates(out)
    if repeated:
        shown = ",".join(f"{t}-{p}" for t, p in repeated)
        raise CliFailure(
            ExitCode.USAGE, f"Replica election data contains duplicate partitions: {shown}"
        )
    if not out:
        raise CliFailure(ExitCode.USAGE, "The election file names no partitions")
    return out


@click.command("elect")
@click.option("--preferred", "kind", flag_value="PREFERRED", help="Preferred-replica election.")
@click.option("--unclean", "kind", flag_value="UNCLEAN", help="Unclean election (data loss!).")
@click.option(
    "--election-type",
    type=click.Choice(list(_TYPES), case_sensitive=False),
    default=None,
    help="Kafka's spelling of --preferred/--unclean.",
)
@click.option("--all-topic-partitions", is_flag=True, help="Every partition of every topic.")
@click.option("--topic", default=None, help="One topic (all its partitions without --partition).")
@click.option("--partition", type=int, default=None, help="One partition of --topic.")
@click.option(
    "--path-to-json-file", default=None, help='{"partitions":[{"topic":..,"partition":..}]}'
)
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Seconds to wait.")
def elect(kind, election_type, all_topic_partitions, topic, partition, path_to_json_file,
          timeout) -> None:  # fmt: skip
    """Elect partition leaders (kafka-leader-election)."""
    chosen = (election_type or kind or "").upper()
    if chosen not in _TYPES:
        raise click.UsageError("choose --preferred or --unclean (or --election-type)")
    sources = sum([all_topic_partitions, topic is not None, path_to_json_file is not None])
    if sources != 1:
        raise click.UsageError(
            "give exactly one of --all-topic-partitions, --topic or --path-to-json-file"
        )
    if partition is not None and topic is None:
        raise click.UsageError("--partition needs --topic")
    ctx = obj()
    admin = ctx.admin()
    partitions: list[tuple[str, int]] = []
    if path_to_json_file is not None:
        partitions = parse_election_json(read_file(path_to_json_file))
    elif topic is not None and partition is not None:
        partitions = [(topic, partition)]
    elif topic is not None:
        (desc,) = admin.describe_topics([topic])
        partitions = [(topic, p.partition) for p in desc.partitions]
    with ctx.progress(f"Electing {chosen.lower()} leaders", None):
        resp = admin.elect_leaders(_TYPES[chosen], partitions, timeout_ms=int(timeout * 1000))
    _report(chosen, resp, timeout)


def _report(chosen: str, resp, timeout: float) -> None:
    ctx = obj()
    by_code: dict[int, list[str]] = {}
    for r in resp.results:
        by_code.setdefault(r.error_code, []).append(f"{r.topic}-{r.partition}")
    data = {
        "request_id": resp.request_id,
        "completed": resp.completed,
        "results": outcome_dicts(resp.results),
    }
    lines = []
    if resp.completed and common_pb2.ERROR_CODE_NONE in by_code:
        done = ", ".join(by_code[common_pb2.ERROR_CODE_NONE])
        lines.append(f"Successfully completed leader election ({chosen}) for partitions {done}")
    if common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED in by_code:
        lines.append(
            "Valid replica already elected for partitions "
            + ", ".join(by_code[common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED])
        )
    fine = (common_pb2.ERROR_CODE_NONE, common_pb2.ERROR_CODE_ELECTION_NOT_NEEDED)
    failures = [r for r in resp.results if r.error_code not in fine]
    if failures:
        lines.append(f"Error completing leader election ({chosen}) for partitions:")
        lines += [
            f"{r.topic}-{r.partition}: {r.error_message or code_name(r.error_code)}"
            for r in failures
        ]
    if resp.completed and not resp.results:
        lines.append("No partitions needed a leader election.")
    ctx.emit(data, lambda: "\n".join(lines))
    if not resp.completed:
        raise CliFailure(
            ExitCode.UNAVAILABLE,
            f"Election not finished after {timeout}s; request id {resp.request_id}",
        )
    if failures:
        raise CliFailure(ExitCode.FAILED)


def register(group: click.Group) -> None:
    group.add_command(elect)
