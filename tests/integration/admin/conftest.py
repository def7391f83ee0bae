"""The admin service in-process against the real etcd, and stand-ins for the other services.

There is no controller or broker here: tests register brokers and write partition states and
operation results themselves, exactly the keys the real services write (contracts 2, 5 and 6),
so every admin behaviour can be checked against etcd directly.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import grpc
import pytest

from leasehold.admin.v1 import admin_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.config import CommonConfig
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import op_delete, op_put
from leasehold.metadata.v1 import metadata_pb2
from services.admin.app import AdminApp
from services.admin.config import AdminConfig, Limits

SEED = 20240601


@dataclass
class Harness:
    stub: admin_pb2_grpc.AdminServiceStub
    etcd: EtcdClient
    ks: Keyspace
    app: AdminApp
    address: str

    async def revision(self) -> int:
        _, rev = await self.etcd.get_with_revision(self.ks.controller_epoch)
        return rev

    async def register_brokers(self, racks: dict[int, str]) -> None:
        for broker_id, rack in racks.items():
            reg = metadata_pb2.BrokerRegistration(
                broker_id=broker_id, host="127.0.0.1", port=9100 + broker_id, rack=rack
            )
            await self.etcd.put(self.ks.broker(broker_id), reg.SerializeToString())

    async def set_state(self, topic: str, partition: int, leader: int, isr, **fields) -> int:
        state = metadata_pb2.PartitionState(
            leader=leader, leader_epoch=fields.pop("leader_epoch", 0), isr=isr, **fields
        )
        key = self.ks.partition_state(topic, partition)
        return await self.etcd.put(key, state.SerializeToString())

    async def assignment(self, topic: str) -> metadata_pb2.TopicAssignment | None:
        kv = await self.etcd.get(self.ks.topic(topic))
        return metadata_pb2.TopicAssignment.FromString(kv.value) if kv else None

    @staticmethod
    async def eventually(check, timeout: float = 10.0, interval: float = 0.05):
        """Poll ``check`` (async, truthy when done) until it holds or time runs out."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = await check()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("condition not met in time")
            await asyncio.sleep(interval)

    async def finish(self, request_id: str, intent_keys, results=(), operation=0) -> None:
        """Stand in for the controller: write the result and delete the intents, in one txn."""
        result = metadata_pb2.AdminResult(
            request_id=request_id,
            operation=operation,
            results=[
                common_pb2.PartitionError(topic=t, partition=p, error_code=c, error_message=m)
                for t, p, c, m in results
            ],
            completed_at_ms=1234,
        )
        ops = [op_put(self.ks.result(request_id), result.SerializeToString())]
        ops += [op_delete(k) for k in intent_keys]
        res = await self.etcd.txn([], ops)
        assert res.succeeded


@pytest.fixture
async def admin(etcd_endpoint, keyspace, etcd):
    config = AdminConfig(
        common=CommonConfig(
            etcd_endpoints=(etcd_endpoint,),
            cluster_id=keyspace.cluster_id,
            port=0,
            grace_seconds=0.2,
        ),
        limits=Limits(max_partitions_per_topic=1000, max_wait_ms=20_000),
    )
    app = AdminApp(config, rng=lambda: random.Random(SEED))
    runner = app.runner()
    port = await runner.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    harness = Harness(
        admin_pb2_grpc.AdminServiceStub(channel), etcd, keyspace, app, f"127.0.0.1:{port}"
    )
    yield harness
    await channel.close()
    await runner.stop()
