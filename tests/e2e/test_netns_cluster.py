"""The cluster on test hosts: every process in its own network namespace with its own address.

Three etcd members, two controllers, three broker agents and admin each run on a host of a
:class:`~leasehold.testing.netns.NetnsLab`, binding and advertising the host's address (plaintext:
see :mod:`leasehold.testing.netns_cluster` on TLS). Clients bootstrap
from admin and reach every broker at the address it advertises; replication crosses the bridge.
The lab is removed afterwards (namespaces, veths, bridge), also when the test fails.
"""

from __future__ import annotations

import subprocess

import pytest

from leasehold.client import AdminClient, Consumer, Producer
from leasehold.testing.cluster import ClusterSpec
from leasehold.testing.netns import NetnsLab, unavailable_reason
from leasehold.testing.netns_cluster import NetnsCluster
from leasehold.testing.wait import until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(bool(unavailable_reason()), reason=unavailable_reason() or "ok"),
]


@pytest.fixture
def hosts(tmp_path):
    with NetnsLab() as lab:
        spec = ClusterSpec(controllers=2, brokers=3, session_ttl=3)
        cluster = NetnsCluster(spec, lab, workdir=str(tmp_path / "cluster"))
        try:
            cluster.start()
            yield lab, cluster
        finally:
            cluster.stop()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"lh{lab.id}-" not in names, "the lab's namespaces outlived it"


async def test_each_service_serves_and_advertises_its_own_address(hosts):
    lab, cluster = hosts
    tls = None
    addresses = {p.name: p.host for p in cluster.processes()}
    addresses.update({h.name: h.ip for h in cluster.etcd.hosts})
    assert len(set(addresses.values())) == len(addresses) == 9
    assert all(ip.startswith(f"{lab.subnet}.") for ip in addresses.values())

    async with AdminClient(cluster.admin_address, tls=tls) as admin:
        described = await admin.describe_cluster()
        advertised = {b.broker_id: b.host for b in described.brokers}
        assert advertised == {b: cluster.brokers[b].host for b in (1, 2, 3)}
        made = await admin.create_topic(
            "hosts", 3, 3, configs={"min.insync.replicas": "2"}, timeout_ms=20_000
        )
        assert made.error_code == 0, made.error_message

    async with Producer(admin=cluster.admin_address, tls=tls, acks="all") as producer:
        for i in range(6):
            await producer.send_and_wait("hosts", f"m{i}".encode(), partition=i % 3)
    async with Consumer(admin=cluster.admin_address, tls=tls) as consumer:
        await consumer.assign([("hosts", p) for p in range(3)], "earliest")
        got: list[bytes] = []

        async def all_read():
            got.extend(r.value for r in await consumer.poll(timeout_ms=500))
            return len(got) >= 6

        await until(all_read, timeout=20, what="the six records")
    assert sorted(got) == [f"m{i}".encode() for i in range(6)]

    async with AdminClient(cluster.admin_address, tls=tls) as admin:

        async def replicated():
            (topic,) = await admin.describe_topics(["hosts"])
            return all(len(p.isr) == 3 for p in topic.partitions)

        await until(replicated, timeout=20, what="every replica in the ISR across hosts")
