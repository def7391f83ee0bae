"""KIP-279: replicas diverge after back-to-back leader changes unless truncation is epoch-aware.

KIP-101 made a follower truncate at the offset where the leader says the follower's latest epoch
ends. If leadership went A -> B -> A quickly, the leader (A) may never have heard of B's epoch;
it answers with the end of the largest epoch it knows below it, and a follower that trusted only
the offset would keep records of an epoch the leader never had. KIP-279 has the leader return
that epoch too; the follower then truncates to where *that* epoch ends in its own log (asking
again if it does not know the epoch).

The sequence (the test plays the controller):

- epoch 1, leader 1: m1 replicated to both; m2 on broker 1 only;
- epoch 2, leader 2 (broker 1 down): m3, m4 at offsets 1 and 2 on broker 2;
- epoch 3, leader 1 (broker 2 down): m5 at offset 2 on broker 1.

Broker 2 then follows broker 1 and asks where epoch 2 ends. Broker 1 knows epochs 1 and 3 and
answers "epoch 1 ends at 2"; the offset alone would keep broker 2's m3 at offset 1, while
broker 1 has m2 there. Epoch 1 ends at 1 in broker 2's log, so it must truncate to 1.
"""

from __future__ import annotations

import pytest
from broker_e2e_harness import (
    BrokerCluster,
    ControllerDouble,
    consume_all,
    produce,
    read_log,
    wait_for,
)

from services.broker_agent.model import Code

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ENV = {
    "LEASEHOLD_REPLICA_LAG_TIME_MAX_MS": "3000",
    "LEASEHOLD_REPLICA_FETCH_BACKOFF_MS": "200",
    "LEASEHOLD_REPLICA_FETCH_WAIT_MAX_MS": "300",
    "LEASEHOLD_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS": "200",
    "LEASEHOLD_CONTROLLED_SHUTDOWN_ENABLE": "false",
    "LEASEHOLD_GRACE_SECONDS": "1",
}
T = "kip279"


async def ok(stub, values, acks=-1):
    resp = await produce(stub, T, 0, values, acks=acks)
    assert resp.error_code == Code.NONE, resp
    return resp.base_offset


async def test_back_to_back_leader_changes_leave_identical_logs():
    cluster = BrokerCluster(env=dict(ENV))
    ctl = ControllerDouble(cluster)
    try:
        await cluster.start([1, 2])
        await ctl.start()
        await ctl.elect(T, 0, leader=1, isr=[1, 2], replicas=[1, 2])
        assert await ok(ctl.client(1), [b"m1"]) == 0

        cluster.kill(2)
        assert await ok(ctl.client(1), [b"m2"], acks=1) == 1

        cluster.kill(1)
        await cluster.start_broker(2)
        await ctl.elect(T, 0, leader=2, isr=[2], to=[2])
        assert await ok(ctl.client(2), [b"m3"], acks=1) == 1
        assert await ok(ctl.client(2), [b"m4"], acks=1) == 2

        cluster.kill(2)
        await cluster.start_broker(1)
        await ctl.elect(T, 0, leader=1, isr=[1], to=[1])
        assert await ok(ctl.client(1), [b"m5"], acks=1) == 2

        await cluster.start_broker(2)
        await ctl.update_metadata()
        await ctl.send_state(T, 0, to=[2])
        await wait_for(lambda: set(ctl.state(T, 0).isr) == {1, 2}, timeout=30, what="ISR [1, 2]")
        assert await ok(ctl.client(1), [b"m6"]) == 3
        values = [v for _, v in await consume_all(ctl.client(1), T, 0)]
        assert values == [b"m1", b"m2", b"m5", b"m6"]
        cluster.kill(1)
        cluster.kill(2)
        one, two = read_log(cluster.data_dir(1), T, 0), read_log(cluster.data_dir(2), T, 0)
        assert one == two
        assert len(one[1]) == 4
    finally:
        await ctl.close()
        await cluster.close()
