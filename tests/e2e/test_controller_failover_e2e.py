"""Controller failover with real processes: SIGKILL of the active one, and a paused zombie."""

from __future__ import annotations

import asyncio

import pytest
from ctl_e2e_harness import TTL, Etcd, broker_metadata, running_cluster, state_change_records

from leasehold.testing.wait import until
from services.controller.codec import decode_partition_state

pytestmark = pytest.mark.e2e


async def _active(db: Etcd, exclude: int = -1, timeout: float = 30.0) -> tuple[int, int]:
    async def probe():
        cid, epoch = await db.controller()
        done = [r for r in state_change_records(db.cluster, cid) if r["event"] == "failover_done"]
        ok = cid > 0 and cid != exclude and any(r["controller_epoch"] == epoch for r in done)
        return (cid, epoch) if ok else None

    return await until(probe, timeout=timeout, what="an active controller done with failover")


async def test_standby_takes_over_with_higher_epoch_and_zombie_changes_nothing():
    with running_cluster(brokers=3, controllers=2) as cluster:
        async with Etcd(cluster) as db:
            first, epoch1 = await _active(db)
            await db.create_topic("f", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
            await db.wait_states("f", 3, lambda s: s.leader > 0 and len(s.isr) == 3)

            # SIGKILL the active controller: the standby takes over with a higher epoch.
            cluster.controllers[first].kill()
            second, epoch2 = await _active(db, exclude=first, timeout=TTL + 15)
            assert epoch2 == epoch1 + 1
            cluster.controllers[first].start()  # back as a standby

            # Pause the new active controller past its lease: it becomes a zombie.
            zombie = cluster.controllers[second]
            zombie.pause()
            third, epoch3 = await _active(db, exclude=second, timeout=TTL + 15)
            assert third == first and epoch3 == epoch2 + 1
            # While the zombie sleeps, broker 3 dies: only the new controller may act on it.
            cluster.brokers[3].kill()
            settled = await db.wait_states("f", 3, lambda s: 3 not in s.isr)
            _, revision = await db.client.get_with_revision(db.ks.controller_epoch)
            zombie.resume()

            async def zombie_resigned():
                recs = state_change_records(cluster, second)
                return any(
                    r["event"] == "resigned" and r["controller_epoch"] == epoch2 for r in recs
                )

            await until(zombie_resigned, timeout=20, what="the zombie to resign")
            await asyncio.sleep(1.0)  # time for anything the zombie still had queued
            # Nothing the zombie did reached etcd: every state is as the new controller left it.
            assert await db.states("f", 3) == settled
            assert await db.controller() == (first, epoch3)
            kvs, _ = await db.client.range_prefix(db.ks.topics_prefix)
            for kv in kvs:
                if kv.mod_revision > revision and kv.key.endswith(b"/state"):
                    written = decode_partition_state(kv.value, kv.mod_revision)
                    assert written.leader_and_isr.controller_epoch == epoch3
            # ... and brokers still follow the new controller's decisions.
            expected = {
                p: (s.leader_and_isr.leader, s.leader_and_isr.isr) for p, s in settled.items()
            }

            async def brokers_agree():
                for b in (1, 2):
                    if await broker_metadata(cluster, b, "f") != expected:
                        return False
                return True

            await until(brokers_agree, timeout=15, what="brokers to show the new leaders")
