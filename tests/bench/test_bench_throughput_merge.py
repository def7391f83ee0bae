"""``bench.throughput``'s merging of concurrent load generators' figures (pure)."""

from __future__ import annotations

import pytest

from bench.throughput import _merge


def test_throughputs_add_latencies_pool_and_cpu_counts_everything_worked() -> None:
    one = {"records": 1_000, "bytes": 2_000_000, "elapsed_ns": 2_000_000_000,
           "latencies_ms": [1.0, 2.0], "bytes_total": 4_000_000,
           "broker_cpu_s": 0.3, "client_cpu_s": 0.1}  # fmt: skip
    two = {"records": 3_000, "bytes": 6_000_000, "elapsed_ns": 4_000_000_000,
           "latencies_ms": [3.0, 4.0], "bytes_total": 6_000_000}  # fmt: skip
    figures = _merge([one, two])
    assert figures["mb_per_s"] == pytest.approx(8.0 / 4)  # slowest generator's window
    assert figures["records_per_s"] == pytest.approx(4_000 / 4)
    assert (figures["p50_ms"], figures["p99_ms"]) == (3.0, 4.0)
    assert figures["broker_cpu_ms_per_mb"] == pytest.approx(300 / 10)  # warm-up bytes too
    assert figures["client_cpu_ms_per_mb"] == pytest.approx(100 / 10)


def test_nothing_measured_is_zero_not_an_error() -> None:
    empty = {"records": 0, "bytes": 0, "elapsed_ns": 0, "latencies_ms": []}
    assert set(_merge([empty]).values()) == {0}
