"""``leasehold consumer-groups``: kafka-consumer-groups for Leasehold.

``--list``, ``--describe`` (per partition: committed offset, log end offset and lag, and the
member owning it, with Kafka's column names), ``--reset-offsets`` (``--to-earliest``,
``--to-latest``, ``--to-datetime``, ``--shift-by``; ``--dry-run`` shows the plan, ``--execute``
commits it; only while the group has no members, as Kafka's tool) and ``--delete`` (empty groups
and their offsets). Log end offsets come from the partitions' leaders (``ListOffsets``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime

import click
from rich.table import Table

from leasehold.cli.context import CliContext, CliFailure, ExitCode, obj
from leasehold.client.consumer import EARLIEST, LATEST, Consumer
from leasehold.client.groups import TP, Committed, GroupClient
from leasehold.common.v1 import common_pb2 as c

DESCRIBE_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                    "CONSUMER-ID", "HOST", "CLIENT-ID")  # fmt: skip
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
MEMBERS_COLUMNS = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> Table:
    table = Table(box=None, pad_edge=False)
    for name in columns:
        table.add_column(name, no_wrap=True)
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    return table


def _topic_partitions(spec: str) -> tuple[str, list[int] | None]:
    """``topic`` or ``topic:0,1`` (Kafka's --topic syntax for --reset-offsets)."""
    topic, _, parts = spec.partition(":")
    if not parts:
        return topic, None
    try:
        return topic, [int(p) for p in parts.split(",")]
    except ValueError:
        raise click.BadParameter(f"{spec!r}: topic or topic:0,1,2", param_hint="--topic") from None


def _parse_datetime(text: str) -> int:
    """Kafka's --to-datetime format, ``YYYY-MM-DDTHH:mm:SS.sss`` (a zone suffix allowed; local
    time without one), as ms since the epoch."""
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise click.BadParameter(
            "YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone", param_hint="--to-datetime"
        ) from None


class Session:
    """The clients one command uses."""

    def __init__(self, ctx: CliContext) -> None:
        ctx.resolve()
        self.consumer = Consumer(admin=ctx.admin_address, tls=ctx.tls)
        self.groups = GroupClient(self.consumer.metadata, retry_timeout_ms=15_000)

    async def close(self) -> None:
        await self.consumer.close()

    async def ends(self, tps: Sequence[TP], code: int = LATEST) -> dict[TP, int]:
        for topic in {t for t, _ in tps}:
            await self.consumer.metadata.partitions(topic)
        return await self.consumer.offsets_for({tp: code for tp in tps})


async def describe_rows(s: Session, group_id: str) -> tuple[str, list[tuple]]:
    described = await s.groups.describe(group_id)
    if described.error_code == c.ERROR_CODE_GROUP_ID_NOT_FOUND:
        raise CliFailure(ExitCode.NOT_FOUND, f"Consumer group '{group_id}' does not exist.")
    committed = await s.groups.committed(group_id)
    owners: dict[TP, object] = {}
    for m in described.members:
        for t in m.assignment.topic_partitions:
            for p in t.partitions:
                owners[(t.topic, p)] = m
    tps = sorted(set(committed) | set(owners))
    ends = await s.ends(tps) if tps else {}
    rows = []
    for tp in tps:
        offset = committed.get(tp, Committed(-1)).offset
        end = ends.get(tp)
        lag = end - offset if end is not None and offset >= 0 else None
        m = owners.get(tp)
        rows.append((group_id, tp[0], tp[1], offset if offset >= 0 else None, end, lag,
                     m.member_id if m else None, m.client_host if m else None,
                     m.client_id if m else None))  # fmt: skip
    return described.group_state, rows


async def member_or_state_rows(s: Session, group_id: str, view: str) -> list[tuple]:
    """Kafka's ``--describe --members`` rows, or its one ``--describe --state`` row."""
    described = await s.groups.describe(group_id)
    if described.error_code == c.ERROR_CODE_GROUP_ID_NOT_FOUND:
        raise CliFailure(ExitCode.NOT_FOUND, f"Consumer group '{group_id}' does not exist.")
    if view == "members":
        return [(group_id, m.member_id, m.client_host, m.client_id,
                 sum(len(t.partitions) for t in m.assignment.topic_partitions))
                for m in described.members]  # fmt: skip
    address = s.groups.coordinator_address(group_id) or "-"
    return [(group_id, f"{address} ({described.coordinator_id})", described.assignor_name,
             described.group_state.capitalize(), len(described.members))]  # fmt: skip


async def reset_plan(
    s: Session, group_id: str, topics: Sequence[str], all_topics: bool, target: tuple[str, int]
) -> dict[TP, int]:
    committed = await s.groups.committed(group_id)
    tps: list[TP] = []
    if all_topics:
        tps = sorted(committed)
    for spec in topics:
        topic, parts = _topic_partitions(spec)
        count = await s.consumer.metadata.partitions(topic)
        tps += [(topic, p) for p in (parts if parts is not None else range(count))]
    if not tps:
        raise click.UsageError("--reset-offsets needs --topic or --all-topics")
    kind, value = target
    earliest = await s.ends(tps, EARLIEST)
    latest = await s.ends(tps, LATEST)
    if kind == "earliest":
        return earliest
    if kind == "latest":
        return latest
    if kind == "datetime":
        found = await s.ends(tps, value)
        return {tp: found[tp] if found.get(tp, -1) >= 0 else latest[tp] for tp in tps}
    plan = {}
    for tp in tps:  # shift-by: from the committed offset, kept within the log
        base = committed.get(tp, Committed(-1)).offset
        base = latest[tp] if base < 0 else base
        plan[tp] = min(max(base + value, earliest[tp]), latest[tp])
    return plan


@click.command("consumer-groups")
@click.option("--list", "list_", is_flag=True, help="List every consumer group.")
@click.option("--describe", is_flag=True, help="Offsets, lag and owners per partition.")
@click.option("--members", is_flag=True, help="With --describe: the members instead.")
@click.option("--state", is_flag=True, help="With --describe: the group's state instead.")
@click.option("--reset-offsets", is_flag=True, help="Move a group's committed offsets.")
@click.option("--delete", is_flag=True, help="Delete empty groups and their offsets.")
@click.option("--group", "groups", multiple=True, help="The group (repeat for several).")
@click.option("--topic", "topics", multiple=True, help="For --reset-offsets: topic[:p,p,...].")
@click.option("--all-topics", is_flag=True, help="For --reset-offsets: every committed topic.")
@click.option("--to-earliest", is_flag=True, help="Reset to each partition's log start.")
@click.option("--to-latest", is_flag=True, help="Reset to each partition's log end.")
@click.option("--to-datetime", default=None, help="YYYY-MM-DDTHH:mm:SS.sss")
@click.option("--shift-by", type=int, default=None, help="Move by N (negative: back).")
@click.option("--dry-run", is_flag=True, help="Show the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
def consumer_groups(list_, describe, members, state, reset_offsets, delete, groups, topics,
                    all_topics,
                    to_earliest, to_latest, to_datetime, shift_by, dry_run,
                    execute) -> None:  # fmt: skip
    """List, describe, reset the offsets of, and delete consumer groups."""
    actions = [list_, describe, reset_offsets, delete]
    if sum(actions) != 1:
        raise click.UsageError(
            "exactly one of --list, --describe, --reset-offsets, --delete is needed"
        )
    if not list_ and not groups:
        raise click.UsageError("--group is needed")
    if (members or state) and not describe or members and state:
        raise click.UsageError("--members or --state goes with --describe")
    view = "members" if members else "state" if state else "offsets"
    ctx = obj()
    target = None
    if reset_offsets:
        given = {
            "earliest": to_earliest,
            "latest": to_latest,
            "datetime": to_datetime is not None,
            "shift": shift_by is not None,
        }
        chosen = [k for k, v in given.items() if v]
        if len(chosen) != 1:
            raise click.UsageError(
                "one of --to-earliest, --to-latest, --to-datetime, --shift-by is needed"
            )
        if dry_run and execute:
            raise click.UsageError("--dry-run and --execute exclude each other")
        kind = chosen[0]
        value = _parse_datetime(to_datetime) if kind == "datetime" else (shift_by or 0)
        target = (kind, value)
    asyncio.run(
        _run(ctx, list_, describe and view, delete, groups, topics, all_topics, target, execute)
    )


async def _run(ctx, list_, describe, delete, groups, topics, all_topics, target, execute) -> None:
    s = Session(ctx)
    try:
        if list_:
            listed = await s.groups.list_groups()
            data = [{"group": x.group_id, "state": x.group_state} for x in listed]
            ctx.emit(data, lambda: "\n".join(x.group_id for x in listed))
        elif describe == "offsets":
            out, rows = [], []
            for group_id in groups:
                state, found = await describe_rows(s, group_id)
                out.append({"group": group_id, "state": state,
                            "partitions": [dict(zip(DESCRIBE_COLUMNS, r, strict=True))
                                           for r in found]})  # fmt: skip
                rows += found
                if not found and not ctx.json:
                    ctx.note(f"Consumer group '{group_id}' has no active members.")
            ctx.emit(out, lambda: _table(DESCRIBE_COLUMNS, rows))
        elif describe:
            columns = MEMBERS_COLUMNS if describe == "members" else STATE_COLUMNS
            rows = []
            for group_id in groups:
                rows += await member_or_state_rows(s, group_id, describe)
            ctx.emit(
                [dict(zip(columns, r, strict=True)) for r in rows], lambda: _table(columns, rows)
            )
        elif delete:
            for group_id in groups:
                await s.groups.delete(group_id)
            names = ", ".join(f"'{g}'" for g in groups)
            ctx.emit(
                {"deleted": list(groups)},
                lambda: f"Deletion of requested consumer groups ({names}) was successful.",
            )
        else:
            await _reset(ctx, s, groups, topics, all_topics, target, execute)
    finally:
        await s.close()


async def _reset(ctx, s: Session, groups, topics, all_topics, target, execute) -> None:
    rows, out = [], []
    for group_id in groups:
        described = await s.groups.describe(group_id)
        if described.error_code == c.ERROR_CODE_NONE and described.members:
            raise CliFailure(
                ExitCode.FAILED,
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                f"current state is {described.group_state.capitalize()}.",
            )
        plan = await reset_plan(s, group_id, topics, all_topics, target)
        if execute:
            await s.groups.commit(group_id, {tp: Committed(o) for tp, o in plan.items()})
        mine = [(group_id, t, p, o) for (t, p), o in sorted(plan.items())]
        rows += mine
        out += [dict(zip(RESET_COLUMNS, r, strict=True)) for r in mine]
    if not execute:
        ctx.note("Dry run: nothing was changed (--execute commits these offsets).")
    ctx.emit(out, lambda: _table(RESET_COLUMNS, rows))


def register(group: click.Group) -> None:
    group.add_command(consumer_groups)
