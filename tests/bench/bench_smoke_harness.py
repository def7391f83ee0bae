"""Shared by the scenario smoke tests: run suites in quick mode, check what they recorded.

Only "present, consistent and positive" is checked: the machine is shared, so no timing target
is asserted. Each smoke file runs its suites in one ``python -m bench`` process.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_quick(suites: list[str], out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *suites, "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )


def check_suite(out: Path, suite: str, title: str, baseline: str, labels: set[str]) -> None:
    """One result titled ``title`` with exactly ``labels`` as rows, ``baseline`` among them at
    ratio 1.0, a positive figure in every row's ratio column, and only finite values."""
    data = json.loads((out / f"{suite}.json").read_text())
    assert (data["suite"], data["mode"], data["status"], data["error"]) == (
        suite,
        "quick",
        "ok",
        "",
    )
    assert [(r["title"], r["baseline"]) for r in data["results"]] == [(title, baseline)]
    result = data["results"][0]
    assert {row["label"] for row in result["rows"]} == labels
    for row in result["rows"]:
        assert row["values"][result["ratio_of"]] > 0, row
        assert row["ratio_to_baseline"] > 0, row
        assert all(math.isfinite(v) for v in row["values"].values()), row
    assert next(r for r in result["rows"] if r["label"] == baseline)["ratio_to_baseline"] == 1.0


def row(out: Path, suite: str, label: str) -> dict[str, float]:
    """The values of the first result's row ``label``."""
    data = json.loads((out / f"{suite}.json").read_text())
    return next(r for r in data["results"][0]["rows"] if r["label"] == label)["values"]
