"""Side-by-side tables: one per scenario, a row per figure, Leasehold | Kafka | ratio.

The ratio is always Leasehold / Kafka of the same figure, whatever its unit; a figure says
whether lower is better (times) or higher (rates), and the verdict column reads "ahead" or
"behind" accordingly. Each table carries the load average when each system's part ran, so a
figure taken under shared load is read as such; the JSON keeps every raw value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    lower_is_better: bool = True
    fmt: str = ",.0f"


@dataclass(frozen=True)
class SideBySide:
    """One scenario: its figures for both systems (keys of ``figures``; a missing value is a
    figure that system has no witness for) and notes saying how each was taken."""

    title: str
    figures: tuple[Figure, ...]
    leasehold: Mapping[str, float]
    kafka: Mapping[str, float]
    load: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def ratio(self, key: str) -> float | None:
        ours, theirs = self.leasehold.get(key), self.kafka.get(key)
        if ours is None or not theirs:
            return None
        return ours / theirs

    def verdict(self, figure: Figure) -> str:
        ratio = self.ratio(figure.key)
        if ratio is None:
            return ""
        ahead = ratio < 1 if figure.lower_is_better else ratio > 1
        return "ahead" if ahead else ("even" if ratio == 1 else "behind")

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "load_average_1m": dict(self.load),
            "figures": [
                {
                    "key": f.key,
                    "label": f.label,
                    "unit": f.unit,
                    "lower_is_better": f.lower_is_better,
                    "leasehold": self.leasehold.get(f.key),
                    "kafka": self.kafka.get(f.key),
                    "ratio_leasehold_to_kafka": self.ratio(f.key),
                    "verdict": self.verdict(f),
                }
                for f in self.figures
            ],
            "notes": list(self.notes),
        }


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def render(table: SideBySide, console: Console) -> None:
    load = ", ".join(f"{k} {v:.2f}" for k, v in table.load.items())
    t = Table(title=f"{table.title}  [dim](load {load})[/dim]", title_justify="left")
    for header in ("figure", "Leasehold", "Kafka", "ratio L/K", ""):
        t.add_column(header, justify="left" if header == "figure" else "right")
    for f in table.figures:
        ratio = table.ratio(f.key)
        t.add_row(
            f"{f.label} ({f.unit})",
            _cell(table.leasehold.get(f.key), f.fmt),
            _cell(table.kafka.get(f.key), f.fmt),
            "—" if ratio is None else f"{ratio:,.2f}x",
            table.verdict(f),
        )
    console.print(t)
    for note in table.notes:
        console.print(f"  · {note}", style="dim")
