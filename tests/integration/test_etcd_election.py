"""Session and Election against a real etcd: one leader at a time, fast takeover, fencing."""

from __future__ import annotations

import asyncio
import time

import pytest

from leasehold.etcd import EtcdClient, Session
from leasehold.etcd.client import op_put
from leasehold.etcd.election import Election, ElectionLost, candidates_of, leader_of


async def test_session_lease_keeps_key_alive_and_revoke_removes_it(etcd, keyspace):
    key = keyspace.root + b"/ephemeral"
    async with Session(etcd, ttl=2) as session:
        await etcd.put(key, b"x", lease=session.lease_id)
        await asyncio.sleep(3.0)  # longer than the TTL: keep-alive must hold it
        assert (await etcd.get(key)).value == b"x"
        assert not session.done.is_set()
    assert await etcd.get(key) is None


async def test_session_done_when_lease_revoked_elsewhere(etcd):
    session = await Session(etcd, ttl=2).start()
    await etcd.lease_revoke(session.lease_id)
    await asyncio.wait_for(session.done.wait(), timeout=3.0)
    await session.close()


async def test_one_leader_at_a_time_and_clean_resign_hands_over_at_once(etcd, keyspace):
    prefix = keyspace.controller_election_prefix
    s1, s2 = await Session(etcd, ttl=5).start(), await Session(etcd, ttl=5).start()
    e1, e2 = Election(s1, prefix), Election(s2, prefix)
    await e1.campaign(b"c1")
    second = asyncio.create_task(e2.campaign(b"c2"))
    await asyncio.sleep(0.5)
    assert not second.done(), "the second candidate must wait while the first leads"
    assert (await leader_of(etcd, prefix)).value == b"c1"
    assert [kv.value for kv in await candidates_of(etcd, prefix)] == [b"c1", b"c2"]

    t0 = time.monotonic()
    await e1.resign()
    await asyncio.wait_for(second, timeout=2.0)
    assert time.monotonic() - t0 < 1.0
    assert (await leader_of(etcd, prefix)).value == b"c2"
    assert e2.revision > e1.revision or e1.revision == 0
    await s1.close()
    await s2.close()


async def test_standby_takes_over_when_leader_lease_expires(etcd_endpoint, keyspace):
    """The leader's process 'dies' (its keep-alive stops): the standby leads within TTL + margin."""
    prefix = keyspace.controller_election_prefix
    dead_client = EtcdClient([etcd_endpoint])
    live_client = EtcdClient([etcd_endpoint])
    await dead_client.connect()
    await live_client.connect()
    s1 = await Session(dead_client, ttl=2).start()
    s2 = await Session(live_client, ttl=2).start()
    await Election(s1, prefix).campaign(b"c1")
    waiting = asyncio.create_task(Election(s2, prefix).campaign(b"c2"))
    t0 = time.monotonic()
    await s1.close(revoke=False)  # stop keep-alives without revoking: like SIGKILL
    await asyncio.wait_for(waiting, timeout=2 + 2.0)
    assert time.monotonic() - t0 <= 2 + 1.5
    await s2.close()
    await dead_client.close()
    await live_client.close()


async def test_only_predecessor_is_watched_chain_of_three(etcd, keyspace):
    prefix = keyspace.controller_election_prefix
    sessions = [await Session(etcd, ttl=5).start() for _ in range(3)]
    elections = [Election(s, prefix) for s in sessions]
    await elections[0].campaign(b"a")
    t1 = asyncio.create_task(elections[1].campaign(b"b"))
    t2 = asyncio.create_task(elections[2].campaign(b"c"))
    await asyncio.sleep(0.3)
    # The middle candidate withdraws: the last one must still wait for the leader.
    t1.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t1
    await asyncio.sleep(0.3)
    assert not t2.done()
    await elections[0].resign()
    await asyncio.wait_for(t2, timeout=2.0)
    assert (await leader_of(etcd, prefix)).value == b"c"
    for s in sessions:
        await s.close()


async def test_fence_rejects_writes_after_leadership_is_lost(etcd, keyspace):
    prefix = keyspace.controller_election_prefix
    session = await Session(etcd, ttl=5).start()
    election = Election(session, prefix)
    await election.campaign(b"c1")
    guarded = keyspace.root + b"/guarded"
    ok = await etcd.txn([election.fence()], [op_put(guarded, b"1")])
    assert ok.succeeded
    await etcd.lease_revoke(session.lease_id)  # the lease is gone: our key with it
    res = await etcd.txn([election.fence()], [op_put(guarded, b"2")])
    assert not res.succeeded
    assert (await etcd.get(guarded)).value == b"1"
    await asyncio.wait_for(session.done.wait(), timeout=3)
    with pytest.raises(ElectionLost):
        await Election(session, prefix).campaign(b"again")
    await session.close()
