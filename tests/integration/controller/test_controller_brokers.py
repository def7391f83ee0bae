"""Broker failure and startup (seed 000 §8.2.3), unclean election (KIP-704)."""

from __future__ import annotations

import asyncio

import pytest
from ctlharness import eventually

from leasehold.metadata.v1 import metadata_pb2


async def _setup(cluster, brokers=(1, 2, 3), **overrides):
    for b in brokers:
        await cluster.add_broker(b)
    node = await cluster.add_controller(1, **overrides)
    await cluster.active()
    return node


@pytest.mark.parametrize("delivery", ["fast", "plain"])
async def test_broker_failure_reelects_from_isr_and_shrinks_isr(cluster, delivery):
    """Either delivery (``services.controller.delivery``) runs the controller."""
    await _setup(cluster, delivery=delivery)
    await cluster.create_topic("t", {0: [1, 2, 3], 1: [2, 1, 3], 2: [3, 2, 1]})
    before = await cluster.wait_states("t", 3, lambda s: True)
    mark = len(cluster.calls)
    await cluster.brokers[1].deregister()
    after = await cluster.wait_states("t", 3, lambda s: 1 not in s.leader_and_isr.isr)
    got = {p: (s.leader_and_isr.leader, s.leader_and_isr.isr) for p, s in after.items()}
    assert got == {0: (2, (2, 3)), 1: (2, (2, 3)), 2: (3, (3, 2))}
    # Only the partition the dead broker led changed leader; every change bumps the epoch.
    assert after[0].leader_and_isr.leader_epoch == before[0].leader_and_isr.leader_epoch + 1
    for p in (1, 2):
        assert after[p].leader_and_isr.leader_epoch == before[p].leader_and_isr.leader_epoch + 1

    # The live replicas learn the new leader of partition 0 with its committed partition epoch.
    async def told() -> bool:
        for b in (2, 3):
            calls = [
                c for c in cluster.calls[mark:] if c.broker_id == b and c.kind == "LeaderAndIsr"
            ]
            states = {
                (s.partition, s.leader, s.partition_epoch)
                for c in calls
                for s in c.request.partition_states
            }
            if (0, 2, after[0].leader_and_isr.partition_epoch) not in states:
                return False
        return True

    await eventually(told, 10, "LeaderAndIsr with the new leader")

    def updates() -> list:
        return [c for c in cluster.calls[mark:] if c.broker_id == 3 and c.kind == "UpdateMetadata"]

    await eventually(
        lambda: any(
            (s.partition, s.leader) == (0, 2) for c in updates() for s in c.request.partition_states
        ),
        10,
        "UpdateMetadata with the new leader",
    )
    after_failure = [
        c
        for c in updates()
        if any(s.leader == 2 and s.partition == 0 for s in c.request.partition_states)
    ]
    assert all(1 not in [b.broker_id for b in c.request.live_brokers] for c in after_failure)


async def test_broker_restart_brings_its_replicas_back_online(cluster):
    node = await _setup(cluster)
    await cluster.create_topic("r", {0: [1, 2], 1: [2, 1]})
    await cluster.wait_states("r", 2, lambda s: True)
    b1 = cluster.brokers[1]
    await b1.deregister()
    await cluster.wait_states("r", 2, lambda s: s.leader_and_isr.isr == (2,))
    mark = len(b1.calls)
    new_epoch = await b1.register(cluster.etcd, cluster.ks)

    async def back() -> bool:
        lai = [c for c in b1.calls[mark:] if c.kind == "LeaderAndIsr"]
        parts = {s.partition for c in lai for s in c.request.partition_states}
        return parts == {0, 1}

    await eventually(back, 10, "LeaderAndIsr to the restarted broker")
    calls = b1.calls[mark:]
    assert calls[0].kind == "UpdateMetadata"
    assert {(s.topic, s.partition) for s in calls[0].request.partition_states} == {
        ("r", 0),
        ("r", 1),
    }
    assert all(c.request.broker_epoch == new_epoch for c in calls)
    lai = next(c for c in calls if c.kind == "LeaderAndIsr").request
    assert {(s.partition, s.leader) for s in lai.partition_states} == {(0, 2), (1, 2)}
    ctx = node.controller.ctx
    assert ctx.broker_epoch(1) == new_epoch


