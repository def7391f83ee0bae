"""A paused follower does not fail the leader's pending acks=all write.

A follower is SIGSTOPped past its session TTL while an acks=all record waits for it: the
controller takes the follower out of the ISR (with a new leader epoch, the leader unchanged)
and the record, held by the leader and the other follower, is acknowledged by that very
request. Before, the new epoch failed the wait with NOT_LEADER_OR_FOLLOWER, the producer
retried, and the record was stored twice.
"""

from __future__ import annotations

import asyncio

import pytest
from cli_e2e_harness import running_cluster

from leasehold.broker.v1 import broker_pb2
from leasehold.client import AdminClient, ClusterMetadata
from leasehold.common.v1 import common_pb2
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e


def one_record(value: bytes) -> broker_pb2.ProduceRequest:
    return broker_pb2.ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topics=[
            broker_pb2.TopicProduceData(
                topic="stall",
                partitions=[
                    broker_pb2.PartitionProduceData(
                        partition=0,
                        current_leader_epoch=-1,
                        records=[broker_pb2.Record(value=value)],
                    )
                ],
            )
        ],
    )


def test_a_pending_acks_all_write_survives_a_paused_follower():
    with running_cluster(ClusterSpec(controllers=1, brokers=3, session_ttl=3)) as cluster:

        async def scenario():
            async with AdminClient(cluster.admin_address) as admin:
                made = await admin.create_topic(
                    "stall", 1, 3, configs={"min.insync.replicas": "2"}, timeout_ms=20_000
                )
                assert made.error_code == 0, made.error_message
                (desc,) = await admin.describe_topics(["stall"])
                part = desc.partitions[0]
                leader, epoch = part.leader, part.leader_epoch
                paused = next(r for r in part.replicas if r != leader)
            metadata = ClusterMetadata(cluster.admin_address)
            await metadata.refresh(["stall"])
            stub = metadata.stub(leader)
            # CreateTopics answers once the leaders are elected in etcd, as Kafka's does once
            # its controller has them: the leader may not have its LeaderAndIsr yet, and a
            # producer retries UNKNOWN_TOPIC_OR_PARTITION until it has.
            for _ in range(200):
                first = (await stub.Produce(one_record(b"before"))).topics[0].partitions[0]
                if first.error_code != common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION:
                    break
                await asyncio.sleep(0.05)
            assert first.error_code == common_pb2.ERROR_CODE_NONE
            cluster.brokers[paused].pause()
            try:
                answer = await asyncio.wait_for(stub.Produce(one_record(b"during")), 40)
            finally:
                cluster.brokers[paused].resume()
            result = answer.topics[0].partitions[0]
            assert (result.error_code, result.base_offset) == (common_pb2.ERROR_CODE_NONE, 1)
            async with AdminClient(cluster.admin_address) as admin:
                (desc,) = await admin.describe_topics(["stall"])
            part = desc.partitions[0]
            # The follower left the ISR under a new epoch while the leader stayed.
            assert part.leader == leader and part.leader_epoch > epoch
            await metadata.close()

        asyncio.run(scenario())
