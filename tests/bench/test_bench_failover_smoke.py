"""Smoke test of the controller failover and controlled shutdown benchmarks (quick mode)."""

from __future__ import annotations

import pytest
from bench_smoke_harness import check_suite, run_quick

pytestmark = pytest.mark.e2e

SUITES = ["controller_failover", "controlled_shutdown"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-results")
    proc = run_quick(SUITES, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_controller_failover_reports_resign_and_kill(out):
    check_suite(
        out,
        "controller_failover",
        "controller failover, 300 partitions (RF 3, 3 brokers)",
        "raw etcd: range all states + 1 txn",
        {"raw etcd: range all states + 1 txn", "resign (SIGTERM)", "SIGKILL"},
    )


def test_controlled_shutdown_reports_the_answer(out):
    check_suite(
        out,
        "controlled_shutdown",
        "controlled shutdown of a broker leading 300 partitions (RF 3, 3 brokers)",
        "raw etcd: fenced writes of as many states",
        {"raw etcd: fenced writes of as many states", "ControlledShutdown"},
    )
