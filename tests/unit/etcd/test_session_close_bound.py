"""Closing a session revokes its lease, but never waits longer for the revoke than the lease
would take to expire unrenewed (its TTL): a service stopping while etcd does not answer stops
a TTL later at most, not after the etcd client's whole timeout."""

from __future__ import annotations

import asyncio
import time

from leasehold.etcd.session import Session


class SilentRevokeEtcd:
    timeout = 3600.0  # the client's own bound: far longer than any TTL

    def __init__(self) -> None:
        self.revokes = 0

    async def lease_grant(self, ttl: int) -> int:
        return 7

    async def lease_revoke(self, lease_id: int) -> None:
        self.revokes += 1
        await asyncio.sleep(self.timeout)


class NullRenewer:
    def __init__(self) -> None:
        self.held: set[int] = set()

    def add(self, lease_id, tracker, report):
        self.held.add(lease_id)

    def remove(self, lease_id):
        self.held.discard(lease_id)

    def stop(self):
        pass


async def test_an_unanswered_revoke_is_given_up_after_the_ttl():
    etcd, renewer = SilentRevokeEtcd(), NullRenewer()
    session = await Session(etcd, ttl=1, renewer=renewer).start()
    assert renewer.held == {7}
    began = time.monotonic()
    async with asyncio.timeout(60):  # without the bound close waits an hour
        await session.close()
    assert time.monotonic() - began < 30
    assert etcd.revokes == 1
    assert renewer.held == set()
    assert session.done.is_set()
