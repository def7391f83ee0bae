"""Held watch batches against a real etcd: the echo of a big commit may wait, undecoded, but a
standby that becomes the controller has applied every one of them before it acts, and the
active controller's context ends up exactly as etcd says."""

from __future__ import annotations

import time

from ctlharness import eventually

from services.controller.core import TopicPartition
from services.controller.event_loop import HoldPolicy

PARTITIONS = 300
# Nothing but another event releases what the standby holds during these tests.
FOREVER = HoldPolicy(quiet_s=600.0, max_s=600.0)


async def _cluster_with_standby(cluster):
    for b in (1, 2, 3):
        await cluster.add_broker(b)
    first = await cluster.add_controller(1)
    assert await cluster.active() is first
    second = await cluster.add_controller(2)
    # Broker 1 leads every partition; followers rotate over brokers 2 and 3.
    assignment = {p: [1, 2 + p % 2, 3 - p % 2] for p in range(PARTITIONS)}
    await cluster.create_topic("t", assignment)
    await cluster.wait_states("t", PARTITIONS, lambda s: len(s.leader_and_isr.isr) == 3)
    await eventually(
        lambda: (
            second.controller.ctx.leader_and_isr(TopicPartition("t", PARTITIONS - 1)) is not None
        ),
        10,
        "the standby to know every partition",
    )
    return first, second


async def _context_matches_etcd(cluster, node) -> list[str]:
    """Partitions whose leader/ISR (with partition epoch) in ``node``'s context differs from
    etcd's state key."""
    wrong = []
    for p in range(PARTITIONS):
        stored = await cluster.state("t", p)
        got = node.controller.ctx.leader_and_isr(TopicPartition("t", p))
        if got != stored.leader_and_isr:
            wrong.append(f"t-{p}: {got} != {stored.leader_and_isr}")
    return wrong


async def test_a_standby_elected_while_holding_a_burst_applies_it_first(cluster):
    first, second = await _cluster_with_standby(cluster)
    second.app.events._hold = FOREVER
    await cluster.brokers[1].deregister()  # lease gone: 300 elections, one commit
    await cluster.wait_states("t", PARTITIONS, lambda s: s.leader_and_isr.leader in (2, 3))
    await eventually(lambda: second.app.events.held > 0, 10, "the standby to hold the echo")
    assert second.controller.ctx.leader_and_isr(TopicPartition("t", 0)).leader == 1

    crashed = time.monotonic()
    await first.crash()
    assert await cluster.active(timeout=15) is second
    # Released by the election itself, not by the (10-minute) hold running out.
    assert time.monotonic() - crashed < 10
    assert second.app.events.held == 0
    assert await _context_matches_etcd(cluster, second) == []
    # The new controller's failover elected nobody: every partition already had a live leader.
    for p in range(PARTITIONS):
        stored = await cluster.state("t", p)
        assert stored.leader_and_isr.controller_epoch == 1, p


async def test_the_active_controller_holds_its_own_echo_and_ends_up_as_etcd(cluster):
    first, _ = await _cluster_with_standby(cluster)
    await cluster.brokers[1].deregister()
    await cluster.wait_states("t", PARTITIONS, lambda s: s.leader_and_isr.leader in (2, 3))
    _, revision = await cluster.etcd.get_with_revision(cluster.ks.controller_epoch)
    await eventually(
        lambda: first.controller.synced_revision >= revision,
        10,
        "the active controller to apply its own echo",
    )
    assert await _context_matches_etcd(cluster, first) == []
    assert first.controller.ctx.live_broker_ids == frozenset({2, 3})
