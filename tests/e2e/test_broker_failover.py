"""acks=all survives the loss of the partition leader (RF=3, min.insync.replicas=2).

A producer writes continuously, one record per request, each value unique and never retried
(so a record appears at most once). The leader is killed with SIGKILL mid-stream; the test, as
controller, elects another ISR member. Afterwards every acknowledged record must be readable, in
the order it was acknowledged, exactly once; the killed broker comes back, catches up and
rejoins the ISR; a SIGTERM then moves leadership away through controlled shutdown; and all
three replicas end with byte-identical logs.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from broker_e2e_harness import (
    BrokerCluster,
    ControllerDouble,
    consume_all,
    produce,
    read_log,
    set_topic_config,
    wait_for,
)

from services.broker_agent.model import Code

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ENV = {
    "LEASEHOLD_REPLICA_LAG_TIME_MAX_MS": "4000",
    "LEASEHOLD_REPLICA_FETCH_BACKOFF_MS": "200",
    "LEASEHOLD_REPLICA_FETCH_WAIT_MAX_MS": "300",
    "LEASEHOLD_CONTROLLED_SHUTDOWN_TIMEOUT_MS": "10000",
    "LEASEHOLD_CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS": "200",
    "LEASEHOLD_GRACE_SECONDS": "1",
}
T = "failover"


async def produce_continuously(cluster, ctl, acked: list, stop: asyncio.Event) -> int:
    attempts = 0
    while not stop.is_set():
        value = f"v{attempts:06d}".encode()
        attempts += 1
        leader = ctl.state(T, 0).leader
        if not cluster.is_up(leader):
            await asyncio.sleep(0.05)
            continue
        try:
            resp = await produce(ctl.client(leader), T, 0, [value], acks=-1, timeout_ms=3000)
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)
            continue
        if resp.error_code == Code.NONE:
            acked.append((resp.base_offset, value))
        else:
            await asyncio.sleep(0.05)
    return attempts


async def test_acknowledged_records_survive_leader_kill():
    cluster = BrokerCluster(env=dict(ENV))
    ctl = ControllerDouble(cluster)
    stop = asyncio.Event()
    producer = None
    try:
        await cluster.start([1, 2, 3])
        await ctl.start()
        await set_topic_config(cluster, T, {"min.insync.replicas": "2"})
        await ctl.elect(T, 0, leader=1, isr=[1, 2, 3], replicas=[1, 2, 3])

        acked: list[tuple[int, bytes]] = []
        producer = asyncio.create_task(produce_continuously(cluster, ctl, acked, stop))
        await wait_for(lambda: len(acked) >= 30, timeout=30, what="30 acknowledged records")

        cluster.kill(1)
        before_failover = len(acked)
        await ctl.elect(T, 0, leader=2, isr=[2, 3], to=[2, 3])
        await wait_for(lambda: len(acked) >= before_failover + 30, timeout=30, what="30 more")

        await cluster.start_broker(1)
        await ctl.update_metadata()
        await ctl.send_state(T, 0, to=[1])
        await wait_for(lambda: set(ctl.state(T, 0).isr) == {1, 2, 3}, timeout=30, what="ISR")
        await wait_for(lambda: len(acked) >= before_failover + 50, timeout=30, what="20 more")
        stop.set()
        attempts = await producer
        producer = None

        records = await consume_all(ctl.client(ctl.state(T, 0).leader), T, 0)
        values = [v for _, v in records]
        assert len(values) == len(set(values)), "a record appears twice"
        position = {v: i for i, v in enumerate(values)}
        missing = [v for _, v in acked if v not in position]
        assert missing == []
        assert [position[v] for _, v in acked] == sorted(position[v] for _, v in acked)
        assert [offset for offset, _ in acked] == [records[position[v]][0] for _, v in acked]
        assert len(acked) <= attempts

        # SIGTERM the leader: controlled shutdown moves leadership before it stops.
        assert await asyncio.to_thread(cluster.terminate, 2) == 0
        assert ctl.state(T, 0).leader in (1, 3)
        after = await consume_all(ctl.client(ctl.state(T, 0).leader), T, 0)
        assert after == records
        for b in (1, 3):
            cluster.kill(b)
        logs = [read_log(cluster.data_dir(b), T, 0) for b in (1, 2, 3)]
        assert logs[0] == logs[1] == logs[2]
        assert len(logs[0][1]) == len(records)
    finally:
        stop.set()
        if producer is not None:
            producer.cancel()
        await ctl.close()
        await cluster.close()
