"""Topic creation and partition addition: New -> Online, batched fenced writes."""

from __future__ import annotations

from ctlharness import eventually

from leasehold.metadata.v1 import metadata_pb2
from services.controller.core import PartitionState, TopicPartition


async def _three_brokers(cluster):
    for b in (1, 2, 3):
        await cluster.add_broker(b)


async def test_topic_creation_moves_partitions_online(cluster):
    await _three_brokers(cluster)
    node = await cluster.add_controller(1)
    active = await cluster.active()
    assert active is node
    await cluster.create_topic("demo", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    states = await cluster.wait_states("demo", 3, lambda s: True)
    expected = {0: (1, (1, 2, 3)), 1: (2, (2, 3, 1)), 2: (3, (3, 1, 2))}
    for p, (leader, isr) in expected.items():
        lai = states[p].leader_and_isr
        assert (lai.leader, lai.isr, lai.leader_epoch) == (leader, isr, 0)
        assert lai.controller_epoch == node.controller.epoch
    # Each replica got LeaderAndIsr(is_new) naming the committed partition epoch.
    for b in (1, 2, 3):
        broker = cluster.brokers[b]
        await eventually(lambda broker=broker: broker.of_kind("LeaderAndIsr"), 10, "LeaderAndIsr")
        req = broker.of_kind("LeaderAndIsr")[-1].request
        got = {(s.partition, s.leader, s.is_new, s.partition_epoch) for s in req.partition_states}
        want = {
            (p, expected[p][0], True, states[p].leader_and_isr.partition_epoch) for p in range(3)
        }
        assert got == want
        assert req.broker_epoch == broker.epoch


async def test_dead_replica_is_left_out_of_the_isr_and_leads_nothing(cluster):
    await cluster.add_broker(1)
    await cluster.add_broker(2)
    await cluster.add_broker(3, register=False)
    await cluster.add_controller(1)
    await cluster.active()
    await cluster.create_topic("t", {0: [3, 1, 2], 1: [1, 3, 2]})
    states = await cluster.wait_states("t", 2, lambda s: True)
    assert states[0].leader_and_isr.leader == 1 and states[0].leader_and_isr.isr == (1, 2)
    assert states[1].leader_and_isr.leader == 1 and states[1].leader_and_isr.isr == (1, 2)


async def test_partition_addition_and_batching(cluster):
    await _three_brokers(cluster)
    node = await cluster.add_controller(1)
    await cluster.active()
    store = node.controller.store
    before = store.stats.transactions
    n = 300
    await cluster.create_topic("big", {p: [p % 3 + 1, (p + 1) % 3 + 1] for p in range(n)})
    await cluster.wait_states("big", n, lambda s: s.leader_and_isr.leader > 0, timeout=30)
    used = store.stats.transactions - before
    assert used <= 4, f"{used} etcd transactions for {n} partition states"
    # Partition addition: admin rewrites the topic key with two more partitions.
    await cluster.create_topic("small", {0: [1, 2]})
    await cluster.wait_states("small", 1, lambda s: True)
    kv = await cluster.etcd.get(cluster.ks.topic("small"))
    pb = metadata_pb2.TopicAssignment.FromString(kv.value)
    pb.partitions[1].replicas.extend([2, 3])
    pb.partitions[2].replicas.extend([3, 1])
    await cluster.etcd.put(cluster.ks.topic("small"), pb.SerializeToString())
    states = await cluster.wait_states("small", 3, lambda s: True)
    assert [states[p].leader_and_isr.leader for p in range(3)] == [1, 2, 3]
    ctx = node.controller.ctx
    assert [ctx.partition_state(TopicPartition("small", p)) for p in range(3)] == [
        PartitionState.ONLINE
    ] * 3
