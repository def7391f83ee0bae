"""Smoke test of the broker failure and produce benchmarks (quick mode)."""

from __future__ import annotations

import pytest
from bench_smoke_harness import check_suite, row, run_quick

pytestmark = pytest.mark.e2e

SUITES = ["broker_failure", "produce"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-results")
    proc = run_quick(SUITES, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_broker_failure_reports_from_the_kill_and_from_expiry(out):
    check_suite(
        out,
        "broker_failure",
        "SIGKILL of a broker leading 300 of 300 partitions (RF 3, 3 brokers)",
        "raw etcd: fenced writes of as many states",
        {"raw etcd: fenced writes of as many states", "SIGKILL"},
    )
    kill = row(out, "broker_failure", "SIGKILL")
    # Both clocks: from the kill includes the lease's expiry, from expiry does not.
    assert kill["kill_brokers_ms"] >= kill["brokers_ms"] > 0
    assert kill["kill_brokers_ms"] == pytest.approx(
        kill["expiry_after_kill_ms"] + kill["brokers_ms"], abs=1.0
    )


def test_produce_reports_sdk_and_rpc_against_grpc_echo(out):
    check_suite(
        out,
        "produce",
        "produce acks=all, RF 3, min ISR 2, 6 partitions",
        "gRPC echo unary, 1 in flight",
        {
            "gRPC echo unary, 1 in flight",
            "gRPC echo unary, 16 in flight",
            "Produce RPC, 1 record, 1 in flight",
            "Produce RPC, 1 record, 16 in flight",
            "SDK Producer, linger 0, 1 record in flight",
            "SDK Producer, linger 5 ms, 32 records in flight",
        },
    )
