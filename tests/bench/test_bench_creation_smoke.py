"""Smoke test of the topic creation benchmark (quick mode)."""

from __future__ import annotations

import pytest
from bench_smoke_harness import check_suite, run_quick

pytestmark = pytest.mark.e2e


def test_topic_creation_reports_partitions_per_second(tmp_path):
    proc = run_quick(["topic_creation"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topic_creation.json"]
    check_suite(
        tmp_path,
        "topic_creation",
        "topic creation through admin (RF 3, 3 brokers), one request per row",
        "raw etcd: 200 fenced state writes",
        {
            "raw etcd: 200 fenced state writes",
            "CreateTopics 1 x 50 partitions",
            "CreateTopics 4 x 50 partitions",
        },
    )
