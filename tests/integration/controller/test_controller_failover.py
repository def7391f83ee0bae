"""Election, epochs, failover order, hot standby, resignation and fencing of a zombie."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from ctlharness import eventually

from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.etcd.fenced import FencedError, Write, commit
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.model import LEADER_DURING_DELETE, MetadataPartition, UpdateMetadata
from services.controller.core import TopicPartition
from services.controller.events import ControllerEvent


async def _epoch(cluster) -> int:
    kv = await cluster.etcd.get(cluster.ks.controller_epoch)
    return metadata_pb2.ControllerEpoch.FromString(kv.value).epoch


def _first_calls_of_epoch(broker, epoch: int) -> list[str]:
    return [c.kind for c in broker.calls if c.request.controller_epoch == epoch]


async def test_failover_order_epochs_and_hot_standby(cluster, tmp_path):
    for b in (1, 2, 3):
        await cluster.add_broker(b)
    log1, log2 = tmp_path / "sc1.log", tmp_path / "sc2.log"
    first = await cluster.add_controller(1, state_change_log=str(log1))
    assert await cluster.active() is first
    second = await cluster.add_controller(2, state_change_log=str(log2))
    await cluster.create_topic("demo", {0: [1, 2, 3], 1: [2, 3, 1]})
    await cluster.wait_states("demo", 2, lambda s: True)
    assert await _epoch(cluster) == 1

    # The standby's context follows etcd without being active (hot standby).
    async def warm() -> bool:
        st = await cluster.state("demo", 1)
        got = second.controller.ctx.leader_and_isr(TopicPartition("demo", 1))
        return got == st.leader_and_isr

    await eventually(warm, 10, "standby context to follow etcd")
    assert not second.controller.active

    # Every request of the first controller answered: the brokers' caches are what it knows.
    async def told() -> bool:
        return first.controller.channels.total_queue_size() == 0 and all(
            cluster.brokers[b].metadata.has_topic("demo") for b in (1, 2, 3)
        )

    await eventually(told, 10, "the brokers to have every request of the first controller")
    # Broker 3's cache loses a partition (as if an UpdateMetadata never reached it).
    lost = MetadataPartition("demo", 1, LEADER_DURING_DELETE, 0, (), ())
    cluster.brokers[3].metadata.update(UpdateMetadata(1, 1, 0, (lost,), live_brokers=()))

    await first.crash()
    assert await cluster.active(timeout=15) is second
    assert await _epoch(cluster) == 2
    assert second.controller.epoch == 2
    assert second.app.watcher.loads == 1, "failover must not reload the cluster"
    # Per broker, the new controller's first request is UpdateMetadata, before any LeaderAndIsr
    # of the new epoch. It carries only the digest of every partition: brokers 1 and 2, kept up
    # to date by the old controller, take it; broker 3 refuses it and is sent every partition,
    # and then LeaderAndIsr of its replicas. Brokers 1 and 2 had answered every LeaderAndIsr
    # before the UpdateMetadata their digest covers: the failover resends them none.
    # The failover done (its requests all queued) and broker 3's LeaderAndIsr answered: any
    # resent to brokers 1 and 2, queued with it, would have reached them too.
    await eventually(lambda: '"event":"failover_done"' in log2.read_text())
    await eventually(lambda: "LeaderAndIsr" in _first_calls_of_epoch(cluster.brokers[3], 2))
    for b in (1, 2, 3):
        broker = cluster.brokers[b]
        kinds = _first_calls_of_epoch(broker, 2)
        if b == 3:
            first_lai = kinds.index("LeaderAndIsr")
            assert kinds[:first_lai] == ["UpdateMetadata"] * 2, kinds
        else:
            assert "LeaderAndIsr" not in kinds and kinds[:1] == ["UpdateMetadata"], kinds
        ums = [c for c in broker.calls if c.request.controller_epoch == 2]
        um = ums[0].request
        assert ums[0].applied == (b != 3) and not um.partition_states
        assert um.metadata_digest == broker.metadata.digest()
        if b == 3:
            assert {(s.topic, s.partition) for s in ums[1].request.partition_states} == {
                ("demo", 0),
                ("demo", 1),
            }
        held = {(t, p.partition) for t in broker.metadata.topics()
                for p in broker.metadata.describe([t]).topics[0].partitions}  # fmt: skip
        assert held == {("demo", 0), ("demo", 1)}
        # The live brokers by the digest of the set, which every broker already holds.
        assert not um.live_brokers and um.live_brokers_base == broker.metadata.brokers_digest()
        assert [e.broker_id for e in broker.metadata.alive_brokers()] == [1, 2, 3]
        assert um.controller_port == int(second.address.rsplit(":", 1)[1])
        assert broker.metadata.controller_epoch == 2

    # Graceful resignation hands over at once, with a higher epoch again.
    third = await cluster.add_controller(3)
    await asyncio.sleep(0.3)
    await second.stop()
    assert await cluster.active(timeout=5) is third
    assert await _epoch(cluster) == 3

    records = [json.loads(line) for line in log2.read_text().splitlines()]
    lifecycle = [(r["event"], r["controller_epoch"]) for r in records if r["kind"] == "controller"]
    assert lifecycle == [
        ("elected", 2),
        ("metadata_pushed", 2),
        ("failover_done", 2),
        ("resigned", 2),
    ]
    elected, pushed, done = (
        next(r for r in records if r["event"] == e)
        for e in ("elected", "metadata_pushed", "failover_done")
    )
    assert done["duration_ms"] > 0
    # The push began after the win was handled, and ended within the failover.
    assert elected["ts_ms"] <= pushed["ts_ms"] <= done["ts_ms"]
    assert 0 <= pushed["duration_ms"] <= done["duration_ms"]


class _Freeze(ControllerEvent):
    pass


async def test_zombie_controller_changes_nothing(cluster):
    for b in (1, 2):
        await cluster.add_broker(b)
    zombie = await cluster.add_controller(1)
    assert await cluster.active() is zombie
    standby = await cluster.add_controller(2)
    await cluster.create_topic("z", {0: [1, 2]})
    before = (await cluster.wait_states("z", 1, lambda s: s.leader_and_isr.isr == (1, 2)))[0]
    old_fence = zombie.controller.store.fence

    # "Pause" the active controller: its event loop blocks and its keep-alive stops.
    gate = asyncio.Event()
    real = zombie.controller.handle

    async def handle(event):
        if isinstance(event, _Freeze):
            await gate.wait()
        else:
            await real(event)

    zombie.controller.handle = handle
    zombie.app.events.put(_Freeze())
    await zombie.app.election.session.abandon()

    async def standby_active() -> bool:
        return standby.controller.active

    await eventually(standby_active, 15, "the standby to take over")
    assert await _epoch(cluster) == 2

    # While paused, a broker's AlterPartition reaches the zombie (it still believes it leads).
    async with grpc.aio.insecure_channel(zombie.address) as ch:
        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        lai = before.leader_and_isr
        req = controller_pb2.AlterPartitionRequest(
            broker_id=1,
            broker_epoch=cluster.brokers[1].epoch,
            topics=[
                controller_pb2.AlterPartitionTopic(
                    topic="z",
                    partitions=[
                        controller_pb2.AlterPartitionPartition(
                            partition=0,
                            leader_epoch=lai.leader_epoch,
                            partition_epoch=lai.partition_epoch,
                            new_isr_with_epochs=[
                                controller_pb2.BrokerState(broker_id=1, broker_epoch=-1)
                            ],
                        )
                    ],
                )
            ],
        )
        pending = asyncio.ensure_future(stub.AlterPartition(req))
        await asyncio.sleep(0.2)
        gate.set()  # resume the zombie
        resp = await asyncio.wait_for(pending, 10)
    assert resp.error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    assert not zombie.controller.active
    after = await cluster.state("z", 0)
    assert after.leader_and_isr.isr == (1, 2)
    assert after.leader_and_isr.controller_epoch <= 2
    # Its old fence cannot write anything any more.
    key = cluster.ks.partition_state("z", 0)
    with pytest.raises(FencedError):
        await commit(
            cluster.etcd, old_fence, [Write(key, b"zombie", after.leader_and_isr.partition_epoch)]
        )
    assert (await cluster.state("z", 0)).leader_and_isr == after.leader_and_isr
    # It resigned: no channels to brokers, no fence, and it campaigns again as a standby.
    assert zombie.controller.channels is None and zombie.controller.store.fence is None
    assert standby.controller.active and await _epoch(cluster) == 2


async def test_revoked_lease_fences_the_controller(cluster):
    await cluster.add_broker(1)
    first = await cluster.add_controller(1)
    assert await cluster.active() is first
    second = await cluster.add_controller(2)
    await cluster.create_topic("v", {0: [1]})
    state = (await cluster.wait_states("v", 1, lambda s: True))[0]
    fence = first.controller.store.fence
    await cluster.etcd.lease_revoke(first.app.election.session.lease_id)
    await eventually(
        lambda: second.controller.active and not first.controller.active, 10, "the takeover"
    )
    assert await _epoch(cluster) == 2
    key = cluster.ks.partition_state("v", 0)
    epoch = state.leader_and_isr.partition_epoch
    with pytest.raises(FencedError):  # the compare on the election key / epoch fails
        await commit(cluster.etcd, fence, [Write(key, b"stale", epoch)])
    assert (await cluster.state("v", 0)).leader_and_isr == state.leader_and_isr
    assert first.controller.store.fence is None and not first.controller.active
