"""Forged control requests against a plaintext (``--insecure``) cluster, and the issue's
oversized inputs: what once poisoned a broker or grew a service now changes nothing.

Without TLS a request's ``controller_id`` is only a claim. The broker checks each control
request against the controller epoch etcd shows (``control_fence``): an epoch nobody won, an
older one, or a sender that is not the epoch's holder is refused as a whole; a request copying
etcd's epoch and holder may still not make a follower lead (its leader and leader epoch must be
etcd's) nor delete a replica etcd still assigns. Each forgery leaves the broker's client view
(Metadata, log start/end offsets) and its partition files as they were, and the real controller
is obeyed afterwards: a new topic gets its leaders, a produce replicates to the follower.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import grpc
import pytest
from click.testing import CliRunner

from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc, control_pb2, control_pb2_grpc
from leasehold.cli.main import build_cli
from leasehold.client.admin import AdminClient
from leasehold.client.producer import Producer
from leasehold.common.v1 import common_pb2
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

TOPIC = "guarded"
NOT_CONTROLLER = common_pb2.ERROR_CODE_NOT_CONTROLLER
STALE = common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("forged-cluster")
    c = LocalCluster(ClusterSpec(controllers=1, brokers=2, session_ttl=3), str(workdir))
    try:
        c.start()
        asyncio.run(_prepare(c))
        yield c
    finally:
        for proc in c.brokers.values():
            proc.kill()
        c.stop()
        shutil.rmtree(workdir, ignore_errors=True)


async def _prepare(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.admin_address) as admin:
        made = await admin.create_topic(TOPIC, assignment={0: [1, 2]}, timeout_ms=20_000)
        assert made.error_code == 0, made.error_message

        async def in_sync():
            (topic,) = await admin.describe_topics([TOPIC])
            return sorted(topic.partitions[0].isr) == [1, 2]

        await until(in_sync, timeout=20, what="both replicas in sync")
    async with Producer(admin=cluster.admin_address, acks="all") as producer:
        for i in range(3):
            await producer.send_and_wait(TOPIC, f"m{i}".encode(), partition=0)


async def _epoch(cluster: LocalCluster) -> tuple[int, int]:
    """(epoch, holder) as etcd shows them."""
    async with EtcdClient([cluster.etcd.endpoint]) as etcd:
        kv = await etcd.get(Keyspace(cluster.spec.cluster_id).controller_epoch)
    record = metadata_pb2.ControllerEpoch.FromString(kv.value)
    return record.epoch, record.controller_id


async def _view(address: str) -> tuple[bytes, ...]:
    """What a broker tells clients: Metadata and the log start and end offsets of TOPIC-0."""
    async with grpc.aio.insecure_channel(address) as ch:
        stub = broker_pb2_grpc.BrokerServiceStub(ch)
        meta = await stub.Metadata(broker_pb2.MetadataRequest(all_topics=True), timeout=10)
        out = [meta.SerializeToString(deterministic=True)]
        for ts in (-2, -1):
            ask = broker_pb2.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    broker_pb2.ListOffsetsTopic(
                        topic=TOPIC, partitions=[broker_pb2.ListOffsetsPartition(timestamp=ts)]
                    )
                ],
            )
            resp = await stub.ListOffsets(ask, timeout=10)
            out.append(resp.SerializeToString(deterministic=True))
    return tuple(out)


def _files(cluster: LocalCluster, broker: int) -> set[str]:
    root = cluster.workdir / f"broker-{broker}"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in (".log", "")}


async def _control(address: str, method: str, request):
    async with grpc.aio.insecure_channel(address) as ch:
        return await getattr(control_pb2_grpc.BrokerControlServiceStub(ch), method)(
            request, timeout=10
        )


def _lai(holder: int, epoch: int, leader: int, leader_epoch: int):
    state = control_pb2.LeaderAndIsrPartitionState(
        topic=TOPIC,
        partition=0,
        controller_epoch=epoch,
        leader=leader,
        leader_epoch=leader_epoch,
        isr=[leader],
        replicas=[1, 2],
        partition_epoch=1,
    )
    return control_pb2.LeaderAndIsrRequest(
        controller_id=holder, controller_epoch=epoch, broker_epoch=-1, partition_states=[state]
    )


async def _leader(cluster: LocalCluster) -> tuple[int, int]:
    async with AdminClient(cluster.admin_address) as admin:
        (topic,) = await admin.describe_topics([TOPIC])
    p = topic.partitions[0]
    return p.leader, p.leader_epoch


async def test_forged_control_requests_change_nothing(cluster):
    epoch, holder = await _epoch(cluster)
    leader, leader_epoch = await _leader(cluster)
    follower = 2 if leader == 1 else 1
    address = cluster.brokers[follower].address
    before, files = await _view(address), _files(cluster, follower)
    forged = [
        # The issue's poisoning: an epoch nobody won, then one just ahead.
        ("UpdateMetadata", control_pb2.UpdateMetadataRequest(
            controller_id=holder, controller_epoch=1000, broker_epoch=-1), NOT_CONTROLLER),
        ("LeaderAndIsr", _lai(holder, epoch + 1, follower, leader_epoch + 1), NOT_CONTROLLER),
        # A sender that does not hold etcd's epoch.
        ("UpdateMetadata", control_pb2.UpdateMetadataRequest(
            controller_id=holder + 98, controller_epoch=epoch, broker_epoch=-1), NOT_CONTROLLER),
        ("LeaderAndIsr", _lai(holder + 98, epoch, follower, 99), NOT_CONTROLLER),
        # A superseded epoch.
        ("StopReplica", control_pb2.StopReplicaRequest(
            controller_id=holder, controller_epoch=epoch - 1, broker_epoch=-1), STALE),
    ]  # fmt: skip
    for method, request, code in forged:
        answer = await _control(address, method, request)
        assert answer.error_code == code, (method, answer)
        if code == NOT_CONTROLLER:
            assert f"etcd: epoch {epoch}, held by controller {holder}" in answer.error_message
    # Copying etcd's epoch and holder: the request passes, its leader epoch jump does not.
    jump = await _control(address, "LeaderAndIsr", _lai(holder, epoch, follower, 99))
    assert jump.error_code == common_pb2.ERROR_CODE_NONE
    assert [e.error_code for e in jump.partition_errors] == [
        common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH
    ]
    delete = control_pb2.StopReplicaRequest(
        controller_id=holder,
        controller_epoch=epoch,
        broker_epoch=-1,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=TOPIC, partition=0, leader_epoch=-2, delete_partition=True
            )
        ],
    )
    deleted = await _control(address, "StopReplica", delete)
    assert [e.error_code for e in deleted.partition_errors] == [NOT_CONTROLLER]
    assert await _view(address) == before
    assert _files(cluster, follower) == files
    assert await _leader(cluster) == (leader, leader_epoch)
    # The follower does not take writes; the leader's replicate to it; the real controller is
    # still obeyed (a new topic gets leaders on both brokers).
    async with grpc.aio.insecure_channel(address) as ch:
        produce = broker_pb2.ProduceRequest(
            acks=1,
            timeout_ms=5000,
            topics=[
                broker_pb2.TopicProduceData(
                    topic=TOPIC,
                    partitions=[
                        broker_pb2.PartitionProduceData(
                            records=[broker_pb2.Record(value=b"x")], current_leader_epoch=-1
                        )
                    ],
                )
            ],
        )
        answer = await broker_pb2_grpc.BrokerServiceStub(ch).Produce(produce, timeout=10)
    code = answer.topics[0].partitions[0].error_code
    assert code == common_pb2.ERROR_CODE_NOT_LEADER_OR_FOLLOWER
    async with Producer(admin=cluster.admin_address, acks="all") as producer:
        await producer.send_and_wait(TOPIC, b"after", partition=0)
    async with AdminClient(cluster.admin_address) as admin:
        made = await admin.create_topic("after-forgery", 2, 2, timeout_ms=20_000)
        assert made.error_code == 0, made.error_message
        (topic,) = await admin.describe_topics(["after-forgery"])
        assert all(p.leader in (1, 2) and len(p.isr) == 2 for p in topic.partitions), topic


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def test_the_issues_oversized_requests_are_refused_short_fast_and_flat(cluster):
    """DescribeTopics of a 100,000-character name, 20 topics x 50,000 partitions, 1,000,000
    explicit assignments (past the receive limit) and 150,000 (under it): each a short error in
    well under a second; the admin service's memory stays where it was."""
    huge_assignment = [
        admin_pb2.ReplicaAssignment(partition=p, broker_ids=[1]) for p in range(1_000_000)
    ]
    asks = [
        ("DescribeTopics", admin_pb2.DescribeTopicsRequest(topics=["n" * 100_000]),
         grpc.StatusCode.INVALID_ARGUMENT),
        ("CreateTopics", admin_pb2.CreateTopicsRequest(topics=[
            admin_pb2.CreatableTopic(name=f"wide-{i}", num_partitions=50_000, replication_factor=1)
            for i in range(20)]), grpc.StatusCode.INVALID_ARGUMENT),
        ("CreateTopics", admin_pb2.CreateTopicsRequest(topics=[
            admin_pb2.CreatableTopic(name="explicit", assignments=huge_assignment)]),
         grpc.StatusCode.RESOURCE_EXHAUSTED),
        ("CreateTopics", admin_pb2.CreateTopicsRequest(topics=[
            admin_pb2.CreatableTopic(name="explicit", assignments=huge_assignment[:150_000])]),
         grpc.StatusCode.INVALID_ARGUMENT),
    ]  # fmt: skip
    pid = cluster.admin.pid
    before = _rss_mb(pid)
    async with grpc.aio.insecure_channel(cluster.admin_address) as ch:
        stub = admin_pb2_grpc.AdminServiceStub(ch)
        for _ in range(3):
            for method, request, code in asks:
                started = time.monotonic()
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await getattr(stub, method)(request, timeout=10)
                took = time.monotonic() - started
                assert err.value.code() == code, (method, err.value.details())
                assert len(err.value.details()) < 400, err.value.details()
                assert took < 2.0, (method, took)
        # The same channel still works after them (a too-long status header broke it).
        await stub.ListTopics(admin_pb2.ListTopicsRequest(), timeout=10)
    after = _rss_mb(pid)
    load = os.getloadavg()[0]
    print(
        f"\nadmin RSS {before:.0f} MB -> {after:.0f} MB after 12 oversized requests (load {load})"
    )
    assert after - before < 64


def test_the_cli_shows_the_validation_error_in_one_line(cluster):
    result = CliRunner().invoke(
        build_cli(), ["--admin", cluster.admin_address, "topics", "describe", "n" * 100_000]
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Topic name is invalid" in lines[0], result.output[:500]
    assert len(lines[0]) < 600
