"""Preferred-replica election on request and auto leader rebalance with real brokers."""

from __future__ import annotations

import pytest
from ctl_e2e_harness import Etcd, running_cluster

from leasehold.common.v1 import common_pb2
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e


async def _leaders(db: Etcd, topic: str, n: int) -> dict[int, int]:
    return {p: s.leader_and_isr.leader for p, s in (await db.states(topic, n)).items()}


async def test_preferred_election_and_auto_rebalance_move_leaders_back():
    with running_cluster(brokers=3, controllers=1, LEASEHOLD_REBALANCE_INTERVAL="1") as cluster:
        async with Etcd(cluster) as db:
            cfg = db.ks.broker_config(None)
            off = {"auto.leader.rebalance.enable": "false"}
            await db.client.put(cfg, metadata_pb2.ConfigEntries(entries=off).SerializeToString())
            await db.create_topic("l", {0: [1, 2, 3], 1: [1, 3, 2], 2: [2, 3, 1]})
            await db.wait_states("l", 3, lambda s: len(s.isr) == 3)
            cluster.brokers[1].kill()
            await db.wait_states("l", 3, lambda s: s.leader != 1 and 1 not in s.isr)
            cluster.brokers[1].start()
            await db.wait_states("l", 3, lambda s: len(s.isr) == 3, timeout=40)
            moved = await _leaders(db, "l", 3)
            assert moved[0] != 1 and moved[1] != 1 and moved[2] == 2

            # A preferred election on request moves partition 0 back.
            intent = metadata_pb2.ElectionIntent(
                election_type=common_pb2.ELECTION_TYPE_PREFERRED,
                partitions=[common_pb2.TopicPartition(topic="l", partition=0)],
                request_id="pe-1",
            )
            await db.put_intent(db.ks.election("pe-1"), intent)
            result = await db.wait_result("pe-1")
            assert [(r.partition, r.error_code) for r in result.results] == [(0, 0)]
            assert (await _leaders(db, "l", 3))[0] == 1

            # Auto rebalance (enabled by the cluster config) moves partition 1 back too.
            on = {"auto.leader.rebalance.enable": "true"}
            await db.client.put(cfg, metadata_pb2.ConfigEntries(entries=on).SerializeToString())
            await db.wait_states("l", 3, lambda s: True)

            async def balanced():
                return await _leaders(db, "l", 3) == {0: 1, 1: 1, 2: 2}

            await until(balanced, timeout=20, what="auto rebalance")
