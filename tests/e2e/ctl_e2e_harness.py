"""Helpers for the controller's end-to-end tests: real etcd, controllers and broker agents.

Topics are created by writing ``TopicAssignment`` into etcd directly (as admin does), so these
tests depend on the controller and the broker agents only. Assertions read etcd (the store of
record) and the brokers' own Metadata answers (what clients see).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.election import leader_of
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until
from services.controller.codec import decode_partition_state

TTL = 3


@contextlib.contextmanager
def running_cluster(brokers: int = 3, controllers: int = 2, **env: str) -> Iterator[LocalCluster]:
    extra = {"LEASEHOLD_REBALANCE_INITIAL_DELAY": "1", **env}
    cluster = LocalCluster(
        ClusterSpec(controllers=controllers, brokers=brokers, session_ttl=TTL, extra_env=extra)
    )
    passed = False
    try:
        cluster.start()
        yield cluster
        passed = True
    finally:
        # Brokers first, while a controller still answers their controlled shutdown quickly.
        for proc in cluster.brokers.values():
            proc.resume()
            proc.kill()
        cluster.stop()
        if passed:  # keep the logs of a failed run for debugging
            cluster.remove_workdir()


class Etcd:
    """The test's own etcd connection to a LocalCluster, with the keyspace helpers."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.ks = Keyspace(cluster.spec.cluster_id)
        self.client = EtcdClient([cluster.etcd.endpoint])

    async def __aenter__(self) -> Etcd:
        await self.client.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()

    async def create_topic(self, name: str, assignment: dict[int, list[int]]) -> str:
        topic_id = uuid.uuid4().hex
        value = metadata_pb2.TopicAssignment(
            topic_id=topic_id,
            partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in assignment.items()},
            created_at_ms=int(time.time() * 1000),
        )
        await self.client.put(self.ks.topic(name), value.SerializeToString())
        return topic_id

    async def put_intent(self, key: bytes, message) -> None:
        await self.client.put(key, message.SerializeToString())

    async def state(self, topic: str, partition: int):
        kv = await self.client.get(self.ks.partition_state(topic, partition))
        return None if kv is None else decode_partition_state(kv.value, kv.mod_revision)

    async def states(self, topic: str, partitions: int) -> dict[int, object]:
        return {p: await self.state(topic, p) for p in range(partitions)}

    async def wait_states(self, topic: str, partitions: int, pred, timeout: float = 30.0):
        async def probe():
            got = await self.states(topic, partitions)
            ok = all(s is not None and pred(s.leader_and_isr) for s in got.values())
            return got if ok else None

        return await until(probe, timeout=timeout, what=f"partition states of {topic}")

    async def replicas(self, topic: str) -> dict[int, list[int]]:
        kv = await self.client.get(self.ks.topic(topic))
        if kv is None:
            return {}
        pb = metadata_pb2.TopicAssignment.FromString(kv.value)
        return {p: list(rl.replicas) for p, rl in pb.partitions.items()}

    async def controller(self) -> tuple[int, int]:
        """(active controller id, controller epoch); (-1, epoch) when nobody leads."""
        kv = await leader_of(self.client, self.ks.controller_election_prefix)
        epoch_kv = await self.client.get(self.ks.controller_epoch)
        epoch = metadata_pb2.ControllerEpoch.FromString(epoch_kv.value).epoch if epoch_kv else 0
        if kv is None:
            return -1, epoch
        return metadata_pb2.ControllerRegistration.FromString(kv.value).controller_id, epoch

    async def wait_result(self, request_id: str, timeout: float = 30.0):
        async def probe():
            kv = await self.client.get(self.ks.result(request_id))
            return metadata_pb2.AdminResult.FromString(kv.value) if kv else None

        return await until(probe, timeout=timeout, what=f"result of {request_id}")


async def broker_metadata(cluster: LocalCluster, broker_id: int, topic: str):
    """What broker ``broker_id`` tells clients about ``topic``: {partition: (leader, isr)}."""
    async with grpc.aio.insecure_channel(cluster.brokers[broker_id].address) as ch:
        resp = await broker_pb2_grpc.BrokerServiceStub(ch).Metadata(
            broker_pb2.MetadataRequest(topics=[topic]), timeout=5
        )
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            out[p.partition] = (p.leader, tuple(p.isr))
    return out


def state_change_records(cluster: LocalCluster, controller_id: int) -> list[dict]:
    path = Path(cluster.workdir) / f"state-change-{controller_id}.log"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class History:
    """(AR, leader, ISR) of one partition after every etcd change to its topic's keys."""

    def __init__(self, db: Etcd, topic: str, partition: int = 0) -> None:
        self.db, self.topic, self.partition = db, topic, partition
        self.rows: list[tuple[frozenset, int, frozenset]] = []

    async def run(self, start_revision: int) -> None:
        ks, ar, state = self.db.ks, frozenset(), None
        async for batch in self.db.client.watch(
            ks.topic(self.topic), prefix=True, start_revision=start_revision
        ):
            for ev in batch.events:
                if ev.deleted:
                    continue
                if ev.kv.key == ks.topic(self.topic):
                    pb = metadata_pb2.TopicAssignment.FromString(ev.kv.value)
                    ar = frozenset(pb.partitions[self.partition].replicas)
                elif ev.kv.key == ks.partition_state(self.topic, self.partition):
                    state = decode_partition_state(ev.kv.value, ev.kv.mod_revision)
                if state is not None and ar:
                    lai = state.leader_and_isr
                    row = (ar, lai.leader, frozenset(lai.isr))
                    if not self.rows or self.rows[-1] != row:
                        self.rows.append(row)


def is_subsequence(wanted: list, rows: list) -> bool:
    it = iter(rows)
    return all(any(w == r for r in it) for w in wanted)
