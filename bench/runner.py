"""Which suites exist, how each is loaded, and how one is run, bounded in time and recorded.

Adding a suite: write ``bench/<name>.py`` with a module-level ``SUITE`` (a
:class:`bench.framework.BenchSuite`, or anything with ``name``, ``description`` and
``async run(ctx) -> list[Result]``), then add ``SuiteEntry("<name>", "bench.<name>")`` to
:data:`SUITES` in the order it should run (raw limits first: later suites compare with them).

A module without ``SUITE`` but with a ``main`` is run through :class:`MainSuite`: ``main`` is
called with ``quick=`` if it takes that keyword, else with an argv list (``["--quick"]`` in quick
mode), in a worker thread (it may call ``asyncio.run`` itself). If it returns a list of
:class:`Result` they are shown like any suite's; anything else it returns is kept as the run's
JSON ``output``; a non-zero exit status is a failure.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.framework import Result, RunContext, Suite, environment
from bench.report import SuiteRun


@dataclass(frozen=True)
class SuiteEntry:
    """A suite's name (CLI and ``<name>.json``), its module, and whether it may be absent."""

    name: str
    module: str
    optional: bool = False


SUITES: tuple[SuiteEntry, ...] = (
    SuiteEntry("raw_etcd", "bench.raw_etcd"),
    SuiteEntry("raw_grpc", "bench.raw_grpc"),
    SuiteEntry("fanout", "bench.fanout"),
    SuiteEntry("controller_failover", "bench.controller_failover"),
    SuiteEntry("controlled_shutdown", "bench.controlled_shutdown"),
    SuiteEntry("broker_failure", "bench.broker_failure"),
    SuiteEntry("etcd_outage", "bench.etcd_outage"),
    SuiteEntry("topic_creation", "bench.topic_creation"),
    SuiteEntry("produce", "bench.produce"),
    SuiteEntry("throughput", "bench.throughput"),
    SuiteEntry("consumer_groups", "bench.consumer_groups"),
    SuiteEntry("scale", "bench.scale"),
    SuiteEntry("pipeline_plan", "bench.pipeline_plan", optional=True),
)

# Guards against a hung suite, not targets: a full suite is meant to finish well within 2 minutes.
TIME_LIMIT_S = 240.0
QUICK_TIME_LIMIT_S = 90.0


def main_arguments(main: Callable[..., Any], quick: bool) -> tuple[tuple, dict[str, Any]]:
    """How to call a foreign ``main`` for this mode: ``quick=`` keyword, argv list, or nothing."""
    params = inspect.signature(main).parameters
    if "quick" in params:
        return (), {"quick": quick}
    positional = [
        p
        for p in params.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if positional:
        return ((["--quick"] if quick else []),), {}
    return (), {}


def call_main(main: Callable[..., Any], quick: bool) -> Any:
    """Call ``main`` as :func:`main_arguments` says; a non-zero exit status raises."""
    args, kwargs = main_arguments(main, quick)
    try:
        value = main(*args, **kwargs)
        if inspect.isawaitable(value):
            value = asyncio.run(value)
    except SystemExit as e:
        value = e.code
    if isinstance(value, int) and not isinstance(value, bool):
        if value != 0:
            raise RuntimeError(f"main exited with status {value}")
        return None
    return value


@dataclass(frozen=True)
class MainSuite:
    """A suite module that only has ``main`` (see the module docstring)."""

    name: str
    description: str
    main: Callable[..., Any]
    time_limited: bool = False  # a thread cannot be cancelled; the module bounds itself

    async def run(self, ctx: RunContext) -> Any:
        return await asyncio.to_thread(call_main, self.main, ctx.quick)


def load(entry: SuiteEntry) -> Suite | MainSuite | None:
    """Import a suite; None when an optional suite's module does not exist (yet)."""
    try:
        module = importlib.import_module(entry.module)
    except ModuleNotFoundError as e:
        if entry.optional and e.name == entry.module:
            return None
        raise
    suite = getattr(module, "SUITE", None)
    if suite is not None:
        return suite
    main = getattr(module, "main", None)
    if main is None:
        raise AttributeError(f"{entry.module} has neither SUITE nor main")
    doc = (module.__doc__ or entry.name).strip().splitlines()[0]
    return MainSuite(entry.name, doc, main)


def split_output(value: Any) -> tuple[tuple[Result, ...], Any]:
    """Tables when a suite returned Results (one or a list), else the value kept as output."""
    if isinstance(value, Result):
        return (value,), None
    if isinstance(value, list | tuple) and value and all(isinstance(v, Result) for v in value):
        return tuple(value), None
    if isinstance(value, list | tuple) and not value:
        return (), None
    return (), value


async def _run_bounded(suite: Suite | MainSuite, ctx: RunContext, limit: float) -> Any:
    if not getattr(suite, "time_limited", True):
        return await suite.run(ctx)
    return await asyncio.wait_for(suite.run(ctx), timeout=limit)


def run_suite(name: str, suite: Suite | MainSuite, ctx: RunContext, limit: float) -> SuiteRun:
    """Run one suite in its own event loop; failures and timeouts become a failed SuiteRun."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    env = environment()
    t0 = time.perf_counter()
    try:
        value = asyncio.run(_run_bounded(suite, ctx, limit))
    except TimeoutError as e:
        elapsed = time.perf_counter() - t0
        # A wait inside the suite that timed out is the suite's own failure, with its message.
        error = (
            f"did not finish within {limit:g}s"
            if elapsed >= limit
            else f"TimeoutError: {e}\n{traceback.format_exc()}"
        )
        return SuiteRun(
            name, suite.description, ctx.quick, started, elapsed, env,
            status="failed", error=error,
        )  # fmt: skip
    except Exception as e:
        return SuiteRun(
            name, suite.description, ctx.quick, started, time.perf_counter() - t0, env,
            status="failed", error=f"{type(e).__name__}: {e}\n{traceback.format_exc()}",
        )  # fmt: skip
    results, output = split_output(value)
    return SuiteRun(
        name, suite.description, ctx.quick, started, time.perf_counter() - t0, env,
        results=results, output=output,
    )  # fmt: skip


def load_failure(entry: SuiteEntry, quick: bool, error: BaseException) -> SuiteRun:
    """The record of a suite whose module could not be imported (the others still run)."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return SuiteRun(
        entry.name, entry.module, quick, started, 0.0, environment(),
        status="failed", error=f"could not load {entry.module}: {type(error).__name__}: {error}",
    )  # fmt: skip
