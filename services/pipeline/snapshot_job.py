"""The snapshot job: etcd at one revision + log sizes from the brokers -> Parquet + manifest.

The etcd read is one paged range over the cluster prefix at a single revision, so every table
describes the same instant. Log sizes are a best effort: each partition's leader is asked for
its earliest and latest offsets (ListOffsets) and for a sample of its first record batches
(Fetch, raw batches) to estimate bytes per offset. A broker that cannot be reached leaves its
partitions' sizes null and is named in the manifest; the snapshot is still written.

The tables are written with pyarrow (the read is single-client anyway); Spark jobs read them
with ``spark.read.parquet``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import pyarrow.parquet as pq

from leasehold.broker.v1 import broker_pb2
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import KV
from services.pipeline.broker_rpc import (
    EARLIEST,
    LATEST,
    NONE,
    BrokerClient,
    batch_bytes_per_offset,
)
from services.pipeline.snapshot_rows import (
    LogSize,
    SnapshotTables,
    leaders_of,
    tables_from_kvs,
    with_log_sizes,
    with_rates,
)

MANIFEST = "manifest.json"
FORMAT = "leasehold-snapshot"
CHUNK = 500  # partitions per ListOffsets / Fetch request


@dataclass(frozen=True)
class SnapshotConfig:
    etcd: tuple[str, ...]
    cluster_id: str
    output: Path
    measure_sizes: bool = True
    timeout: float = 5.0
    sample_bytes: int = 64 * 1024
    # Log end offsets are read again this long after the sizes: their growth is the produce
    # rate the balance plan's network goals use (0: no rates).
    rate_window_s: float = 2.0


async def read_cluster(client: EtcdClient, ks: Keyspace) -> tuple[list[KV], int]:
    """Every key of the cluster at one revision (the trailing slash keeps other clusters out)."""
    return await client.range_prefix(ks.root + b"/")


def _chunks(items: Sequence, size: int) -> list[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def measure_log_sizes(
    tables: SnapshotTables, timeout: float = 5.0, sample_bytes: int = 64 * 1024
) -> tuple[dict[tuple[str, int], LogSize], list[str]]:
    """Ask each partition's leader for its log offsets and a sample of its batches."""
    brokers = tables.brokers.to_pydict()
    address = {
        b: f"{h}:{p}"
        for b, h, p in zip(brokers["broker_id"], brokers["host"], brokers["port"], strict=True)
    }
    sizes: dict[tuple[str, int], LogSize] = {}
    problems: list[str] = []
    for leader, parts in sorted(leaders_of(tables).items()):
        if leader not in address:
            problems.append(f"leader {leader} of {len(parts)} partitions is not registered")
            continue
        try:
            with BrokerClient(address[leader], timeout) as client:
                for chunk in _chunks(parts, CHUNK):
                    sizes.update(_measure(client, chunk, sample_bytes))
        except grpc.RpcError as e:
            problems.append(f"broker {leader} at {address[leader]}: {e.code().name}")
    return sizes, problems


def _measure(
    client: BrokerClient, parts: Sequence[tuple[str, int]], sample_bytes: int
) -> dict[tuple[str, int], LogSize]:
    earliest = client.list_offsets(parts, EARLIEST)
    latest = client.list_offsets(parts, LATEST)
    known = {
        tp: (earliest[tp].offset, latest[tp].offset)
        for tp in parts
        if tp in earliest
        and tp in latest
        and earliest[tp].error_code == NONE
        and latest[tp].error_code == NONE
    }
    non_empty = {tp: start for tp, (start, end) in known.items() if end > start}
    samples = (
        client.fetch(
            non_empty,
            record_format=broker_pb2.RECORD_FORMAT_BATCHES,
            partition_max_bytes=sample_bytes,
        )
        if non_empty
        else {}
    )
    out = {}
    for tp, (start, end) in known.items():
        sample = samples.get(tp)
        per_offset = (
            batch_bytes_per_offset(sample.records)
            if sample is not None and sample.error_code == NONE
            else None
        )
        out[tp] = LogSize(start, end, per_offset)
    return out


