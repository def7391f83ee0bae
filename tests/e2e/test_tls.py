"""Mutual TLS on every hop, and identities bound to roles and ids (deploy/README.md).

The cluster runs with generated certificates: etcd requires client certificates, and every
service's gRPC port requires one too. A client with a certificate creates a topic, produces and
consumes (client -> admin, client -> broker, controller <-> broker, broker -> broker replication,
every service -> etcd). A client without a certificate, or without TLS, is refused.

Then every RPC of every service is called with every identity (the controller holding the epoch,
another controller, broker 1, broker 2, admin, a plain client): only a controller may call
BrokerControlService and only brokers ControllerService, and a request speaking for a broker or
controller id must come from that id's certificate; everything else is PERMISSION_DENIED, while
the right identity gets through to the service's own checks (harmless requests: stale epochs,
unknown topics). A controller certificate that does not hold etcd's epoch is NOT_CONTROLLER.
"""

from __future__ import annotations

import asyncio
import shutil

import grpc
import pytest

from leasehold import control_stream
from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2, control_pb2, control_pb2_grpc
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
    # The controller on control streams (the default): this cluster's requests to brokers
    # exercise them end to end, under TLS and its per-request checks.
    spec = ClusterSpec(controllers=1, brokers=2, session_ttl=3, tls=True)
    c = LocalCluster(spec, str(workdir))
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


ADMIN_METHODS = [m.name for m in admin_pb2.DESCRIPTOR.services_by_name["AdminService"].methods]
CONTROLLER_1, CONTROLLER_2 = ("controller", 1), ("controller", 2)
BROKER_1, BROKER_2 = ("broker", 1), ("broker", 2)
IDENTITIES = [CONTROLLER_1, CONTROLLER_2, BROKER_1, BROKER_2, ("admin", None), ("client", None)]


def _tp(topic: str = "no-such-topic") -> list:
    return [broker_pb2.FetchTopic(topic=topic, partitions=[broker_pb2.FetchPartition()])]


# (service, method, request, identities allowed through the peer checks). Requests are harmless:
# stale epochs, unknown topics; what the service answers past the checks is not the point.
CALLS = [
    *[("admin.v1.AdminService", m, b"", None) for m in ADMIN_METHODS],
    ("broker.v1.BrokerService", "Metadata", broker_pb2.MetadataRequest(topics=["x"]), None),
    ("broker.v1.BrokerService", "Produce", broker_pb2.ProduceRequest(acks=1), None),
    ("broker.v1.BrokerService", "Fetch", broker_pb2.FetchRequest(replica_id=-1), None),
    ("broker.v1.BrokerService", "Fetch",
     broker_pb2.FetchRequest(replica_id=1, topics=_tp()), {BROKER_1}),
    ("broker.v1.BrokerService", "ListOffsets", broker_pb2.ListOffsetsRequest(replica_id=-1), None),
    ("broker.v1.BrokerService", "ListOffsets", broker_pb2.ListOffsetsRequest(replica_id=1),
     {BROKER_1}),
    ("broker.v1.BrokerService", "OffsetsForLeaderEpoch",
     broker_pb2.OffsetsForLeaderEpochRequest(replica_id=1), {BROKER_1}),
    ("broker.v1.BrokerControlService", "UpdateMetadata",
     control_pb2.UpdateMetadataRequest(controller_id=1, controller_epoch=0), {CONTROLLER_1}),
    ("broker.v1.BrokerControlService", "LeaderAndIsr",
     control_pb2.LeaderAndIsrRequest(controller_id=1, controller_epoch=0), {CONTROLLER_1}),
    ("broker.v1.BrokerControlService", "StopReplica",
     control_pb2.StopReplicaRequest(controller_id=1, controller_epoch=0), {CONTROLLER_1}),
    ("broker.v1.BrokerControlService", "UpdateMetadata",
     control_pb2.UpdateMetadataRequest(controller_id=2, controller_epoch=0), {CONTROLLER_2}),
    ("controller.v1.ControllerService", "ControlledShutdown",
     controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=1), {BROKER_1}),
    ("controller.v1.ControllerService", "AlterPartition",
     controller_pb2.AlterPartitionRequest(broker_id=2, broker_epoch=1, topics=[
         controller_pb2.AlterPartitionTopic(
             topic="no-such-topic", partitions=[controller_pb2.AlterPartitionPartition()])
     ]), {BROKER_2}),
]  # fmt: skip


def _address(cluster: LocalCluster, service: str) -> str:
    if service.startswith("admin"):
        return cluster.admin_address
    if service.startswith("controller"):
        return cluster.controllers[1].address
    return cluster.brokers[1].address


