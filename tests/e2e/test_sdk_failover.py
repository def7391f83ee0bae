"""The SDK rides out a partition leader's death on a real cluster.

A producer (acks=all) and a consumer work on a replicated partition; the leader broker is
SIGKILLed between two bursts. The producer must retry until the controller has elected a new
leader (after the dead broker's lease expires) and the consumer must continue from its position on
the new leader: every record is read back once, in order.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from cli_e2e_harness import running_cluster

from leasehold.client import AdminClient, Consumer, Producer
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e


async def leader_of(admin: AdminClient, topic: str) -> tuple[int, int]:
    (desc,) = await admin.describe_topics([topic])
    return desc.partitions[0].leader, desc.partitions[0].leader_epoch


async def read(consumer: Consumer, count: int, timeout: float) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        values += [r.value for r in await consumer.poll(timeout_ms=500)]
    return values


def test_producer_and_consumer_follow_a_new_leader():
    # The controllers on unary calls (``--no-control-stream``), so that wire too carries a
    # cluster end to end, through a failover.
    unary = {"LEASEHOLD_CONTROL_STREAM": "false"}
    spec = ClusterSpec(controllers=2, brokers=3, session_ttl=3, extra_env=unary)
    with running_cluster(spec) as cluster:

        async def scenario():
            admin = AdminClient(cluster.admin_address)
            created = await admin.create_topic(
                "ha", 1, 3, configs={"min.insync.replicas": "2"}, timeout_ms=20_000
            )
            assert created.error_code == 0, created.error_message
            producer = Producer(admin=cluster.admin_address, acks="all", retry_backoff_ms=200)
            consumer = Consumer(admin=cluster.admin_address, max_wait_ms=200)
            try:
                first = [await producer.send("ha", f"a{i}".encode()) for i in range(10)]
                await producer.flush()
                assert [(await f).offset for f in first] == list(range(10))
                await consumer.assign([("ha", 0)], "earliest")
                assert await read(consumer, 10, 20) == [f"a{i}".encode() for i in range(10)]

                old_leader, old_epoch = await leader_of(admin, "ha")
                cluster.brokers[old_leader].kill()
                second = [await producer.send("ha", f"b{i}".encode()) for i in range(10)]
                await producer.flush()
                assert [(await f).offset for f in second] == list(range(10, 20))
                new_leader, new_epoch = await leader_of(admin, "ha")
                assert new_leader not in (old_leader, -1) and new_epoch > old_epoch

                assert await read(consumer, 10, 30) == [f"b{i}".encode() for i in range(10)]
                assert consumer.position("ha", 0) == 20
            finally:
                await producer.close()
                await consumer.close()
                await admin.close()

        asyncio.run(scenario())
