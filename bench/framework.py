"""The pieces every benchmark suite is built from.

- **Timing**: :func:`now_ns` (``perf_counter_ns``), :func:`percentile`, :class:`Load` and the
  closed-loop load generator :func:`closed_loop` (N workers, each issuing its next call as soon as
  the previous one returns; warm-up excluded from the figures).
- **Figures**: a :class:`Result` is one table of rows sharing columns, with one row named as the
  baseline measured in the same run and one column the ratio to it is computed on.
- **Suites**: anything with ``name``, ``description`` and ``async run(ctx) -> list[Result]``
  (:class:`Suite`); :class:`BenchSuite` is the ready-made frozen implementation.
- **Processes**: re-exports of ``leasehold.testing`` (real etcd, whole local clusters, free
  ports) and :func:`child_process`, which runs a function in a separate *spawned* process (so a
  server and its load generator never share one event loop or one GIL) and always stops it.

Nothing here asserts a timing target: suites report, readers judge.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol, TypeVar

from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.etcd_server import EtcdServer
from leasehold.testing.ports import free_port

__all__ = [
    "BenchSuite",
    "Child",
    "ClusterSpec",
    "Column",
    "EtcdServer",
    "Load",
    "LocalCluster",
    "Result",
    "Row",
    "RunContext",
    "Suite",
    "Timer",
    "child_process",
    "closed_loop",
    "environment",
    "filesystem_of",
    "free_port",
    "now_ns",
    "percentile",
    "wait_for_stop",
]

T = TypeVar("T")
NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000

now_ns = time.perf_counter_ns


# --- timing ---------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between ranks (numpy's default).

    Interpolating keeps p99 of a few hundred samples meaningful instead of snapping to the max.
    """
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, not {q}")
    ordered = sorted(samples)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True)
class Load:
    """What a load run did in its measured window.

    ``ops`` counts units of work (a 126-write transaction is 126 ops, one call); ``latencies_ns``
    has one entry per call that started inside the window.
    """

    ops: int
    elapsed_ns: int
    latencies_ns: tuple[int, ...]

    @property
    def calls(self) -> int:
        return len(self.latencies_ns)

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_ns / NS_PER_S

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.elapsed_s if self.elapsed_ns > 0 else 0.0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.elapsed_s if self.elapsed_ns > 0 else 0.0

    def latency_ms(self, q: float) -> float:
        return percentile(self.latencies_ns, q) / NS_PER_MS

    def figures(self, prefix: str = "") -> dict[str, float]:
        """The usual columns of a row: throughput and p50/p99 call latency."""
        return {
            f"{prefix}ops_per_s": self.ops_per_s,
            f"{prefix}calls_per_s": self.calls_per_s,
            f"{prefix}p50_ms": self.latency_ms(50),
            f"{prefix}p99_ms": self.latency_ms(99),
        }


async def closed_loop(
    op: Callable[[int], Awaitable[int]],
    *,
    concurrency: int,
    duration_s: float,
    warmup_s: float = 0.0,
    clock: Callable[[], int] = now_ns,
) -> Load:
    """Run ``concurrency`` workers calling ``op(worker_index)`` back to back; return the figures.

    ``op`` returns how many ops the call did. Calls starting during the warm-up are run but not
    counted; calls starting after ``warmup_s + duration_s`` are not made. The window ends when
    the last counted call returns, so in-flight work at the deadline is neither lost nor free.
    At least one call is counted: on a starved machine every call of a short window may start in
    the warm-up, and a window without a sample has no figures.
    ``clock`` (nanoseconds) is a parameter so the bookkeeping can be tested without real time.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    measure_from = clock() + int(warmup_s * NS_PER_S)
    stop_at = measure_from + int(duration_s * NS_PER_S)
    latencies: list[int] = []
    totals = {"ops": 0, "last_end": measure_from}

    async def worker(index: int) -> None:
        while (start := clock()) < stop_at or not latencies:
            done = await op(index)
            end = clock()
            if start >= measure_from:
                latencies.append(end - start)
                totals["ops"] += done
                totals["last_end"] = max(totals["last_end"], end)

    async with asyncio.TaskGroup() as tg:
        for i in range(concurrency):
            tg.create_task(worker(i))
    return Load(totals["ops"], totals["last_end"] - measure_from, tuple(latencies))


# --- figures --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One figure column: ``key`` into :attr:`Row.values`, a header, and a format spec.

    ``fmt`` is a format spec, or ``"auto"``: thousands separators and no decimals from 100 up,
    three significant digits below (so 0.59 reads/s does not print as 0).
    """

    key: str
    header: str
    fmt: str = "auto"

    def format(self, value: float) -> str:
        if self.fmt != "auto":
            return format(value, self.fmt)
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class Row:
    label: str
    values: Mapping[str, float]
    note: str = ""


