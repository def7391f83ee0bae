"""The broker's view of the controller epoch from a real etcd, and the confirmations a plaintext
broker asks etcd for (``services/broker_agent/control_fence.py``)."""

from __future__ import annotations

import asyncio
import contextlib

from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.wait import until
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.model import (
    Code,
    LeaderAndIsrPartition,
    StopReplicaPartition,
    TopicPartition,
)


async def _put_epoch(etcd, keyspace, epoch: int, holder: int) -> None:
    value = metadata_pb2.ControllerEpoch(epoch=epoch, controller_id=holder).SerializeToString()
    await etcd.put(keyspace.controller_epoch, value)


def _state(topic: str, partition: int, leader: int, leader_epoch: int) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition(topic, partition, leader, leader_epoch, (1, 2), (1, 2))


async def test_the_fence_follows_etcd_and_refuses_what_etcd_does_not_show(etcd, keyspace):
    await _put_epoch(etcd, keyspace, 3, holder=1)
    fence = ControlFence(etcd, keyspace, broker_id=2, confirm_in_etcd=True)
    task = asyncio.create_task(fence.run())
    try:
        await asyncio.wait_for(fence.loaded.wait(), 10)
        assert (fence.epoch, fence.holder) == (3, 1)
        assert await fence.check("UpdateMetadata", 3, 1) is None
        code, message = await fence.check("UpdateMetadata", 1000, 1)
        assert code == Code.NOT_CONTROLLER and "1000 is not in etcd" in message
        assert (await fence.check("LeaderAndIsr", 3, 9))[0] == Code.NOT_CONTROLLER
        assert (await fence.check("StopReplica", 2, 1))[0] == Code.STALE_CONTROLLER_EPOCH
        # A new controller's epoch: seen by the watch, or read at once by the first request
        # that carries it (the watch may lag the controller's own bump).
        await _put_epoch(etcd, keyspace, 4, holder=2)
        assert await fence.check("UpdateMetadata", 4, 2) is None
        assert (await fence.check("UpdateMetadata", 3, 1))[0] == Code.STALE_CONTROLLER_EPOCH
        await _put_epoch(etcd, keyspace, 5, holder=1)  # no request carries it: the watch

        async def watched() -> bool:
            return (fence.epoch, fence.holder) == (5, 1)

        await until(watched, timeout=5, what="the watch")

        # Leader changes apply only as etcd shows them.
        state = metadata_pb2.PartitionState(leader=1, leader_epoch=5, isr=[1, 2])
        await etcd.put(keyspace.partition_state("t", 0), state.SerializeToString())
        assert await fence.unconfirmed_leaders([_state("gone", 0, 1, 1)]) == {
            TopicPartition("gone", 0): Code.FENCED_LEADER_EPOCH
        }
        assert await fence.unconfirmed_leaders([_state("t", 0, 1, 5)]) == {}
        assert await fence.unconfirmed_leaders([_state("t", 0, 2, 99)]) == {
            TopicPartition("t", 0): Code.FENCED_LEADER_EPOCH
        }
        many = [_state("wide", p, 1, 1) for p in range(40)]  # read as one range
        for p in range(0, 40, 2):
            await etcd.put(
                keyspace.partition_state("wide", p),
                metadata_pb2.PartitionState(leader=1, leader_epoch=1).SerializeToString(),
            )
        assert set(await fence.unconfirmed_leaders(many)) == {
            TopicPartition("wide", p) for p in range(1, 40, 2)
        }

        # Deletions apply only when etcd no longer assigns the replica here.
        assignment = metadata_pb2.TopicAssignment(topic_id="x")
        assignment.partitions[0].replicas.extend([1, 2])
        assignment.partitions[1].replicas.extend([1, 3])
        await etcd.put(keyspace.topic("t"), assignment.SerializeToString())
        asks = [
            StopReplicaPartition("t", 0, delete=True),
            StopReplicaPartition("t", 1, delete=True),
            StopReplicaPartition("t", 0, delete=False),
            StopReplicaPartition("absent", 0, delete=True),
        ]
        assert await fence.unconfirmed_deletions(asks) == {TopicPartition("t", 0)}
        await etcd.put(keyspace.delete_topic("t"), b"")
        assert await fence.unconfirmed_deletions(asks) == set()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
