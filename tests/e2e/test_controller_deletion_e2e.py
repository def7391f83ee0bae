"""Topic deletion with a broker down completes once it returns (real broker agents)."""

from __future__ import annotations

import pytest
from ctl_e2e_harness import Etcd, running_cluster

from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e


async def test_delete_with_a_broker_down_completes_after_it_returns():
    with running_cluster(brokers=3, controllers=1) as cluster:
        async with Etcd(cluster) as db:
            topic_id = await db.create_topic("gone", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
            await db.wait_states("gone", 3, lambda s: len(s.isr) == 2)
            # The ISR in etcd is the controller's write; the brokers create the replicas when
            # they apply its LeaderAndIsr, a little later.
            for b in (1, 2, 3):
                data = cluster.workdir / f"broker-{b}"

                async def has_replicas(data=data) -> bool:
                    return not await _no_partition_dirs(data, "gone")

                await until(has_replicas, timeout=20, what=f"broker {b} to create its replicas")
            cluster.brokers[3].kill()
            await db.wait_states("gone", 3, lambda s: 3 not in s.isr)
            await db.put_intent(
                db.ks.delete_topic("gone"),
                metadata_pb2.TopicDeletion(topic_id=topic_id, request_id="del-e2e"),
            )

            async def topic_keys():
                kvs, _ = await db.client.range_prefix(db.ks.topic("gone"))
                return kvs

            # Broker 3 holds replicas: the deletion cannot finish while it is down.
            with pytest.raises(TimeoutError):
                await until(lambda: db.client.get(db.ks.result("del-e2e")), timeout=3)
            assert await topic_keys()
            cluster.brokers[3].start()
            result = await db.wait_result("del-e2e", timeout=40)
            assert [(r.topic, r.error_code) for r in result.results] == [("gone", 0)]
            assert not await topic_keys()
            assert await db.client.get(db.ks.delete_topic("gone")) is None
            # The brokers dropped the partitions from disk.
            for b in (1, 2, 3):
                data = cluster.workdir / f"broker-{b}"
                await until(
                    lambda data=data: _no_partition_dirs(data, "gone"),
                    timeout=20,
                    what=f"broker {b} to delete its replicas",
                )


async def _no_partition_dirs(data, topic: str) -> bool:
    return not any(p.name.startswith(f"{topic}-") for p in data.rglob(f"{topic}-*") if p.is_dir())
