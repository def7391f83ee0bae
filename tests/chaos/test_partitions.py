"""Network partitions on test hosts (each process in its own network namespace).

``test_partition_short`` (``make test``) cuts the active controller from etcd but not from the
brokers, and the etcd member every service talks to first from the other members (every session
must survive it); ``test_partitions`` (``make chaos``, marker ``chaos``) runs every scenario of
:mod:`partition_scenarios` and prints one result table for all of them. Each run uses a lab of
its own (unique namespace and bridge names, a free /24) and removes it, even when it fails.
Needs root and nftables (``make netns-tools``; CI runs as root).
"""

from __future__ import annotations

import pytest
from chaos_runner import ChaosConfig
from chaos_schedule import seed_from_env
from partition_runner import HEADER, PartitionRun, row
from partition_scenarios import PARTITIONS, SCENARIOS

from leasehold.testing.netns import unavailable_reason

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(bool(unavailable_reason()), reason=unavailable_reason() or "ok"),
]


def _config(name: str) -> ChaosConfig:
    return ChaosConfig(
        name=f"partition {name}",
        seed=seed_from_env(default=0),
        brokers=3,
        partitions=PARTITIONS,
        faults=0,
        gap_s=(3.0, 3.0),
    )


def _run(name: str, emit=print):
    run = PartitionRun(SCENARIOS[name], _config(name), emit)
    return run.run(), run.outcome


@pytest.mark.parametrize("name", ["controller-etcd", "etcd-minority"])
def test_partition_short(name):
    report, _ = _run(name)
    assert report.ok, report.text


@pytest.mark.chaos
def test_partitions(capsys):
    outcomes, failed = [], []
    for name in SCENARIOS:
        with capsys.disabled():
            report, outcome = _run(name)
        outcomes.append(outcome)
        if not report.ok:
            failed.append(name)
    with capsys.disabled():
        print("\n".join(["", HEADER, "|---|---|---|---|---|---|---|---|---|", *map(row, outcomes)]))
    assert not failed, f"scenarios failed: {failed}"
