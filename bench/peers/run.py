"""``python -m bench --peer kafka [--quick]`` (``make bench-peer``): both systems, one run.

Runs the scenarios of :mod:`bench.peers.scenarios` on Leasehold, then on Apache Kafka, prints a
side-by-side table per scenario (with each system's detection settings, the changed Kafka
settings, load averages and versions) and writes ``<out>/peer-kafka.json``. A side that fails
part-way keeps the figures it took; the error is printed and recorded, and the exit status is 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.framework import RunContext, environment
from bench.peers import scenarios as S
from bench.peers.table import SideBySide, render

HEAP_NOTE = "each Kafka JVM -Xmx1G -Xms1G (kafka-server-start.sh's default) and its JVM flags"


@dataclass
class SideRun:
    """One system's figures by scenario, the load average as each began, and what it ran."""

    name: str
    figures: dict[str, dict[str, float]] = field(default_factory=dict)
    load: dict[str, float] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def record(self, scenario: str, values: dict[str, float]) -> None:
        self.figures[scenario] = values

    def loaded(self, scenario: str) -> None:
        self.load[scenario] = os.getloadavg()[0]


def versions() -> dict[str, str]:
    from importlib.metadata import version

    import confluent_kafka

    from bench.peers.kafka.install import dist

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
            return out.stdout.strip()
        except OSError:
            return ""

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    commit = git("rev-parse", "--short", "HEAD") or "?"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " with uncommitted changes"
    return {
        "leasehold": f"{version('leasehold')} ({commit})",
        "kafka": dist().version,
        "confluent-kafka": f"{version('confluent-kafka')} "
        f"(librdkafka {confluent_kafka.libversion()[0]})",
        "java": java.splitlines()[0] if java else "?",
        "python": sys.version.split()[0],
    }


def tables(ours: SideRun, theirs: SideRun, knobs: S.Knobs) -> list[SideBySide]:
    """One table per scenario either side measured."""
    n = knobs.partitions
    specs: list[tuple[str, str, tuple]] = [
        ("create_1", f"topic creation, 1 x {knobs.per_topic:,} partitions, one request",
         S.CREATION),
        ("create_10", f"topic creation, {knobs.topics} x {knobs.per_topic:,} partitions, "
         "one request", S.CREATION),
        ("produce", f"produce acks=all, min ISR {S.MIN_ISR}, {len(S.RECORD)}-byte records, "
         f"{S.PRODUCE_PARTITIONS} partitions (cluster of {n:,})", S.PRODUCE),
        ("controller_sigterm", f"active controller clean stop (SIGTERM), {n:,} partitions",
         S.FAILOVER),
        ("controller_sigkill", f"active controller SIGKILL, {n:,} partitions", S.FAILOVER),
        ("controlled_shutdown", f"controlled shutdown of a broker leading a third of {n:,}",
         S.SHUTDOWN),
        ("broker_sigkill", f"SIGKILL of a broker leading a third of {n:,}", S.BROKER_KILL),
        ("large_controller_sigkill", f"active controller SIGKILL, {S.LARGE_PARTITIONS:,} "
         "partitions (tmpfs logs)", S.FAILOVER),
        ("large_broker_sigkill", f"SIGKILL of a broker leading a third of "
         f"{S.LARGE_PARTITIONS:,} (tmpfs logs)", S.BROKER_KILL),
    ]  # fmt: skip
    out = []
    for key, title, figures in specs:
        a, b = ours.figures.get(key), theirs.figures.get(key)
        if a is None and b is None:
            continue
        load = {"Leasehold": ours.load.get(key, float("nan")),
                "Kafka": theirs.load.get(key, float("nan"))}  # fmt: skip
        out.append(SideBySide(title, figures, a or {}, b or {}, load, notes(key, a, b)))
    return out


