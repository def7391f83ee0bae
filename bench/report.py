"""How a suite's run is shown (a rich table per result) and kept (``<out>/<suite>.json``).

The JSON file holds the raw figures, the ratio to the baseline of each row, the mode, the
environment (CPU count, load average, versions) and the outcome, so runs can be compared later
and a failed run still leaves a record saying why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from bench.framework import Result

Status = Literal["ok", "failed", "skipped"]


@dataclass(frozen=True)
class SuiteRun:
    """One suite's outcome. ``output`` keeps what a suite without tables returned (JSON-able)."""

    suite: str
    description: str
    quick: bool
    started_at: str
    duration_s: float
    environment: dict[str, Any]
    results: tuple[Result, ...] = ()
    status: Status = "ok"
    error: str = ""
    output: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "description": self.description,
            "mode": "quick" if self.quick else "full",
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "status": self.status,
            "error": self.error,
            "environment": self.environment,
            "results": [r.to_json() for r in self.results],
            "output": self.output,
            **self.extra,
        }


def write_json(run: SuiteRun, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{run.suite}.json"
    path.write_text(json.dumps(run.to_json(), indent=2, default=str) + "\n")
    return path


def result_table(result: Result) -> Table:
    """A rich table: the figures, then the ratio to the baseline row (which reads 1.00x)."""
    ratio_header = next(c.header for c in result.columns if c.key == result.ratio_of)
    table = Table(title=result.title, title_justify="left", show_lines=False)
    table.add_column("figure", no_wrap=True)
    for column in result.columns:
        table.add_column(column.header, justify="right")
    table.add_column(f"ratio to baseline ({ratio_header})", justify="right")
    with_notes = any(row.note for row in result.rows)
    if with_notes:
        table.add_column("note", style="dim")
    for row in result.rows:
        is_base = row.label == result.baseline
        label = f"{row.label}  [dim](baseline)[/dim]" if is_base else row.label
        cells = [
            "—" if (v := row.values.get(c.key)) is None else c.format(v) for c in result.columns
        ]
        ratio = result.ratio(row)
        cells.append("—" if ratio is None else f"{ratio:,.2f}x")
        if with_notes:
            cells.append(row.note)
        table.add_row(label, *cells, style="bold" if is_base else "")
    return table


def render(run: SuiteRun, console: Console) -> None:
    env = run.environment
    mode = "quick" if run.quick else "full"
    console.rule(f"[bold]{run.suite}[/bold] — {run.description}")
    console.print(
        f"mode {mode} · {run.duration_s:.1f}s · {env.get('cpus')} CPUs · "
        f"load {env.get('loadavg_1m', 0):.2f} · Python {env.get('python')} · "
        f"grpc {env.get('grpc')}",
        style="dim",
    )
    for result in run.results:
        console.print(result_table(result))
        for note in result.notes:
            console.print(f"  · {note}", style="dim")
    if run.output is not None and not run.results:
        console.print_json(json.dumps(run.output, default=str))
    if run.status != "ok":
        console.print(f"[red]{run.status}[/red]: {run.error}")
