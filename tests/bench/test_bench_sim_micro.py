"""The simulation-process micro-benchmark (``bench.sim_micro``) at a small size: its layout is
``bench scale``'s, and a measured round is one in which every broker, told over its own gRPC
server and control stream, stopped showing the failed broker as a leader."""

from __future__ import annotations

import asyncio
import gc

import pytest

from bench import sim_micro
from bench.scenario import Layout as ScaleLayout


def test_the_layout_is_the_scale_benchmarks_read_by_topic():
    layout = sim_micro.Layout.of(10, 2_500)
    scale = ScaleLayout(2_500, 1_000, tuple(range(1, 11))).topics()
    assert [layout.topic_size(t) for t in range(layout.topic_count())] == [
        len(scale[f"bench-{t}"]) for t in range(len(scale))
    ]
    for t in range(layout.topic_count()):
        for p in range(layout.topic_size(t)):
            assert layout.replicas_of(t, p) == scale[f"bench-{t}"][p]
    # Broker 1 is the preferred leader of one partition in ten, every topic's 0, 10, 20, ...
    led = layout.led_by(sim_micro.FAILED)
    assert len(led) == 250
    assert all(p % 10 == 0 for _, p in led)


def test_a_failure_body_moves_what_the_failed_broker_led_and_leaves_it_out_of_the_isr():
    layout = sim_micro.Layout.of(10, 2_000)
    led = layout.led_by(sim_micro.FAILED)
    request = sim_micro.control_pb2.UpdateMetadataRequest.FromString(
        sim_micro._failure(layout, led, 1)
    )
    assert len(request.partition_states) == len(led) == 200
    for s in request.partition_states:
        assert s.leader == 2 and s.leader_epoch == 1
        assert sim_micro.FAILED not in s.isr and sim_micro.FAILED in s.replicas


@pytest.mark.timeout(120)
def test_every_round_tells_every_broker_over_grpc():
    rounds = asyncio.run(sim_micro.measure(4, 10, 2_000, 2, None))
    assert gc.get_freeze_count() == 0  # the heap is given back as it was
    assert len(rounds) == 2
    for figures in rounds:
        assert set(figures) == {
            "digest_cpu_ms",
            "digest_wall_ms",
            "failure_cpu_ms",
            "failure_wall_ms",
            "direct_cpu_ms",
            "first_cpu_ms",
        }
        assert all(v > 0 for v in figures.values())


def test_a_round_whose_brokers_still_show_the_old_leader_fails(monkeypatch):
    # The check is real: a process whose brokers never apply the failure makes measure raise.
    monkeypatch.setattr(sim_micro.Process, "still_led", lambda self: len(self.brokers))
    with pytest.raises(RuntimeError, match="still show the old leader"):
        asyncio.run(sim_micro.measure(2, 10, 1_000, 1, None))
