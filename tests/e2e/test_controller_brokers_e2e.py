"""Broker failure, restart and controlled shutdown with real broker agents."""

from __future__ import annotations

import pytest
from ctl_e2e_harness import Etcd, broker_metadata, running_cluster, state_change_records

from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2]}


async def test_broker_kill_restart_and_controlled_shutdown():
    with running_cluster(brokers=3, controllers=1) as cluster:
        async with Etcd(cluster) as db:
            await db.create_topic("b", ASSIGNMENT)
            before = await db.wait_states("b", 4, lambda s: s.leader > 0 and len(s.isr) == 3)

            # Kill broker 1: partitions it led get a new leader from their ISR.
            cluster.brokers[1].kill()
            after = await db.wait_states("b", 4, lambda s: 1 not in s.isr and s.leader > 0)
            for p in (0, 3):
                old, new = before[p].leader_and_isr, after[p].leader_and_isr
                assert old.leader == 1 and new.leader in old.isr and new.leader != 1
                assert new.leader_epoch > old.leader_epoch
            assert after[1].leader_and_isr.leader == 2 and after[2].leader_and_isr.leader == 3
            expected = {
                p: (s.leader_and_isr.leader, s.leader_and_isr.isr) for p, s in after.items()
            }

            async def others_learned():
                return all([await broker_metadata(cluster, b, "b") == expected for b in (2, 3)])

            await until(others_learned, timeout=15, what="brokers 2 and 3 to learn the leaders")

            # Restart it: its replicas come back online and catch up into every ISR.
            cluster.brokers[1].start()
            await db.wait_states("b", 4, lambda s: len(s.isr) == 3, timeout=40)

            # Controlled shutdown (SIGTERM): leadership moves away first, it leaves every ISR.
            led = [p for p, s in (await db.states("b", 4)).items() if s.leader_and_isr.leader == 2]
            assert led, "broker 2 should lead something before its shutdown"
            assert cluster.brokers[2].terminate(timeout=30) == 0
            final = await db.wait_states("b", 4, lambda s: s.leader != 2 and 2 not in s.isr)
            assert all(s.leader_and_isr.leader in (1, 3) for s in final.values())

            async def logged():
                moved = [
                    r
                    for r in state_change_records(cluster, 1)
                    if r["kind"] == "partition" and r["reason"] == "controlled_shutdown"
                ]
                return {r["partition"] for r in moved} == set(led)

            await until(logged, timeout=10, what="controlled-shutdown moves in the log")