@pytest.mark.parametrize("identity", IDENTITIES, ids=lambda i: "-".join(map(str, i)))
async def test_every_rpc_with_every_identity(cluster, identity):
    certs = cluster.issue(*identity)
    refused, passed = [], []
    for service, method, request, allowed in CALLS:
        name = f"/leasehold.{service}/{method}"
        payload = request if isinstance(request, bytes) else request.SerializeToString()
        async with channel(_address(cluster, service), certs.tls()) as ch:
            try:
                await ch.unary_unary(name)(payload, timeout=10)
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as e:
                code = e.code()
                assert len(e.details() or "") < 1100, (name, e.details())
        assert code != grpc.StatusCode.UNAUTHENTICATED, name
        denied = code == grpc.StatusCode.PERMISSION_DENIED
        may = allowed is None or identity in allowed
        (refused if denied else passed).append(name)
        assert denied != may, f"{identity} calling {name}: {code.name}"
    assert passed  # every identity may at least use the admin and client APIs


# The control stream's requests, each speaking for a controller, and who may send it.
STREAMED = [
    (control_pb2.UpdateMetadataRequest(controller_id=1, controller_epoch=0), {CONTROLLER_1}),
    (control_pb2.LeaderAndIsrRequest(controller_id=2, controller_epoch=0), {CONTROLLER_2}),
    (control_pb2.StopReplicaRequest(controller_id=1, controller_epoch=0), {CONTROLLER_1}),
]


@pytest.mark.parametrize("identity", IDENTITIES, ids=lambda i: "-".join(map(str, i)))
async def test_the_control_stream_checks_the_role_once_and_every_claim(cluster, identity):
    """Only a controller may open it; on it, each request must speak for the certificate's own
    controller id, as its unary call must (the refusal fails that request, not the stream)."""
    certs = cluster.issue(*identity)
    method = "/leasehold.broker.v1.BrokerControlService/Control"
    async with channel(cluster.brokers[1].address, certs.tls()) as ch:
        call = ch.stream_stream(method)()
        if identity[0] != "controller":
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call.read()
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
            return
        for sequence, (request, allowed) in enumerate(STREAMED, 1):
            kind = type(request).__name__.removesuffix("Request")
            await call.write(
                control_stream.encode_request(sequence, kind, request.SerializeToString())
            )
            reply = control_pb2.ControlResponse.FromString(await call.read())
            denied = reply.status_code == grpc.StatusCode.PERMISSION_DENIED.value[0]
            assert denied != (identity in allowed), (kind, reply)
            assert reply.sequence == sequence
            if not denied:  # through the checks to the broker, which answers the stale epoch
                answer = getattr(reply, reply.WhichOneof("response"))
                assert answer.error_code != common_pb2.ERROR_CODE_NONE
        call.cancel()


async def test_a_broker_cannot_shut_another_down(cluster):
    """The issue's attack: broker 2's certificate asking for broker 1's controlled shutdown,
    with broker 1's real epoch, is refused; broker 1 stays in every ISR."""
    async with AdminClient(cluster.admin_address, tls=cluster.client_tls) as admin:
        made = await admin.create_topic("kept", 2, 2, timeout_ms=20_000)
        assert made.error_code == 0, made.error_message
        epochs = {b.broker_id: b.broker_epoch for b in (await admin.describe_cluster()).brokers}
        forged = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=epochs[1])
        async with channel(cluster.controllers[1].address, cluster.issue(*BROKER_2).tls()) as ch:
            stub = controller_pb2_grpc.ControllerServiceStub(ch)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.ControlledShutdown(forged, timeout=5)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "broker 1" in err.value.details() and "broker 2" in err.value.details()

        async def both_in_sync():
            (topic,) = await admin.describe_topics(["kept"])
            return all(sorted(p.isr) == [1, 2] for p in topic.partitions)

        await until(both_in_sync, timeout=20, what="both brokers in every ISR")


async def test_a_controller_not_holding_the_epoch_is_not_obeyed(cluster):
    """Controller 2's own certificate, speaking as itself at etcd's current epoch (held by
    controller 1): through the peer check, refused by the broker's etcd fence."""
    async with AdminClient(cluster.admin_address, tls=cluster.client_tls) as admin:
        epoch = (await admin.describe_cluster()).active_controller.epoch
    request = control_pb2.UpdateMetadataRequest(
        controller_id=2, controller_epoch=epoch, broker_epoch=-1
    )
    async with channel(cluster.brokers[1].address, cluster.issue(*CONTROLLER_2).tls()) as ch:
        resp = await control_pb2_grpc.BrokerControlServiceStub(ch).UpdateMetadata(request)
    assert resp.error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    assert "held by controller 1" in resp.error_message