@dataclass(frozen=True)
class Result:
    """One table of figures with its same-run baseline.

    ``baseline`` names the row the others are compared with; ``ratio_of`` names the column the
    ratio ``row / baseline`` is computed on (for throughputs >1 means faster than the baseline).
    """

    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    baseline: str
    ratio_of: str
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        labels = [r.label for r in self.rows]
        if len(set(labels)) != len(labels):
            raise ValueError(f"{self.title}: duplicate row labels")
        if self.baseline not in labels:
            raise ValueError(f"{self.title}: baseline row {self.baseline!r} is missing")
        if self.ratio_of not in {c.key for c in self.columns}:
            raise ValueError(f"{self.title}: ratio column {self.ratio_of!r} is not a column")

    def row(self, label: str) -> Row:
        return next(r for r in self.rows if r.label == label)

    def ratio(self, row: Row) -> float | None:
        """``row``'s figure divided by the baseline's; None when either is missing or zero."""
        base = self.row(self.baseline).values.get(self.ratio_of)
        value = row.values.get(self.ratio_of)
        if not base or value is None:
            return None
        return value / base

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "baseline": self.baseline,
            "ratio_of": self.ratio_of,
            "columns": [{"key": c.key, "header": c.header} for c in self.columns],
            "rows": [
                {
                    "label": r.label,
                    "values": dict(r.values),
                    "ratio_to_baseline": self.ratio(r),
                    "note": r.note,
                }
                for r in self.rows
            ],
            "notes": list(self.notes),
        }


# --- suites ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunContext:
    """What a suite is told about the run: ``quick`` means a smoke test finishing in seconds."""

    quick: bool = False

    def pick(self, full: T, quick: T) -> T:
        """The full-mode or quick-mode value of a knob (durations, key counts...)."""
        return quick if self.quick else full


class Suite(Protocol):
    name: str
    description: str

    async def run(self, ctx: RunContext) -> list[Result]: ...


@dataclass(frozen=True)
class BenchSuite:
    """A :class:`Suite` made of a name, a description and an ``async (ctx) -> results`` function.

    ``time_limit_s`` replaces the runner's default guard (see ``runner.TIME_LIMIT_S``) for a
    suite that legitimately needs longer, e.g. one that builds a 100,000-partition cluster.
    """

    name: str
    description: str
    body: Callable[[RunContext], Awaitable[list[Result]]]
    time_limit_s: float | None = None

    async def run(self, ctx: RunContext) -> list[Result]:
        return await self.body(ctx)


# --- processes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Child:
    """A running child process: its pid (to signal it), what it sent when ready, and our end
    of its pipe (for a child that takes work after it is ready; "stop" still ends it)."""

    pid: int
    ready: Any
    conn: Connection | None = None


@contextmanager
def child_process(
    target: Callable[[Connection], None], *, name: str, ready_timeout: float = 60.0
) -> Iterator[Child]:
    """Run ``target(conn)`` in a spawned process; yield it once it has sent its "ready" object.

    ``target`` must be a module-level function. It sends one "ready" object (a port, say), then
    serves until :func:`wait_for_stop` returns: on our "stop", or when our end of the pipe closes
    because this process died. On exit we ask it to stop, then terminate, then kill, by its pid.
    """
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=target, args=(theirs,), name=name, daemon=True)
    proc.start()
    theirs.close()
    try:
        if not ours.poll(ready_timeout):
            raise RuntimeError(f"{name} did not report ready within {ready_timeout}s")
        try:
            ready = ours.recv()
        except EOFError:
            proc.join(5)
            raise RuntimeError(
                f"{name} exited (code {proc.exitcode}) before it was ready"
            ) from None
        assert proc.pid is not None
        yield Child(proc.pid, ready, ours)
    finally:
        try:
            ours.send("stop")
        except OSError:  # already gone
            pass
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        ours.close()


def wait_for_stop(conn: Connection) -> None:
    """Block (in a child) until the parent says stop or goes away."""
    try:
        conn.recv()
    except (EOFError, OSError):
        pass


# --- environment ----------------------------------------------------------------------------------


def filesystem_of(path: str) -> str:
    """The filesystem type ``path`` lives on (fsync cost, and so etcd's, depends on it)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1]
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best):
            best, kind = mount, parts[2]
    return kind


def environment() -> dict[str, Any]:
    """Where the figures come from; the load average matters on a shared machine."""
    import grpc

    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_1m": os.getloadavg()[0],
        "grpc": grpc.__version__,
    }


@dataclass
class Timer:
    """Wall time of a block in nanoseconds: ``with Timer() as t: ...; t.elapsed_s``."""

    start_ns: int = 0
    end_ns: int = 0
    _running: bool = field(default=False, repr=False)

    def __enter__(self) -> Timer:
        self.start_ns, self._running = now_ns(), True
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_ns, self._running = now_ns(), False

    @property
    def elapsed_s(self) -> float:
        end = now_ns() if self._running else self.end_ns
        return (end - self.start_ns) / NS_PER_S
