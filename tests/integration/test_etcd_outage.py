"""Sessions and elections through etcd outages, against a real etcd that is killed and
restarted on its data directory, or paused (SIGSTOP) and resumed.

Each test starts its own etcd (the shared one must stay up for the other tests). Waits are
bounded generously; what is asserted is the outcome (same lease, key kept or gone), not a time.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from leasehold.etcd import EtcdClient, Session
from leasehold.etcd.election import Election
from leasehold.etcd.lease import LeaseState
from leasehold.testing.etcd_server import EtcdServer

TTL = 3


@pytest.fixture
def server():
    s = EtcdServer().start()
    yield s
    s.resume()
    s.stop()


@pytest.fixture
async def client(server):
    c = EtcdClient([server.endpoint], timeout=2.0)
    await c.connect()
    yield c
    await c.close()


async def _restart(server: EtcdServer, down_s: float) -> None:
    server.kill()
    await asyncio.sleep(down_s)
    await asyncio.to_thread(server.start)


async def test_session_keeps_its_lease_and_keys_across_an_etcd_restart(server, client):
    session = await Session(client, TTL).start()
    await client.put(b"/outage/ephemeral", b"x", lease=session.lease_id)
    server.kill()
    await asyncio.wait_for(session.unconfirmed.wait(), TTL + 5)  # past the TTL, etcd down
    assert not session.done.is_set()
    await asyncio.sleep(2 * TTL)
    await asyncio.to_thread(server.start)
    await asyncio.wait_for(session.confirmed.wait(), 15)
    assert session.state is LeaseState.CONFIRMED
    await asyncio.sleep(TTL + 1)  # renewals go on: the key outlives another TTL
    kv = await client.get(b"/outage/ephemeral")
    assert kv is not None and kv.lease == session.lease_id
    assert not session.done.is_set()
    await session.close()
    assert await client.get(b"/outage/ephemeral") is None


async def test_session_survives_a_pause_shorter_than_the_ttl(server, client):
    session = await Session(client, TTL).start()
    await client.put(b"/outage/short", b"x", lease=session.lease_id)
    states: list[LeaseState] = []
    session.on_change = states.append
    server.pause()
    await asyncio.sleep(1.0)
    server.resume()
    await asyncio.sleep(TTL + 1)
    assert LeaseState.LOST not in states
    assert session.state is LeaseState.CONFIRMED
    assert (await client.get(b"/outage/short")) is not None
    await session.close()


async def test_session_lost_when_etcd_expired_the_lease_during_a_long_pause(server, client):
    session = await Session(client, TTL).start()
    await client.put(b"/outage/long", b"x", lease=session.lease_id)
    server.pause()
    await asyncio.wait_for(session.unconfirmed.wait(), TTL + 5)
    await asyncio.sleep(TTL + 2)
    server.resume()
    await asyncio.wait_for(session.done.wait(), 15)
    assert session.state is LeaseState.LOST
    assert await client.get(b"/outage/long") is None
    await session.close()


async def test_a_stalled_event_loop_does_not_cost_the_session(server, client):
    """Renewal runs on its own thread and channel: blocking the loop longer than the TTL
    changes nothing."""
    session = await Session(client, 2).start()
    await client.put(b"/outage/stall", b"x", lease=session.lease_id)
    time.sleep(4.0)  # the whole event loop stalls for twice the TTL
    await asyncio.sleep(0.5)
    assert session.state is LeaseState.CONFIRMED
    assert not session.done.is_set()
    assert (await client.get(b"/outage/stall")) is not None
    assert session.min_margin > 0
    await session.close()


async def test_the_leader_still_leads_after_an_etcd_restart(server, client, keyspace):
    prefix = keyspace.controller_election_prefix
    s1, s2 = await Session(client, TTL).start(), await Session(client, TTL).start()
    leader, standby = Election(s1, prefix), Election(s2, prefix)
    await leader.campaign(b"c1")
    waiting = asyncio.create_task(standby.campaign(b"c2"))
    while not standby.revision:  # its key is in etcd: it waits for the leader's
        await asyncio.sleep(0.05)
    await _restart(server, down_s=2 * TTL)
    await asyncio.wait_for(s1.confirmed.wait(), 15)
    await asyncio.wait_for(s2.confirmed.wait(), 15)
    assert await leader.still_leader()
    assert not waiting.done(), "the standby must still be waiting: nothing changed hands"
    await leader.resign()
    await asyncio.wait_for(waiting, 10)
    assert await standby.still_leader()
    await s1.close()
    await s2.close()
