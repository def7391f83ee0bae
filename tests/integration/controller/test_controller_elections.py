"""Preferred and unclean election on request, auto leader rebalance, controlled shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import grpc
from ctlharness import catch_up, eventually

from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.metadata.v1 import metadata_pb2

E = common_pb2


async def _setup(cluster, brokers=(1, 2, 3), **overrides):
    for b in brokers:
        await cluster.add_broker(b)
    node = await cluster.add_controller(1, **overrides)
    await cluster.active()
    return node


async def _bounce_leader_away(cluster, node, topic, partitions):
    """Broker 1 dies and returns; broker 2 or 3 leads; the leaders re-admit 1 to the ISR."""
    b1 = cluster.brokers[1]
    await b1.deregister()
    await cluster.wait_states(topic, partitions, lambda s: s.leader_and_isr.leader != 1)
    await b1.register(cluster.etcd, cluster.ks)
    await eventually(lambda: 1 in node.controller.ctx.live_broker_ids, 10, "broker 1 back")
    for p in range(partitions):
        s = await cluster.state(topic, p)
        resp = await catch_up(cluster, node, topic, p, sorted({*s.leader_and_isr.isr, 1}))
        assert resp.topics[0].partitions[0].error_code == 0


async def _elect(cluster, request_id, partitions, kind=E.ELECTION_TYPE_PREFERRED):
    intent = metadata_pb2.ElectionIntent(
        election_type=kind,
        partitions=[E.TopicPartition(topic=t, partition=p) for t, p in partitions],
        request_id=request_id,
    )
    await cluster.etcd.put(cluster.ks.election(request_id), intent.SerializeToString())
    result = await cluster.wait_result(request_id)
    assert await cluster.etcd.get(cluster.ks.election(request_id)) is None
    return {(r.topic, r.partition): r.error_code for r in result.results}


async def test_preferred_election_on_request(cluster):
    node = await _setup(cluster)
    await cluster.create_topic("p", {0: [1, 2, 3], 1: [2, 3, 1]})
    await cluster.wait_states("p", 2, lambda s: True)
    await _bounce_leader_away(cluster, node, "p", 2)
    assert (await cluster.state("p", 0)).leader_and_isr.leader == 2
    got = await _elect(cluster, "el-1", [("p", 0), ("p", 1), ("p", 9)])
    assert got == {
        ("p", 0): E.ERROR_CODE_NONE,
        ("p", 1): E.ERROR_CODE_ELECTION_NOT_NEEDED,
        ("p", 9): E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
    }
    s = (await cluster.state("p", 0)).leader_and_isr
    assert s.leader == 1 and set(s.isr) == {1, 2, 3}
    # The preferred replica out of the ISR cannot lead.
    await cluster.create_topic("q", {0: [3, 1]})
    await cluster.wait_states("q", 1, lambda s: True)
    await cluster.brokers[3].deregister()
    await cluster.wait_states("q", 1, lambda s: s.leader_and_isr.leader == 1)
    await cluster.brokers[3].register(cluster.etcd, cluster.ks)
    got = await _elect(cluster, "el-2", [("q", 0)])
    assert got == {("q", 0): E.ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE}


async def test_unclean_election_on_request(cluster):
    await _setup(cluster, brokers=(1, 2))
    await cluster.create_topic("u", {0: [1, 2]})
    await cluster.wait_states("u", 1, lambda s: True)
    await cluster.brokers[2].deregister()
    await cluster.wait_states("u", 1, lambda s: s.leader_and_isr.isr == (1,))
    await cluster.brokers[1].deregister()
    await cluster.wait_states("u", 1, lambda s: s.leader_and_isr.leader == -1)
    await cluster.brokers[2].register(cluster.etcd, cluster.ks)
    await asyncio.sleep(0.3)
    assert (await cluster.state("u", 0)).leader_and_isr.leader == -1  # unclean is off
    got = await _elect(cluster, "el-u", [("u", 0)], E.ELECTION_TYPE_UNCLEAN)
    assert got == {("u", 0): E.ERROR_CODE_NONE}
    lai = (await cluster.state("u", 0)).leader_and_isr
    assert (lai.leader, lai.isr, lai.recovering) == (2, (2,), True)
    got = await _elect(cluster, "el-u2", [("u", 0)], E.ELECTION_TYPE_UNCLEAN)
    assert got == {("u", 0): E.ERROR_CODE_ELECTION_NOT_NEEDED}


async def test_auto_rebalance_moves_leaders_back(cluster):
    await cluster.etcd.put(
        cluster.ks.broker_config(None),
        metadata_pb2.ConfigEntries(
            entries={"auto.leader.rebalance.enable": "false"}
        ).SerializeToString(),
    )
    node = await _setup(cluster, rebalance_interval_s=0.2, rebalance_initial_delay_s=0.2)
    await cluster.create_topic("a", {0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 3, 1]})
    await cluster.wait_states("a", 3, lambda s: True)
    await _bounce_leader_away(cluster, node, "a", 3)
    await asyncio.sleep(1.0)  # several checks while disabled: nothing moves
    leaders = [(await cluster.state("a", p)).leader_and_isr.leader for p in range(3)]
    assert leaders[0] != 1 and leaders[1] != 1
    await cluster.etcd.put(
        cluster.ks.broker_config(None),
        metadata_pb2.ConfigEntries(
            entries={
                "auto.leader.rebalance.enable": "true",
                "leader.imbalance.per.broker.percentage": "10",
            }
        ).SerializeToString(),
    )
    await cluster.wait_states("a", 3, lambda s: s.leader_and_isr.leader in (1, 2), timeout=10)
    states = {p: (await cluster.state("a", p)).leader_and_isr.leader for p in range(3)}
    assert states == {0: 1, 1: 1, 2: 2}


async def _shutdown(node, broker_id, broker_epoch):
    async with grpc.aio.insecure_channel(node.address) as ch:
        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        return await stub.ControlledShutdown(
            controller_pb2.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch)
        )


async def test_controlled_shutdown_moves_leadership_away(cluster):
    node = await _setup(cluster)
    standby = await cluster.add_controller(2)
    await cluster.create_topic("s", {0: [1, 2, 3], 1: [2, 1, 3], 2: [3, 1, 2]})
    await cluster.create_topic("single", {0: [1]})
    await cluster.wait_states("s", 3, lambda s: True)
    await cluster.wait_states("single", 1, lambda s: True)
    b1 = cluster.brokers[1]
    stale = await _shutdown(node, 1, b1.epoch - 1)
    assert stale.error_code == E.ERROR_CODE_STALE_BROKER_EPOCH
    assert (await _shutdown(node, 42, -1)).error_code == E.ERROR_CODE_BROKER_NOT_AVAILABLE
    assert (await _shutdown(standby, 1, b1.epoch)).error_code == E.ERROR_CODE_NOT_CONTROLLER
    mark = len(b1.calls)
    resp = await _shutdown(node, 1, b1.epoch)
    assert resp.error_code == 0 and list(resp.remaining_partitions) == []
    # The answer follows the leadership moves' commit; broker 1 leaves the ISRs of the
    # partitions it follows in the same event, once the other brokers have answered the moves.
    assert (await cluster.state("s", 0)).leader_and_isr.leader == 2

    async def leaders_and_isrs() -> dict[int, tuple[int, tuple[int, ...]]]:
        states = {p: (await cluster.state("s", p)).leader_and_isr for p in range(3)}
        return {p: (s.leader, tuple(s.isr)) for p, s in states.items()}

    moved = {0: (2, (2, 3)), 1: (2, (2, 3)), 2: (3, (3, 2))}
    await eventually(lambda: _equal(leaders_and_isrs(), moved), 10, "ISRs without broker 1")
    # The RF=1 partition stays with broker 1 and is not reported as still led.
    assert (await cluster.state("single", 0)).leader_and_isr.leader == 1
    await eventually(
        lambda: any(c.kind == "StopReplica" for c in b1.calls[mark:]), 10, "StopReplica"
    )
    stopped = {
        (s.topic, s.partition, s.delete_partition)
        for c in b1.calls[mark:]
        if c.kind == "StopReplica"
        for s in c.request.partition_states
    }
    assert stopped == {("s", 1, False), ("s", 2, False)}
    # KIP-841: the shutting-down broker cannot rejoin an ISR.
    resp = await catch_up(cluster, node, "s", 0, [1, 2, 3])
    assert resp.topics[0].partitions[0].error_code == E.ERROR_CODE_INELIGIBLE_REPLICA
    await b1.deregister()
    await eventually(lambda: 1 not in node.controller.ctx.shutting_down_broker_ids, 10, "cleared")


async def _equal(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def test_shutdown_without_other_isr_member_reports_partitions_still_led(cluster):
    node = await _setup(cluster, brokers=(1, 2))
    await cluster.create_topic("l", {0: [1, 2]})
    await cluster.wait_states("l", 1, lambda s: True)
    await cluster.brokers[2].deregister()
    await cluster.wait_states("l", 1, lambda s: s.leader_and_isr.isr == (1,))
    await cluster.brokers[2].register(cluster.etcd, cluster.ks)
    await eventually(lambda: 2 in node.controller.ctx.live_broker_ids, 10, "broker 2 back")
    resp = await _shutdown(node, 1, cluster.brokers[1].epoch)
    assert [(p.topic, p.partition) for p in resp.remaining_partitions] == [("l", 0)]


async def test_shutdown_of_the_last_live_replica_does_not_make_it_wait(cluster):
    # Broker 2 is gone: nothing the last broker waits for can move its leadership, so the
    # answer lets it stop at once (as when a whole cluster is stopped).
    node = await _setup(cluster, brokers=(1, 2))
    await cluster.create_topic("last", {0: [1, 2]})
    await cluster.wait_states("last", 1, lambda s: True)
    await cluster.brokers[2].deregister()
    await eventually(lambda: 2 not in node.controller.ctx.live_broker_ids, 10, "broker 2 gone")
    resp = await _shutdown(node, 1, cluster.brokers[1].epoch)
    assert (resp.error_code, list(resp.remaining_partitions)) == (0, [])
