"""One renewer keeping many sessions' leases alive (a process holding many sessions: a fleet of
simulated brokers), against a real etcd.

Each lease keeps its own tracker and outcome: a lease revoked elsewhere is lost alone, one the
renewer stops renewing expires alone, and the rest stay confirmed. What is asserted is the
outcome (leases alive or gone), not a time.
"""

from __future__ import annotations

import asyncio

from leasehold.etcd import Renewer, Session
from leasehold.etcd.lease import LeaseState

TTL = 2


async def test_one_renewer_keeps_many_sessions_alive_past_their_ttl(etcd):
    renewer = Renewer(etcd)
    sessions = [await Session(etcd, TTL, renewer=renewer).start() for _ in range(60)]
    try:
        assert len(renewer) == 60
        await asyncio.sleep(TTL * 2.5)
        assert all(s.state is LeaseState.CONFIRMED for s in sessions)
        for s in sessions:
            assert await etcd.lease_ttl(s.lease_id) > 0
    finally:
        for s in sessions:
            await s.close()
        renewer.stop()
    assert len(renewer) == 0


async def test_a_lease_revoked_elsewhere_is_lost_alone(etcd):
    renewer = Renewer(etcd)
    kept, revoked = [await Session(etcd, TTL, renewer=renewer).start() for _ in range(2)]
    try:
        await etcd.lease_revoke(revoked.lease_id)
        await asyncio.wait_for(revoked.done.wait(), TTL * 3)
        assert revoked.state is LeaseState.LOST
        await asyncio.sleep(TTL * 1.5)
        assert kept.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(kept.lease_id) > 0
    finally:
        await kept.close()
        await revoked.close()
        renewer.stop()


async def test_an_abandoned_session_expires_while_the_others_are_renewed(etcd):
    renewer = Renewer(etcd)
    kept, abandoned = [await Session(etcd, TTL, renewer=renewer).start() for _ in range(2)]
    try:
        await etcd.put(b"/renewer/abandoned", b"x", lease=abandoned.lease_id)
        await abandoned.abandon()
        assert renewer.is_alive()  # a shared renewer outlives the sessions leaving it
        for _ in range(100):
            if await etcd.get(b"/renewer/abandoned") is None:
                break
            await asyncio.sleep(0.1)
        assert await etcd.get(b"/renewer/abandoned") is None
        assert kept.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(kept.lease_id) > 0
    finally:
        await kept.close()
        await abandoned.close(revoke=False)
        renewer.stop()


async def test_a_session_of_its_own_stops_its_renewer_when_closed(etcd):
    session = await Session(etcd, TTL).start()
    renewer = session._renewer
    assert renewer is not None and renewer.is_alive()
    await session.close()
    assert not renewer.is_alive()
