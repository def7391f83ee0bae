"""Reassignment 1,2,3 -> 4,5,6 with six real brokers, and its cancellation (KIP-455)."""

from __future__ import annotations

import asyncio

import pytest
from ctl_e2e_harness import Etcd, History, is_subsequence, running_cluster

from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e


def _intent(target, request_id, cancel=False):
    return metadata_pb2.ReassignmentIntent(
        target_replicas=target, cancel=cancel, request_id=request_id
    )


async def test_reassignment_completes_and_cancellation_restores():
    with running_cluster(brokers=6, controllers=1) as cluster:
        async with Etcd(cluster) as db:
            _, revision = await db.client.get_with_revision(db.ks.topic("mv"))
            history = History(db, "mv")
            watch = asyncio.create_task(history.run(revision + 1))
            await db.create_topic("mv", {0: [1, 2, 3]})
            await db.create_topic("cx", {0: [1, 2, 3]})
            await db.wait_states("mv", 1, lambda s: len(s.isr) == 3)
            await db.wait_states("cx", 1, lambda s: len(s.isr) == 3)

            await db.put_intent(db.ks.reassignment("mv", 0), _intent([4, 5, 6], "mv-1"))
            result = await db.wait_result("mv-1", timeout=45)
            await until(lambda: _settled(history), timeout=10, what="the last history row")
            watch.cancel()
            # Seed 002's table, in order; real followers may join the ISR one at a time, so
            # the ISR can pass through {1,2,3,4} and {1,2,3,4,5} between the table's rows.
            old, new, both = frozenset({1, 2, 3}), frozenset({4, 5, 6}), frozenset(range(1, 7))
            table = [(old, 1, old), (both, 1, old), (both, 1, both), (both, 4, both),
                     (both, 4, new), (new, 4, new)]  # fmt: skip
            assert is_subsequence(table, history.rows), history.rows
            assert history.rows[0] == table[0] and history.rows[-1] == table[-1]
            assert all(ar in (old, both, new) for ar, _, _ in history.rows)
            assert [(r.partition, r.error_code) for r in result.results] == [(0, 0)]
            assert (await db.replicas("mv"))[0] == [4, 5, 6]
            s = await db.state("mv", 0)
            assert s.leader_and_isr.leader == 4 and set(s.leader_and_isr.isr) == {4, 5, 6}
            assert (s.adding, s.removing) == ((), ())

            # Broker 6 is down, so a move to 4,5,6 cannot finish; cancel it.
            cluster.brokers[6].kill()
            await db.put_intent(db.ks.reassignment("cx", 0), _intent([4, 5, 6], "cx-1"))

            async def started():
                return set((await db.replicas("cx"))[0]) == {1, 2, 3, 4, 5, 6}

            await until(started, timeout=20, what="the reassignment to start")
            await db.put_intent(db.ks.reassignment("cx", 0), _intent([], "cx-2", cancel=True))
            result = await db.wait_result("cx-2", timeout=30)
            assert [(r.partition, r.error_code) for r in result.results] == [(0, 0)]
            assert (await db.replicas("cx"))[0] == [1, 2, 3]
            s = await db.state("cx", 0)
            assert s.leader_and_isr.leader == 1 and set(s.leader_and_isr.isr) == {1, 2, 3}
            assert (s.adding, s.removing) == ((), ())


async def _settled(history: History) -> bool:
    return bool(history.rows) and history.rows[-1][0] == frozenset({4, 5, 6})