async def test_offline_partition_waits_for_isr_unless_unclean_allowed(cluster):
    await _setup(cluster, brokers=(1, 2))
    await cluster.etcd.put(
        cluster.ks.topic_config("u"),
        metadata_pb2.ConfigEntries(
            entries={"unclean.leader.election.enable": "true"}
        ).SerializeToString(),
    )
    await cluster.create_topic("u", {0: [1, 2]})
    await cluster.create_topic("c", {0: [1, 2]})
    await cluster.wait_states("u", 1, lambda s: True)
    await cluster.wait_states("c", 1, lambda s: True)
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    await b2.deregister()
    await cluster.wait_states("c", 1, lambda s: s.leader_and_isr.isr == (1,))
    await cluster.wait_states("u", 1, lambda s: s.leader_and_isr.isr == (1,))
    await b1.deregister()
    for t in ("u", "c"):
        s = (await cluster.wait_states(t, 1, lambda s: s.leader_and_isr.leader == -1))[0]
        assert s.leader_and_isr.isr == (1,)  # the last ISR member stays for a clean election
    await b2.register(cluster.etcd, cluster.ks)
    u = (await cluster.wait_states("u", 1, lambda s: s.leader_and_isr.leader == 2))[0]
    assert u.leader_and_isr.isr == (2,) and u.leader_and_isr.recovering
    c = (await cluster.state("c", 0)).leader_and_isr
    assert c.leader == -1 and c.isr == (1,)
    await b1.register(cluster.etcd, cluster.ks)
    c = (await cluster.wait_states("c", 1, lambda s: s.leader_and_isr.leader == 1))[0]
    assert c.leader_and_isr.isr == (1,) and not c.leader_and_isr.recovering


async def test_broker_failure_tells_each_survivor_each_new_state_once(cluster):
    """The replica step finds the re-elected partitions' ISR already without the dead broker
    and would queue their unchanged states again; brokers ignore an equal leader epoch, so each
    survivor is sent each state once (``sent_states``), and the shrunk ISRs (new epochs) once."""
    await _setup(cluster)
    await cluster.create_topic("o", {0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 1, 3], 3: [3, 1, 2]})
    await cluster.wait_states("o", 4, lambda s: len(s.leader_and_isr.isr) == 3)
    await asyncio.sleep(0.5)  # the creation's requests are answered
    mark = len(cluster.calls)
    await cluster.brokers[1].deregister()
    after = await cluster.wait_states("o", 4, lambda s: 1 not in s.leader_and_isr.isr)
    want = {
        p: (s.leader_and_isr.leader, s.leader_and_isr.leader_epoch, s.leader_and_isr.isr)
        for p, s in after.items()
    }
    assert {p: w[0] for p, w in want.items()} == {0: 2, 1: 3, 2: 2, 3: 3}

    def sent(broker: int, kind: str) -> list[tuple[int, int, int, tuple[int, ...]]]:
        return sorted(
            (s.partition, s.leader, s.leader_epoch, tuple(s.isr))
            for c in cluster.calls[mark:]
            if c.broker_id == broker and c.kind == kind
            for s in c.request.partition_states
            if s.topic == "o"
        )

    expected = sorted((p, *w) for p, w in want.items())
    await eventually(
        lambda: all(sent(b, "UpdateMetadata") == expected for b in (2, 3)), 10, "every state"
    )
    await asyncio.sleep(0.5)  # anything queued behind them has arrived too
    for b in (2, 3):
        assert sent(b, "LeaderAndIsr") == expected
        assert sent(b, "UpdateMetadata") == expected
