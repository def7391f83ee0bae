"""``leasehold consume``: the console consumer (explicit partitions, no consumer groups)."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import click

from leasehold.cli.context import CliFailure, ExitCode, obj
from leasehold.client.consumer import Consumer, ConsumerRecord


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def record_json(r: ConsumerRecord) -> str:
    return json.dumps(
        {
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.offset,
            "timestamp_ms": r.timestamp_ms,
            "key": _text(r.key),
            "value": _text(r.value),
            "value_base64": base64.b64encode(r.value).decode() if r.value is not None else None,
            "headers": {k: _text(v) for k, v in r.headers},
        }
    )


def record_line(r: ConsumerRecord, print_key: bool, print_offset: bool) -> str:
    parts = []
    if print_offset:
        parts.append(f"{r.partition}:{r.offset}")
    if print_key:
        parts.append(_text(r.key) or "null")
    parts.append(_text(r.value) or "null")
    return "\t".join(parts)


@click.command("consume")
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--partition", "partitions", type=int, multiple=True, help="Only these partitions.")
@click.option("--offset", default=None, help="earliest, latest or a number (needs --partition).")
@click.option("--max-messages", type=int, default=None, help="Stop after this many records.")
@click.option("--timeout", type=float, default=None, help="Stop after this many idle seconds.")
@click.option("--print-key", is_flag=True, help="Print each record's key before its value.")
@click.option("--print-offset", is_flag=True, help="Print each record's partition and offset.")
def consume(topic, from_beginning, partitions, offset, max_messages, timeout, print_key,
            print_offset) -> None:  # fmt: skip
    """Read records from TOPIC and print one per line."""
    ctx = obj()
    if offset is not None and not partitions:
        raise click.UsageError("--offset needs --partition")
    if offset is not None and from_beginning:
        raise click.UsageError("--offset and --from-beginning exclude each other")
    start: str | int = "earliest" if from_beginning else "latest"
    if offset is not None:
        if offset in ("earliest", "latest"):
            start = offset
        elif offset.isdigit():
            start = int(offset)
        else:
            raise click.BadParameter(
                "earliest, latest or a non-negative number", param_hint="--offset"
            )

    seen = [0]  # shared with the coroutine, so Ctrl-C still reports the count

    ctx.resolve()

    async def run() -> None:
        async with Consumer(admin=ctx.admin_address, tls=ctx.tls) as consumer:
            if partitions:
                await consumer.assign([(topic, p) for p in partitions], start)
            else:
                await consumer.assign_topic(topic, start)
            idle_since = time.monotonic()
            while max_messages is None or seen[0] < max_messages:
                if timeout is not None and time.monotonic() - idle_since >= timeout:
                    break
                records = await consumer.poll(timeout_ms=500)
                if records:
                    idle_since = time.monotonic()
                for r in records[: None if max_messages is None else max_messages - seen[0]]:
                    seen[0] += 1
                    if ctx.json:
                        click.echo(record_json(r))
                    else:
                        click.echo(record_line(r, print_key, print_offset))

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    ctx.note(f"Processed a total of {seen[0]} messages")
    if max_messages is not None and seen[0] < max_messages:
        raise CliFailure(ExitCode.UNAVAILABLE, f"only {seen[0]} of {max_messages} messages in time")


def register(group: click.Group) -> None:
    group.add_command(consume)
