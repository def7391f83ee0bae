"""DescribeConfigs / AlterConfigs over topic, broker and cluster-default resources, and
DescribeCluster's view of the controller election."""

from __future__ import annotations

import pytest

from leasehold.admin.v1 import admin_pb2 as a
from leasehold.common.v1 import common_pb2 as c
from leasehold.etcd.client import cmp_create_revision, op_put
from leasehold.metadata.v1 import metadata_pb2

T, B = a.RESOURCE_TYPE_TOPIC, a.RESOURCE_TYPE_BROKER
SET, DELETE = a.CONFIG_OPERATION_SET, a.CONFIG_OPERATION_DELETE
APPEND, SUBTRACT = a.CONFIG_OPERATION_APPEND, a.CONFIG_OPERATION_SUBTRACT


async def alter(admin, rtype, name, *ops, validate_only=False):
    return await admin.stub.AlterConfigs(
        a.AlterConfigsRequest(
            resources=[
                a.AlterConfigsResource(
                    resource=a.ConfigResource(type=rtype, name=name),
                    configs=[a.AlterableConfig(name=k, value=v, operation=o) for k, o, v in ops],
                )
            ],
            validate_only=validate_only,
        )
    )


async def describe(admin, rtype, name) -> dict[str, tuple[str, int]]:
    resp = await admin.stub.DescribeConfigs(
        a.DescribeConfigsRequest(resources=[a.ConfigResource(type=rtype, name=name)])
    )
    return {e.name: (e.value, e.source) for e in resp.results[0].entries}


async def stored(admin, key) -> dict[str, str] | None:
    kv = await admin.etcd.get(key)
    return dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries) if kv else None


@pytest.fixture
async def cluster(admin):
    await admin.register_brokers({1: "", 2: ""})
    await admin.stub.CreateTopics(
        a.CreateTopicsRequest(
            topics=[a.CreatableTopic(name="t", num_partitions=1, replication_factor=1)]
        )
    )
    return admin


async def test_topic_values_resolve_through_the_levels(cluster):
    admin = cluster
    await alter(admin, B, "", ("min.insync.replicas", SET, "2"))
    await alter(admin, T, "t", ("retention.ms", SET, "1000"))
    entries = await describe(admin, T, "t")
    assert entries["retention.ms"] == ("1000", a.CONFIG_SOURCE_TOPIC)
    assert entries["min.insync.replicas"] == ("2", a.CONFIG_SOURCE_CLUSTER_DEFAULT)
    assert entries["cleanup.policy"] == ("delete", a.CONFIG_SOURCE_DEFAULT)
    broker = await describe(admin, B, "1")
    assert broker["min.insync.replicas"] == ("2", a.CONFIG_SOURCE_CLUSTER_DEFAULT)
    await alter(admin, B, "1", ("min.insync.replicas", SET, "1"))
    assert (await describe(admin, B, "1"))["min.insync.replicas"] == ("1", a.CONFIG_SOURCE_BROKER)
    assert await stored(admin, admin.ks.broker_config(None)) == {"min.insync.replicas": "2"}
    assert await stored(admin, admin.ks.broker_config(1)) == {"min.insync.replicas": "1"}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([("follower.replication.throttled.replicas", SET, "0:1")], "0:1"),
        ([("follower.replication.throttled.replicas", APPEND, "0:3,0:1")], "0:1,0:2,0:3"),
        ([("follower.replication.throttled.replicas", SUBTRACT, "0:1")], "0:2"),
        ([("follower.replication.throttled.replicas", DELETE, "")], None),
    ],
    ids=["set", "append", "subtract", "delete"],
)
async def test_incremental_operations(cluster, ops, expected):
    admin = cluster
    await alter(admin, T, "t", ("follower.replication.throttled.replicas", SET, "0:1,0:2"))
    await alter(admin, T, "t", *ops)
    entries = await stored(admin, admin.ks.topic_config("t"))
    if expected is None:
        assert entries is None  # the last override removed: the key is gone
    else:
        assert entries == {"follower.replication.throttled.replicas": expected}


async def test_validate_only_and_per_resource_outcomes(cluster):
    admin = cluster
    before = await admin.revision()
    await alter(admin, T, "t", ("retention.ms", SET, "5"), validate_only=True)
    assert await admin.revision() == before
    response = await admin.stub.AlterConfigs(
            a.AlterConfigsRequest(
                resources=[
                    a.AlterConfigsResource(
                        resource=a.ConfigResource(type=T, name="t"),
                        configs=[a.AlterableConfig(name="retention.ms", value="5", operation=SET)],
                    ),
                    a.AlterConfigsResource(
                        resource=a.ConfigResource(type=B, name="7"),
                        configs=[a.AlterableConfig(name="num.partitions", value="2",
                                                   operation=SET)],
                    ),
                ]
            )
        )  # fmt: skip
    # As Kafka's AlterConfigs: each resource has its own outcome; the valid one is applied.
    outcomes = [(r.error_code, r.error_message) for r in response.results]
    assert outcomes == [
        (c.ERROR_CODE_NONE, ""),
        (c.ERROR_CODE_BROKER_NOT_AVAILABLE, "Broker 7 is not registered."),
    ]
    assert (await describe(admin, T, "t"))["retention.ms"][0] == "5"


async def test_describe_cluster_names_the_oldest_candidate_active(cluster):
    admin = cluster
    prefix = admin.ks.controller_election_prefix
    for cid, lease_hex in ((2, b"a1"), (1, b"b2"), (3, b"c3")):  # campaign order 2, 1, 3
        reg = metadata_pb2.ControllerRegistration(
            controller_id=cid, host="127.0.0.1", port=9190 + cid
        )
        res = await admin.etcd.txn(
            [cmp_create_revision(prefix + lease_hex, "=", 0)],
            [op_put(prefix + lease_hex, reg.SerializeToString())],
        )
        assert res.succeeded
    await admin.etcd.put(
        admin.ks.controller_epoch,
        metadata_pb2.ControllerEpoch(epoch=5, controller_id=2).SerializeToString(),
    )
    resp = await admin.stub.DescribeCluster(a.DescribeClusterRequest())
    ctl = resp.active_controller
    assert (ctl.controller_id, ctl.port, ctl.epoch) == (2, 9192, 5)
    assert list(resp.standby_controller_ids) == [1, 3]
    assert [(b.broker_id, b.port) for b in resp.brokers] == [(1, 9101), (2, 9102)]
    epochs = [b.broker_epoch for b in resp.brokers]
    assert epochs == [
        (await admin.etcd.get(admin.ks.broker(1))).create_revision,
        (await admin.etcd.get(admin.ks.broker(2))).create_revision,
    ]
    # The winner has not bumped the epoch yet (the stored epoch is its predecessor's): epoch 0.
    await admin.etcd.delete(prefix + b"a1")
    resp = await admin.stub.DescribeCluster(a.DescribeClusterRequest())
    assert (resp.active_controller.controller_id, resp.active_controller.epoch) == (1, 0)
