"""Broker registration (contract 2): leased key, broker epoch, duplicate ids, session loss."""

from __future__ import annotations

import asyncio
import time

import pytest
from broker_harness import leader_and_isr, partition_state, start_broker

from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent import registration
from services.broker_agent.model import Code, Endpoint
from services.broker_agent.registration import BrokerIdInUseError


async def until(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_registration_key_and_broker_epoch(brokers, etcd, keyspace):
    b = await brokers(7, rack="rack-a")
    kv = await etcd.get(keyspace.broker(7))
    reg = metadata_pb2.BrokerRegistration()
    reg.ParseFromString(kv.value)
    assert (reg.broker_id, reg.host, reg.port, reg.rack) == (
        7,
        "127.0.0.1",
        b.runner.port,
        "rack-a",
    )
    assert b.epoch == kv.create_revision
    assert kv.lease == b.agent.registration.session.lease_id != 0


async def test_a_live_broker_id_cannot_be_registered_twice(
    brokers, etcd_endpoint, keyspace, tmp_path
):
    await brokers(3)
    with pytest.raises(BrokerIdInUseError):
        await start_broker(etcd_endpoint, keyspace.cluster_id, 3, tmp_path / "twin")


async def test_session_loss_registers_again_with_a_new_epoch(brokers, etcd, keyspace):
    b = await brokers(4)
    old_epoch = b.epoch
    await etcd.lease_revoke(b.agent.registration.session.lease_id)

    async def registered_again():
        kv = await etcd.get(keyspace.broker(4))
        return kv is not None and kv.create_revision > old_epoch and b.epoch == kv.create_revision

    await until(registered_again)
    state = partition_state("t", 0, leader=4, leader_epoch=1, replicas=[4])
    stale = await b.control.LeaderAndIsr(leader_and_isr(b, [state], broker_epoch=old_epoch))
    assert stale.error_code == Code.STALE_BROKER_EPOCH
    fresh = await b.control.LeaderAndIsr(leader_and_isr(b, [state]))
    assert fresh.error_code == Code.NONE


async def test_stopping_revokes_the_registration(etcd_endpoint, etcd, keyspace, tmp_path):
    b = await start_broker(etcd_endpoint, keyspace.cluster_id, 5, tmp_path / "b5")
    assert await etcd.get(keyspace.broker(5)) is not None
    await b.stop()
    assert await etcd.get(keyspace.broker(5)) is None


async def test_a_session_expired_before_its_key_is_written_is_replaced(etcd, keyspace, monkeypatch):
    """A starting broker whose lease expires between its grant and its key's write (a TTL
    without CPU) registers with a new session rather than failing its start."""
    expired: list[int] = []
    real_start = registration.Session.start

    async def start_then_expire(self):
        started = await real_start(self)
        if not expired:  # the first session only, as if its TTL passed unrenewed
            expired.append(self.lease_id)
            await etcd.lease_revoke(self.lease_id)
        return started

    monkeypatch.setattr(registration.Session, "start", start_then_expire)
    reg = registration.Registration(etcd, keyspace, Endpoint(9, "127.0.0.1", 1, ""), 3)
    try:
        epoch = await reg.register()
        kv = await etcd.get(keyspace.broker(9))
        assert kv is not None and kv.create_revision == epoch == reg.epoch
        assert kv.lease == reg.session.lease_id != expired[0]
    finally:
        await reg.close()
