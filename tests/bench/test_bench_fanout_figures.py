"""The fan-out suite's row figures (``bench.fanout``)."""

from __future__ import annotations

from bench.fanout import COLUMNS, _figures


def test_a_row_counts_the_requests_sent_again_when_there_were_any():
    figures = _figures(1_000, [0.3, 0.4, 0.5], 1.2, failed=7)
    assert figures["failed"] == 7
    assert figures["round_ms"] == 400.0
    assert round(figures["cpu_us_per_broker"], 6) == 400.0
    assert "failed" in {c.key for c in COLUMNS}
    # None retried: no figure (every figure a row shows is a measured, positive one).
    assert "failed" not in _figures(1_000, [0.3], 0.3)
