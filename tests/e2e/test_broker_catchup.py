"""Followers that were down: ISR shrink, catch-up, rejoin; restart from the leader's log start.

- A follower that stops fetching is removed from the ISR by the leader after
  ``replica.lag.time.max.ms`` (AlterPartition to the controller); when it comes back it catches
  up and the leader asks for it to be added again.
- If the leader deleted old segments meanwhile (retention), the returning follower's offset is
  below the leader's log start: the fetch is OFFSET_OUT_OF_RANGE, and the follower drops its log
  and restarts from the leader's log start offset (fetchOffsetAndTruncate).
"""

from __future__ import annotations

import pytest
from broker_e2e_harness import (
    BrokerCluster,
    ControllerDouble,
    produce,
    read_log,
    set_topic_config,
    wait_for,
)

from leasehold.broker.v1 import broker_pb2
from services.broker_agent.model import Code

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ENV = {
    "LEASEHOLD_REPLICA_LAG_TIME_MAX_MS": "1500",
    "LEASEHOLD_REPLICA_FETCH_BACKOFF_MS": "200",
    "LEASEHOLD_REPLICA_FETCH_WAIT_MAX_MS": "300",
    "LEASEHOLD_LOG_RETENTION_CHECK_INTERVAL_MS": "200",
    "LEASEHOLD_CONTROLLED_SHUTDOWN_ENABLE": "false",
    "LEASEHOLD_GRACE_SECONDS": "1",
}


async def ok(stub, topic, values, acks=-1):
    resp = await produce(stub, topic, 0, values, acks=acks)
    assert resp.error_code == Code.NONE, resp
    return resp.base_offset


async def earliest(stub, topic) -> int:
    resp = await stub.ListOffsets(
        broker_pb2.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=topic,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=0, current_leader_epoch=-1, timestamp=-2
                        )
                    ],
                )
            ],
        )
    )
    p = resp.topics[0].partitions[0]
    assert p.error_code == Code.NONE
    return p.offset


async def test_follower_down_for_a_while_catches_up_and_rejoins_the_isr():
    topic = "catchup"
    cluster = BrokerCluster(env=dict(ENV))
    ctl = ControllerDouble(cluster)
    try:
        await cluster.start([1, 2, 3])
        await ctl.start()
        await ctl.elect(topic, 0, leader=1, isr=[1, 2, 3], replicas=[1, 2, 3])
        for i in range(20):
            await ok(ctl.client(1), topic, [f"a{i}".encode()])

        cluster.kill(3)
        # A follower that holds everything is in sync however long it is silent (Kafka's
        # rule); once the leader has data broker 3 does not fetch, the lag clock runs and the
        # leader shrinks the ISR through the controller.
        await ok(ctl.client(1), topic, [b"b0"], acks=1)
        await wait_for(lambda: set(ctl.state(topic, 0).isr) == {1, 2}, timeout=20, what="shrink")
        assert (1, topic, 0, (1, 2)) in ctl.alter_requests
        for i in range(1, 50):
            await ok(ctl.client(1), topic, [f"b{i}".encode()])

        await cluster.start_broker(3)
        await ctl.update_metadata()
        assert await ctl.send_state(topic, 0, to=[3]) == {3: Code.NONE}
        await wait_for(lambda: set(ctl.state(topic, 0).isr) == {1, 2, 3}, timeout=20, what="rejoin")
        assert (1, topic, 0, (1, 2, 3)) in ctl.alter_requests
        await ok(ctl.client(1), topic, [b"last"])
        for b in (1, 2, 3):
            cluster.kill(b)
        logs = [read_log(cluster.data_dir(b), topic, 0) for b in (1, 2, 3)]
        assert logs[0] == logs[1] == logs[2]
        assert len(logs[0][1]) == 71
    finally:
        await ctl.close()
        await cluster.close()


async def test_follower_below_the_leaders_log_start_restarts_from_it():
    topic = "logstart"
    cluster = BrokerCluster(env=dict(ENV))
    ctl = ControllerDouble(cluster)
    try:
        await cluster.start([1, 2])
        await ctl.start()
        await set_topic_config(cluster, topic, {"segment.bytes": "1024", "retention.bytes": "2048"})
        await ctl.elect(topic, 0, leader=1, isr=[1, 2], replicas=[1, 2])
        for i in range(5):
            await ok(ctl.client(1), topic, [f"early{i}".encode()])

        cluster.kill(2)
        await ok(ctl.client(1), topic, [b"late"], acks=1)
        await wait_for(lambda: set(ctl.state(topic, 0).isr) == {1}, timeout=20, what="shrink")
        payload = b"x" * 200
        for _ in range(60):
            await ok(ctl.client(1), topic, [payload])
        # Retention on the leader deletes whole old segments: its log now starts past 5.
        start = await wait_for(
            lambda: _above(earliest(ctl.client(1), topic), 5), timeout=20, what="retention"
        )

        await cluster.start_broker(2)
        await ctl.update_metadata()
        await ctl.send_state(topic, 0, to=[2])
        await wait_for(lambda: set(ctl.state(topic, 0).isr) == {1, 2}, timeout=20, what="rejoin")
        await ok(ctl.client(1), topic, [b"last"])
        cluster.kill(1)
        cluster.kill(2)
        leader_start, leader_batches = read_log(cluster.data_dir(1), topic, 0)
        follower_start, follower_batches = read_log(cluster.data_dir(2), topic, 0)
        # The follower dropped its old records (offsets 0..4) and began at a log start the
        # leader had; since then both may have applied retention further.
        assert follower_start >= start > 5
        assert not any(b"early" in batch for batch in follower_batches)
        common = min(len(leader_batches), len(follower_batches))
        assert common > 0
        assert leader_batches[-common:] == follower_batches[-common:]
        assert leader_batches[-1] == follower_batches[-1]
    finally:
        await ctl.close()
        await cluster.close()


async def _above(offset_coro, floor: int) -> int | None:
    offset = await offset_coro
    return offset if offset > floor else None
