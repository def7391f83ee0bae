"""The walking skeleton, end to end with real processes (issue "Foundation").

etcd, two controllers, three broker agents and admin run as separate processes. A topic is
created through the CLI, described, the active controller is SIGKILLed, and the standby must take
over with a higher epoch while the topic is still described correctly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e
TTL = 3


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(ClusterSpec(controllers=2, brokers=3, session_ttl=TTL))
    try:
        c.start()
        yield c
    finally:
        c.stop()
        c.remove_workdir()


def cli(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LEASEHOLD_ADMIN=cluster.admin_address)
    return subprocess.run(
        [str(Path(sys.executable).parent / "leasehold"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def describe_cluster(cluster: LocalCluster) -> admin_pb2.DescribeClusterResponse:
    async with grpc.aio.insecure_channel(cluster.admin_address) as ch:
        return await admin_pb2_grpc.AdminServiceStub(ch).DescribeCluster(
            admin_pb2.DescribeClusterRequest(), timeout=5
        )


async def describe_topic(cluster: LocalCluster, name: str) -> admin_pb2.TopicDescription:
    async with grpc.aio.insecure_channel(cluster.admin_address) as ch:
        resp = await admin_pb2_grpc.AdminServiceStub(ch).DescribeTopics(
            admin_pb2.DescribeTopicsRequest(topics=[name]), timeout=5
        )
    return resp.topics[0]


async def test_create_describe_failover(cluster):
    # Three brokers register and one controller is active.
    async def ready():
        d = await describe_cluster(cluster)
        return d if len(d.brokers) == 3 and d.active_controller.controller_id > 0 else None

    first = await until(ready, timeout=30, what="3 brokers and an active controller")
    assert first.active_controller.epoch >= 1
    assert len(first.standby_controller_ids) == 1

    created = cli(
        cluster, "topics", "create", "demo", "--partitions", "6", "--replication-factor", "3"
    )
    assert created.returncode == 0, created.stdout + created.stderr

    async def online():
        t = await describe_topic(cluster, "demo")
        ok = len(t.partitions) == 6 and all(p.leader > 0 and len(p.isr) == 3 for p in t.partitions)
        return t if ok else None

    topic = await until(online, timeout=30, what="all partitions online")
    for p in topic.partitions:
        assert sorted(p.replicas) == [1, 2, 3]
        assert p.leader == p.replicas[0], "the first live replica leads a new partition"
        assert p.leader_epoch == 0 and p.partition_epoch > 0
        assert p.controller_epoch == first.active_controller.epoch

    described = cli(cluster, "topics", "describe", "demo")
    assert described.returncode == 0 and "demo" in described.stdout
    shown = cli(cluster, "cluster", "describe")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert str(first.active_controller.controller_id) in shown.stdout

    # Every broker learnt the partitions and the controller through UpdateMetadata.
    for proc in cluster.brokers.values():

        async def metadata(addr=proc.address):
            async with grpc.aio.insecure_channel(addr) as ch:
                m = await broker_pb2_grpc.BrokerServiceStub(ch).Metadata(
                    broker_pb2.MetadataRequest(topics=["demo"]), timeout=5
                )
            ok = (
                m.controller_id == first.active_controller.controller_id
                and len(m.topics) == 1
                and len(m.topics[0].partitions) == 6
                and all(p.leader > 0 for p in m.topics[0].partitions)
            )
            return m if ok else None

        await until(metadata, timeout=20, what=f"metadata on {proc.name}")

    # SIGKILL the active controller: the standby takes over within the lease TTL plus a margin.
    active = cluster.controllers[first.active_controller.controller_id]
    killed_at = time.monotonic()
    active.kill()

    async def new_controller():
        d = await describe_cluster(cluster)
        c = d.active_controller
        moved = c.controller_id not in (0, first.active_controller.controller_id)
        return d if moved and c.epoch > first.active_controller.epoch else None

    after = await until(new_controller, timeout=TTL + 10, what="standby takeover")
    assert time.monotonic() - killed_at < TTL + 10
    assert after.active_controller.epoch == first.active_controller.epoch + 1

    # The topic is still described correctly: same replicas and leaders, nothing lost.
    again = await describe_topic(cluster, "demo")
    assert [list(p.replicas) for p in again.partitions] == [
        list(p.replicas) for p in topic.partitions
    ]
    assert all(p.leader > 0 and len(p.isr) == 3 for p in again.partitions)
