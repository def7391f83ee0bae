"""etcd killed and restarted, then paused past the TTL, under a running cluster: no partition
changes leader or ISR, and the control plane carries on (issue: calm through etcd outages).

After the restart every lease survives (etcd renews leases on its new leader): the controller
resumes office without a new epoch and every broker keeps its registration. After the long
pause etcd has expired every lease: brokers register again from the same processes within the
controller's grace, a controller is elected again, and still nothing is re-elected.
"""

from __future__ import annotations

import asyncio

import pytest
from ctl_e2e_harness import TTL, Etcd, broker_metadata, running_cluster, state_change_records

from leasehold.testing.wait import until
from services.controller.config import grace_default

pytestmark = pytest.mark.e2e

TOPIC = "calm"
PARTITIONS = 6
GRACE = grace_default(TTL)


def _leadership(states: dict) -> dict[int, tuple]:
    return {
        p: (s.leader_and_isr.leader, s.leader_and_isr.leader_epoch, s.leader_and_isr.isr)
        for p, s in states.items()
    }


async def _registrations(db: Etcd) -> dict[bytes, int]:
    kvs, _ = await db.client.range_prefix(db.ks.brokers_prefix)
    return {kv.key: kv.create_revision for kv in kvs}


async def _brokers_registered(db: Etcd, count: int) -> None:
    async def probe():
        return len(await _registrations(db)) >= count

    await until(probe, timeout=30, what="every broker registered")


def _expired(cluster) -> list[dict]:
    return [
        r
        for cid in cluster.controllers
        for r in state_change_records(cluster, cid)
        if r.get("kind") == "broker" and r.get("event") == "expired"
    ]


async def test_etcd_restart_and_long_pause_change_no_leader():
    with running_cluster(brokers=3, controllers=2) as cluster:
        async with Etcd(cluster) as db:
            assignment = {p: [1 + (p + k) % 3 for k in range(3)] for p in range(PARTITIONS)}
            await db.create_topic(TOPIC, assignment)
            settled = await db.wait_states(
                TOPIC, PARTITIONS, lambda s: s.leader > 0 and len(s.isr) == 3
            )
            before = _leadership(settled)
            controller = await db.controller()
            registrations = await _registrations(db)

            # 1. SIGKILL etcd, start it again on its data directory two TTLs later.
            cluster.etcd.kill()
            await asyncio.sleep(2 * TTL)
            await asyncio.to_thread(cluster.etcd.start)
            await asyncio.sleep(GRACE + 2)
            assert _leadership(await db.states(TOPIC, PARTITIONS)) == before
            assert await db.controller() == controller, "office resumed without a new epoch"
            assert await _registrations(db) == registrations, "every registration survived"

            # 2. SIGSTOP etcd past the TTL: etcd expires every lease when it resumes.
            cluster.etcd.pause()
            await asyncio.sleep(2 * TTL)
            cluster.etcd.resume()
            await _brokers_registered(db, 3)

            async def elected():
                cid, epoch = await db.controller()
                return cid > 0 and epoch > controller[1]

            await until(elected, timeout=30, what="a controller elected after the pause")
            await asyncio.sleep(GRACE + 2)
            assert _leadership(await db.states(TOPIC, PARTITIONS)) == before
            assert await _registrations(db) != registrations  # new broker epochs
            assert _expired(cluster) == [], "no broker was treated as dead"
            expected = {p: (leader, isr) for p, (leader, _, isr) in before.items()}

            async def brokers_agree():
                for b in cluster.brokers:
                    if await broker_metadata(cluster, b, TOPIC) != expected:
                        return False
                return True

            await until(brokers_agree, timeout=15, what="brokers to show the same leaders")
