"""Fault runs against a real cluster: acks=all records survive, one leader per epoch, fencing.

``test_chaos_long`` (``make chaos``, marker ``chaos``) runs every fault kind and more on four
brokers: 30 faults, about five minutes. ``test_chaos_short`` (``make test``, marker
``e2e``) runs two faults — a partition leader killed and the active controller paused past its
lease — in well under a minute. Both print the seed, each fault with its time and victim, and
every check (the short run only when it fails); set ``LEASEHOLD_CHAOS_SEED`` to replay a
schedule. The long run draws a fresh seed unless one is set (every ``make chaos`` explores a new
schedule); the short run uses a fixed one so ``make test`` is repeatable.
"""

from __future__ import annotations

import pytest
from chaos_runner import ChaosConfig, ChaosRun
from chaos_schedule import FaultKind, seed_from_env

SHORT_SEED = 20240611


@pytest.mark.chaos
@pytest.mark.timeout(900)
def test_chaos_long(capsys):
    config = ChaosConfig(
        name="long",
        seed=seed_from_env(None),
        brokers=4,
        partitions=8,
        faults=30,
        gap_s=(3.0, 6.0),
    )

    def emit(line: str) -> None:
        with capsys.disabled():
            print(line, flush=True)

    report = ChaosRun(config, emit).run()
    assert report.ok, report.text


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_chaos_short():
    config = ChaosConfig(
        name="short",
        seed=seed_from_env(SHORT_SEED),
        brokers=3,
        partitions=4,
        faults=2,
        kinds=(FaultKind.KILL_LEADER, FaultKind.PAUSE_CONTROLLER),
        producers=1,
        gap_s=(2.0, 3.0),
        settle_s=2.0,
    )
    report = ChaosRun(config, lambda line: None).run()
    assert report.ok, report.text
