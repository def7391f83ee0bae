"""``bench.controller_micro``'s standby figure: a standby applying a shutdown's leadership moves."""

from __future__ import annotations

import asyncio

from bench import controller_micro


def test_standby_moves_applies_every_move_of_the_broker() -> None:
    figures = asyncio.run(controller_micro.standby_moves(3_000, brokers=10))
    # Replicas rotate over 10 brokers: broker 1 leads a tenth; each moved off it (checked
    # inside: the standby's context shows broker 1 leading nothing).
    assert figures["standby_moves"] == 300
    assert figures["standby_moves_cpu_ms"] > 0