def measure_rates(
    tables: SnapshotTables,
    sizes: dict[tuple[str, int], LogSize],
    since: float,
    timeout: float = 5.0,
) -> dict[tuple[str, int], float]:
    """Bytes in per second of each measured partition: its log end offset now, less the one in
    ``sizes`` (read at monotonic time ``since``), per second, times its bytes per offset."""
    brokers = tables.brokers.to_pydict()
    address = {
        b: f"{h}:{p}"
        for b, h, p in zip(brokers["broker_id"], brokers["host"], brokers["port"], strict=True)
    }
    rates: dict[tuple[str, int], float] = {}
    for leader, parts in sorted(leaders_of(tables).items()):
        parts = [tp for tp in parts if tp in sizes]
        if leader not in address or not parts:
            continue
        try:
            with BrokerClient(address[leader], timeout) as client:
                for chunk in _chunks(parts, CHUNK):
                    latest = client.list_offsets(chunk, LATEST)
                    elapsed = max(time.monotonic() - since, 1e-3)
                    for tp in chunk:
                        now, then = latest.get(tp), sizes[tp]
                        if now is None or now.error_code != NONE:
                            continue
                        grown = max(0, now.offset - then.log_end_offset)
                        per_offset = then.bytes_per_offset or 0.0
                        rates[tp] = grown * per_offset / elapsed
        except grpc.RpcError:
            continue  # the sizes pass already named this broker's problem
    return rates


def write_snapshot(
    tables: SnapshotTables, output: Path, log_sizes: dict[str, object], taken_at_ms: int
) -> dict[str, object]:
    """Write the four Parquet tables and the manifest; return the manifest."""
    output.mkdir(parents=True, exist_ok=True)
    for name, table in tables.tables().items():
        pq.write_table(table, output / f"{name}.parquet")
    manifest: dict[str, object] = {
        "format": FORMAT,
        "version": 1,
        "cluster_id": tables.cluster_id,
        "revision": tables.revision,
        "taken_at_ms": taken_at_ms,
        "controller_id": tables.controller_id,
        "controller_epoch": tables.controller_epoch,
        "counts": {name: table.num_rows for name, table in tables.tables().items()},
        "log_sizes": log_sizes,
    }
    (output / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def load_manifest(snapshot: Path) -> dict[str, object]:
    manifest = json.loads((snapshot / MANIFEST).read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{snapshot} is not a Leasehold snapshot (no {MANIFEST} of {FORMAT})")
    return manifest


async def _read(config: SnapshotConfig, ks: Keyspace) -> tuple[list[KV], int]:
    async with EtcdClient(list(config.etcd), timeout=config.timeout) as client:
        return await read_cluster(client, ks)


def run_snapshot(config: SnapshotConfig) -> dict[str, object]:
    """Read etcd, measure the logs, write the tables. Returns the manifest."""
    ks = Keyspace(config.cluster_id)
    kvs, revision = asyncio.run(_read(config, ks))
    taken_at_ms = int(time.time() * 1000)
    tables = tables_from_kvs(ks, kvs, revision)
    if config.measure_sizes:
        measured_at = time.monotonic()
        sizes, problems = measure_log_sizes(tables, config.timeout, config.sample_bytes)
        tables = with_log_sizes(tables, sizes)
        if config.rate_window_s > 0:
            time.sleep(max(0.0, measured_at + config.rate_window_s - time.monotonic()))
            tables = with_rates(tables, measure_rates(tables, sizes, measured_at, config.timeout))
        log_sizes: dict[str, object] = {
            "method": "ListOffsets earliest/latest; bytes estimated from a Fetch batch sample; "
            f"rates from the log end offsets {config.rate_window_s:g} s later",
            "measured": len(sizes),
            "unmeasured": tables.partitions.num_rows - len(sizes),
            "problems": problems,
        }
    else:
        log_sizes = {
            "method": "skipped",
            "measured": 0,
            "unmeasured": tables.partitions.num_rows,
            "problems": [],
        }
    return write_snapshot(tables, config.output, log_sizes, taken_at_ms)
