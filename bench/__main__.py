"""``python -m bench [suite ...] [--quick]`` (``make bench``): run suites, print, keep JSON.

With no suite named, every registered suite runs in order (raw limits first); optional suites
whose module does not exist are skipped. Each suite prints a table per result with the ratio to
the baseline measured in the same run, and writes ``<out>/<suite>.json`` (default
``bench/results/``, gitignored). The exit status is 1 if any suite failed.

``python -m bench --peer kafka [--quick]`` (``make bench-peer``) instead runs the side-by-side
scenarios on Leasehold and Apache Kafka (``bench/peers``) and writes ``<out>/peer-kafka.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from bench.framework import RunContext
from bench.report import render, write_json
from bench.runner import (
    QUICK_TIME_LIMIT_S,
    SUITES,
    TIME_LIMIT_S,
    load,
    load_failure,
    run_suite,
)

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    names = [e.name for e in SUITES]
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("suites", nargs="*", metavar="suite", help=f"any of: {', '.join(names)}")
    p.add_argument("--quick", action="store_true", help="smoke-test sizes: seconds per suite")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for <suite>.json")
    p.add_argument("--time-limit", type=float, default=None, help="seconds allowed per suite")
    p.add_argument("--list", action="store_true", help="list the suites and exit")
    p.add_argument(
        "--peer", choices=["kafka"], help="run the side-by-side scenarios against this peer"
    )
    args = p.parse_args(argv)
    unknown = [s for s in args.suites if s not in names]
    if unknown:
        p.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(names)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.peer:
        from bench.peers.run import main as peer_main

        return peer_main(args.peer, args.quick, args.out)
    console = Console() if sys.stdout.isatty() else Console(width=140)
    if args.list:
        for entry in SUITES:
            console.print(
                f"{entry.name:16} {entry.module}{'  (optional)' if entry.optional else ''}"
            )
        return 0
    ctx = RunContext(quick=args.quick)
    default_limit = QUICK_TIME_LIMIT_S if args.quick else TIME_LIMIT_S
    selected = [e for e in SUITES if not args.suites or e.name in args.suites]
    failed = []
    for entry in selected:
        try:
            suite = load(entry)
        except Exception as e:  # one broken suite module must not stop the others
            run = load_failure(entry, args.quick, e)
            render(run, console)
            write_json(run, args.out)
            failed.append(entry.name)
            continue
        if suite is None:
            if entry.name in args.suites:
                console.print(f"[red]{entry.name}: module {entry.module} does not exist[/red]")
                failed.append(entry.name)
            else:
                console.print(f"[dim]{entry.name}: skipped ({entry.module} not present)[/dim]")
            continue
        console.print(f"[dim]running {entry.name}…[/dim]")
        limit = args.time_limit or getattr(suite, "time_limit_s", None) or default_limit
        run = run_suite(entry.name, suite, ctx, limit)
        render(run, console)
        path = write_json(run, args.out)
        console.print(f"[dim]wrote {path}[/dim]")
        if run.status == "failed":
            failed.append(entry.name)
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/red]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