def notes(key: str, ours: dict | None, theirs: dict | None) -> tuple[str, ...]:
    """What a reader must know to compare one table's rows."""
    out = []
    if key.startswith("create") and (theirs or {}).get("split"):
        out.append(
            'Kafka refused the single request (POLICY_VIOLATION "excessively large batch '
            'operation": over 10,000 metadata records in one controller operation, a constant, '
            "not a setting) and created nothing; its row is one request per topic, all sent at "
            "once"
        )
    if key == "produce":
        out.append(
            "both clients at their default batching (linger 5 ms; librdkafka batch.size 1 MB, "
            "Leasehold batch_size 1,000 records) with the same window of records outstanding; "
            "latency: one record sent and flushed at a time. Leasehold brokers flush (fsync) "
            "before answering acks=all (flush_on_replicate, its default); Kafka's default "
            "never fsyncs on produce (log.flush.interval.messages unset)"
        )
    if "controller" in key:
        out.append(
            "Leasehold: the old controller's election key deleted (etcd watch) = detection; "
            "every broker's own Metadata answer on the new controller epoch (polled 2 ms "
            "apart). Kafka: detection = the first surviving voter's Raft state change (its "
            "log); every broker's Raft client following the new quorum leader (each broker's "
            "log record, exact to the millisecond)"
        )
    if key.endswith("broker_sigkill"):
        out.append(
            "detection: Leasehold = the broker's registration key deleted (lease expiry, etcd "
            "watch); Kafka = the active controller's 'Fencing broker ... session has timed "
            "out' record. All led = each surviving broker's own Metadata answer (polled 50 ms "
            "apart) shows every partition led by a live broker"
        )
    call = (theirs or {}).get("observer_call_ms")
    if call is not None:
        out.append(
            f"the Kafka observer's median Metadata call (confluent-kafka, all topics) took "
            f"{call:,.0f} ms here: a Kafka 'every broker shows' instant is late by up to one call"
        )
    del ours
    return tuple(out)


def run_side(side: SideRun, body: Callable[[SideRun], Any], console: Console) -> None:
    console.print(f"[dim]{time.strftime('%H:%M:%S')} running the {side.name} side…[/dim]")
    try:
        result = body(side)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except Exception as e:
        side.error = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        console.print(f"[red]{side.name} side failed:[/red] {side.error}")


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds the clusters' context managers: every process stopped


def main(peer: str, quick: bool, out: Path) -> int:
    if peer != "kafka":
        raise SystemExit(f"unknown peer {peer!r}; known: kafka")
    from bench.peers.kafka.run import kafka_side
    from bench.peers.leasehold_run import leasehold_side

    signal.signal(signal.SIGTERM, _interrupt)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    ctx = RunContext(quick=quick)
    knobs = S.Knobs.of(ctx)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    ours, theirs = SideRun("Leasehold"), SideRun("Kafka")
    run_side(ours, lambda side: leasehold_side(side, knobs), console)
    run_side(theirs, lambda side: kafka_side(side, knobs), console)
    results = tables(ours, theirs, knobs)
    v = versions()
    console.rule(f"[bold]Leasehold vs Apache Kafka {v['kafka']}[/bold] — same machine, same run")
    console.print(" · ".join(f"{k} {val}" for k, val in v.items()), style="dim")
    for side in (ours, theirs):
        settings = ", ".join(f"{k} = {val}" for k, val in side.settings.items())
        console.print(f"{side.name} detection settings (defaults): {settings}")
        for note in side.notes:
            console.print(f"  · {note}", style="dim")
    for table in results:
        render(table, console)
    record = {
        "suite": "peer-kafka",
        "mode": "quick" if quick else "full",
        "started_at": started,
        "duration_s": round(time.perf_counter() - t0, 1),
        "environment": environment(),
        "versions": v,
        "sides": {
            s.name: {
                "settings": s.settings,
                "notes": s.notes,
                "error": s.error,
                "figures": s.figures,
                "load_average_1m": s.load,
            }
            for s in (ours, theirs)
        },  # fmt: skip
        "tables": [t.to_json() for t in results],
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "peer-kafka.json"
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    console.print(f"[dim]wrote {path}[/dim]")
    return 1 if ours.error or theirs.error else 0
