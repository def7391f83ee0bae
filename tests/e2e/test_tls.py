"""Mutual TLS on every hop, and peer roles from certificates (issue 6, deploy/README.md).

The cluster runs with generated certificates: etcd requires client certificates, and every
service's gRPC port requires one too. A client with a certificate creates a topic, produces and
consumes (client -> admin, client -> broker, controller <-> broker, broker -> broker replication,
every service -> etcd). A client without a certificate, or without TLS, is refused. Only the
controller identity may call BrokerControlService and only brokers ControllerService: any other
certificate is PERMISSION_DENIED, while the right identity gets through to the service's own
checks (which answer an in-band error and change nothing).
"""

from __future__ import annotations

import asyncio
import shutil

import grpc
import pytest

from leasehold.broker.v1 import control_pb2, control_pb2_grpc
from leasehold.channels import channel
from leasehold.client.admin import AdminClient
from leasehold.client.consumer import Consumer
from leasehold.client.producer import Producer
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.etcd import EtcdClient, EtcdError
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tls-cluster")
    c = LocalCluster(ClusterSpec(controllers=1, brokers=2, session_ttl=3, tls=True), str(workdir))
    try:
        c.start()
        asyncio.run(_ready(c))
        yield c
    finally:
        for proc in c.brokers.values():  # no controlled shutdown: the tests are over
            proc.kill()
        c.stop()
        shutil.rmtree(workdir, ignore_errors=True)


async def _ready(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.admin_address, tls=cluster.client_tls) as admin:

        async def ready():
            described = await admin.describe_cluster()
            return len(described.brokers) == 2 and described.active_controller.controller_id == 1

        await until(ready, timeout=30, what="two brokers and the controller, over TLS")


async def test_the_cluster_works_end_to_end_over_mutual_tls(cluster):
    tls = cluster.client_tls
    async with AdminClient(cluster.admin_address, tls=tls) as admin:
        made = await admin.create_topic("secure", 1, 2, timeout_ms=20_000)
        assert made.error_code == 0, made.error_message
    async with Producer(admin=cluster.admin_address, tls=tls, acks="all") as producer:
        for i in range(3):
            await producer.send_and_wait("secure", f"m{i}".encode(), partition=0)
    async with Consumer(admin=cluster.admin_address, tls=tls) as consumer:
        await consumer.assign([("secure", 0)], "earliest")
        got: list[bytes] = []

        async def all_read():
            got.extend(r.value for r in await consumer.poll(timeout_ms=500))
            return len(got) >= 3

        await until(all_read, timeout=20, what="the three records")
    assert got == [b"m0", b"m1", b"m2"]
    # The follower replicated over broker -> broker TLS: both replicas are in the ISR.
    async with AdminClient(cluster.admin_address, tls=tls) as admin:

        async def in_sync():
            (topic,) = await admin.describe_topics(["secure"])
            return sorted(topic.partitions[0].isr) == [1, 2]

        await until(in_sync, timeout=20, what="the follower in the ISR")


@pytest.mark.parametrize(
    "how",
    ["plaintext", "tls without a client certificate"],
)
async def test_a_client_without_a_certificate_is_refused(cluster, how):
    ca_only = None if how == "plaintext" else TlsConfig(ca=cluster.client_certs.ca)
    async with channel(cluster.admin_address, ca_only) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await ch.unary_unary("/leasehold.admin.v1.AdminService/DescribeCluster")(b"", timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_etcd_refuses_a_client_without_a_certificate(cluster):
    certs = cluster.client_certs
    plain = EtcdClient([cluster.etcd.endpoint], timeout=2)
    await plain.connect()
    try:
        with pytest.raises(EtcdError):
            await plain.get(b"/leasehold")
    finally:
        await plain.close()
    mutual = EtcdClient([cluster.etcd.endpoint], tls=certs.etcd(), timeout=5)
    await mutual.connect()
    try:
        assert await mutual.get(b"/no-such-key") is None
    finally:
        await mutual.close()


STALE_UPDATE = control_pb2.UpdateMetadataRequest(
    controller_id=1, controller_epoch=0, broker_epoch=-1
)


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("client", grpc.StatusCode.PERMISSION_DENIED),
        ("broker", grpc.StatusCode.PERMISSION_DENIED),
        ("admin", grpc.StatusCode.PERMISSION_DENIED),
        ("controller", grpc.StatusCode.OK),
    ],
)
async def test_only_the_controller_identity_may_call_broker_control(cluster, role, expected):
    certs = cluster.ca.issue_role(role, 7)
    async with channel(cluster.brokers[1].address, certs.tls()) as ch:
        stub = control_pb2_grpc.BrokerControlServiceStub(ch)
        if expected == grpc.StatusCode.OK:
            # Through the role check, and then fenced by the broker's own epoch check.
            resp = await stub.UpdateMetadata(STALE_UPDATE, timeout=5)
            assert resp.error_code == common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH
            return
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.UpdateMetadata(STALE_UPDATE, timeout=5)
    assert err.value.code() == expected
    assert "controller" in err.value.details()


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("client", grpc.StatusCode.PERMISSION_DENIED),
        ("controller", grpc.StatusCode.PERMISSION_DENIED),
        ("broker", grpc.StatusCode.OK),
    ],
)
async def test_only_brokers_may_call_the_controller_service(cluster, role, expected):
    certs = cluster.ca.issue_role(role, 8)
    request = controller_pb2.ControlledShutdownRequest(broker_id=99, broker_epoch=-1)
    async with channel(cluster.controllers[1].address, certs.tls()) as ch:
        stub = controller_pb2_grpc.ControllerServiceStub(ch)
        if expected == grpc.StatusCode.OK:
            resp = await stub.ControlledShutdown(request, timeout=5)
            assert resp.error_code == common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE
            return
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ControlledShutdown(request, timeout=5)
    assert err.value.code() == expected
