"""Smoke test of ``make bench``: the raw suites run in quick mode and leave sane JSON behind.

This checks that each suite starts what it needs, measures, stops everything and records figures
with its same-run baseline. It asserts no timing target: on a shared machine only "positive and
present" is a fair check.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.framework import child_process
from bench.raw_grpc import serve_echo

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

# suite -> {result title: baseline label}: what each quick run must report.
EXPECTED = {
    "raw_etcd": {
        "etcd writes: fenced CAS transactions vs single puts": "put, 1 key, 1 in flight",
        "etcd reads: paged prefix range vs single gets": "get, 1 key, 1 in flight",
    },
    "raw_grpc": {
        "gRPC aio echo, server in a separate process": "unary, 1 in flight",
    },
    "fanout": {
        "one request to each of 50 brokers, until all answered": (
            "raw gRPC aio, 50 channels, calls gathered"
        ),
    },
}
EXPECTED_ROWS = {
    "raw_etcd": {
        "put, 1 key, 1 in flight",
        "fenced txn, 126 puts, 1 in flight",
        "fenced txn, 126 puts, 4 in flight",
        "fenced txn, 126 puts, 8 in flight",
        "fenced txn, 126 puts, 16 in flight",
        "fenced txn, 126 puts, 64 in flight",
        "bulk create 3,000 keys, 64 in flight",
        "bulk create 3,000 keys, 4 in flight",
        "get, 1 key, 1 in flight",
        "range_prefix 3,000 keys, pages of 1,000",
        "range_prefix 3,000 keys, pages of 10,000",
    },
    "raw_grpc": {
        "unary, 1 in flight",
        "unary, 16 in flight",
        "bidi stream, ping-pong",
        "bidi stream, pipelined",
    },
    "fanout": {
        "raw gRPC aio, 50 channels, calls gathered",
        "controller channel manager, 50 brokers, a unary call each",
        "controller channel manager, 50 brokers, control streams (default)",
        "raw gRPC aio, 50 open streams, a message each",
    },
}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("bench-results")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *EXPECTED, "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return proc, out


def test_quick_run_succeeds(quick_run):
    proc, out = quick_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.json" for s in EXPECTED)


@pytest.mark.parametrize("suite", sorted(EXPECTED))
def test_results_have_baselines_and_positive_figures(quick_run, suite):
    _, out = quick_run
    data = json.loads((out / f"{suite}.json").read_text())
    assert (data["suite"], data["mode"], data["status"], data["error"]) == (
        suite,
        "quick",
        "ok",
        "",
    )
    assert {r["title"]: r["baseline"] for r in data["results"]} == EXPECTED[suite]
    labels = {row["label"] for r in data["results"] for row in r["rows"]}
    assert labels == EXPECTED_ROWS[suite]
    for result in data["results"]:
        columns = [c["key"] for c in result["columns"]]
        assert result["ratio_of"] in columns
        for row in result["rows"]:
            assert row["values"][result["ratio_of"]] > 0, (result["title"], row)
            assert row["ratio_to_baseline"] > 0, (result["title"], row)
            for key in columns:
                if key in row["values"]:
                    assert row["values"][key] > 0, (result["title"], row["label"], key)
        baseline = next(r for r in result["rows"] if r["label"] == result["baseline"])
        assert baseline["ratio_to_baseline"] == 1.0


def test_child_process_is_gone_after_the_block():
    with child_process(serve_echo, name="echo-under-test") as child:
        assert child.pid != os.getpid()
        with socket.create_connection(("127.0.0.1", child.ready), timeout=5):
            pass
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)
