"""One renewer keeping many sessions' leases alive (a process holding many sessions: a fleet of
simulated brokers), against a real etcd.

Each lease keeps its own tracker and outcome: a lease revoked elsewhere is lost alone, one the
renewer stops renewing expires alone, and the rest stay confirmed. What is asserted is the
outcome (leases alive or gone), not a time.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from leasehold.etcd import Renewer, Session
from leasehold.etcd.lease import LeaseState, LeaseTracker

TTL = 2


@pytest.mark.parametrize("batched", [False, True], ids=["grpc", "batched"])
async def test_one_renewer_keeps_many_sessions_alive_past_their_ttl(etcd, batched):
    renewer = Renewer(etcd, batched=batched)
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


@pytest.mark.parametrize("batched", [False, True], ids=["grpc", "batched"])
async def test_a_lease_revoked_elsewhere_is_lost_alone(etcd, batched, caplog):
    renewer = Renewer(etcd, batched=batched)
    kept, revoked = [await Session(etcd, TTL, renewer=renewer).start() for _ in range(2)]
    try:
        with caplog.at_level(logging.WARNING, logger="leasehold.etcd.session"):
            await etcd.lease_revoke(revoked.lease_id)
            await asyncio.wait_for(revoked.done.wait(), TTL * 3)
        assert revoked.state is LeaseState.LOST
        # The renewer says why, with the deadline still ahead: etcd dropped it early.
        gone = [r for r in caplog.records if r.getMessage().startswith("lease gone")]
        assert [r.lease for r in gone] == [f"{revoked.lease_id:x}"]
        assert gone[0].deadline_in_s > 0
        await asyncio.sleep(TTL * 1.5)
        assert kept.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(kept.lease_id) > 0
    finally:
        await kept.close()
        await revoked.close()
        renewer.stop()


@pytest.mark.parametrize("batched", [False, True], ids=["grpc", "batched"])
async def test_an_abandoned_session_expires_while_the_others_are_renewed(etcd, batched):
    renewer = Renewer(etcd, batched=batched)
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


async def test_a_batched_renewer_reconnects_after_etcd_restarts():
    """The batched keep-alive's connection dies with etcd; the next round opens a new one and
    the leases, which etcd keeps across a restart, are confirmed again."""
    from leasehold.etcd import EtcdClient
    from leasehold.etcd.lease import LeaseState
    from leasehold.testing.etcd_server import EtcdServer

    server = EtcdServer().start()
    client = EtcdClient([server.endpoint], timeout=2.0)
    await client.connect()
    renewer = Renewer(client, batched=True)
    try:
        sessions = [await Session(client, 3, renewer=renewer).start() for _ in range(5)]
        server.kill()
        await asyncio.sleep(1.0)
        server.start()
        for _ in range(100):
            if all(s.state is LeaseState.CONFIRMED for s in sessions) and await client.lease_ttl(
                sessions[0].lease_id
            ):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.0)  # renewed across what would have been the TTL
        assert all(s.state is LeaseState.CONFIRMED for s in sessions)
        assert all([await client.lease_ttl(s.lease_id) > 0 for s in sessions])
        for s in sessions:
            await s.close()
    finally:
        renewer.stop()
        await client.close()
        server.stop()


@pytest.mark.parametrize("batched", [False, True], ids=["grpc", "batched"])
async def test_a_lease_in_its_last_second_asked_after_a_failure_is_renewed_not_lost(
    etcd, batched, caplog
):
    """After a renewal goes unanswered the renewer asks ``LeaseTimeToLive``, and etcd answers a
    lease with under a second left with 0 (it truncates; -1 is a lease it does not have). Such a
    lease lives: the renewer renews it at once, and says so, instead of reporting it lost."""
    sent_at = time.monotonic()
    lease_id = await etcd.lease_grant(TTL)
    while (left := await etcd.lease_ttl(lease_id)) > 0:
        await asyncio.sleep(0.02)
    assert left == 0  # in its last second, still held by etcd
    tracker = LeaseTracker(TTL, sent_at)
    tracker.unanswered(time.monotonic())  # a renewal went unanswered: TimeToLive comes next
    states: list[LeaseState] = []
    renewer = Renewer(etcd, batched=batched)
    try:
        with caplog.at_level(logging.WARNING, logger="leasehold.etcd.session"):
            renewer.add(lease_id, tracker, states.append)
            await asyncio.sleep(TTL * 1.5)
        assert LeaseState.LOST not in states
        near = [r for r in caplog.records if r.getMessage().startswith("lease in its last")]
        assert [r.lease for r in near] == [f"{lease_id:x}"]
        assert tracker.state is LeaseState.CONFIRMED
        assert await etcd.lease_ttl(lease_id) > 0
    finally:
        renewer.stop()
        await etcd.lease_revoke(lease_id)
