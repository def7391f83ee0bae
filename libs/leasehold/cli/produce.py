"""``leasehold produce``: the console producer. One record per stdin line, or ``--value``."""

from __future__ import annotations

import asyncio
import json
import sys

import click

from leasehold.cli.context import CliFailure, ExitCode, obj, parse_kv
from leasehold.client.producer import Producer
from leasehold.errors import LeaseholdError


@click.command("produce")
@click.argument("topic")
@click.option("--value", default=None, help="Produce this one record instead of reading stdin.")
@click.option("--key", default=None, help="Key for every record.")
@click.option("--key-separator", default=None, help="Split each line into key<SEP>value.")
@click.option("--partition", type=int, default=None, help="Write to this partition only.")
@click.option("--header", "headers", multiple=True, help="Record header key=value.")
@click.option(
    "--acks",
    type=click.Choice(["0", "1", "all", "-1"]),
    default="all",
    show_default=True,
    help="Acknowledgement: none, the leader, or every in-sync replica.",
)
@click.option(
    "--linger-ms", type=int, default=5, show_default=True, help="Batching delay, milliseconds."
)
@click.option("--timeout", type=float, default=30.0, show_default=True, help="Delivery, seconds.")
def produce(topic, value, key, key_separator, partition, headers, acks, linger_ms, timeout) -> None:
    """Write records to TOPIC (from stdin lines unless --value is given)."""
    ctx = obj()
    if value is not None:
        lines = [value]
    else:
        lines = [line.rstrip("\n").rstrip("\r") for line in sys.stdin]
    records = []
    for line in lines:
        k = key
        if key_separator:
            k, sep, line = line.partition(key_separator)
            if not sep:
                raise CliFailure(ExitCode.USAGE, f"No key separator {key_separator!r} in {k!r}")
        records.append((k.encode() if k is not None else None, line.encode()))
    hdrs = [(k, v.encode()) for k, v in parse_kv(headers, "--header").items()]

    ctx.resolve()

    async def run() -> list:
        async with Producer(
            admin=ctx.admin_address,
            tls=ctx.tls,
            acks=acks,
            linger_ms=linger_ms,
            request_timeout_ms=int(min(timeout, 30.0) * 1000),
            delivery_timeout_ms=int(timeout * 1000),
        ) as producer:
            futures = [
                await producer.send(topic, v, key=k, partition=partition, headers=hdrs)
                for k, v in records
            ]
            await producer.flush()
            return [f.exception() or f.result() for f in futures]

    results = asyncio.run(run())
    failures = [r for r in results if isinstance(r, LeaseholdError)]
    for r in results:
        if ctx.json and not isinstance(r, Exception):
            click.echo(json.dumps({"topic": r.topic, "partition": r.partition, "offset": r.offset}))
    ctx.note(f"Produced {len(results) - len(failures)} record(s) to {topic}.")
    if failures:
        raise failures[0]


def register(group: click.Group) -> None:
    group.add_command(produce)
