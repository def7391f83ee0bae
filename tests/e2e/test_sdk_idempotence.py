"""The idempotent producer on a real cluster: retries after lost answers and a leader's death
store every record once, in the order it was sent.

- **Lost answers.** Every other Produce answer is dropped on its way back (the request was
  served; the client sees UNAVAILABLE and retries the same batch). With idempotence every
  record is stored once; the same run without idempotence stores duplicates, which shows the
  test can tell.
- **A leader killed mid-stream.** Two producers (acks=all) keep writing to three partitions
  while one partition's leader is SIGKILLed; every acknowledged record is read back at its
  offset, and per producer and partition each record is stored once, in send order.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import grpc
import pytest
from cli_e2e_harness import running_cluster

from leasehold.client import AdminClient, ClusterMetadata, Consumer, Producer
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e


class LossyStub:
    """A broker stub whose Produce answers are lost every ``every`` calls, after the broker
    served them."""

    def __init__(self, stub, counter: Counter, every: int) -> None:
        self._stub, self._counter, self._every = stub, counter, every

    def __getattr__(self, name):
        return getattr(self._stub, name)

    async def Produce(self, request, **kwargs):
        answer = await self._stub.Produce(request, **kwargs)
        self._counter["calls"] += 1
        if self._counter["calls"] % self._every == 0:
            self._counter["lost"] += 1
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNAVAILABLE,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                details="answer lost (test)",
            )
        return answer


class LossyMetadata(ClusterMetadata):
    def __init__(self, admin: str, every: int) -> None:
        super().__init__(admin)
        self.counter: Counter = Counter()
        self._every = every

    def stub(self, broker_id: int):
        return LossyStub(super().stub(broker_id), self.counter, self._every)


async def read_values(admin: str, topic: str, partitions: int, count: int) -> dict[int, list]:
    """``{partition: [(offset, value)]}`` until ``count`` records are read (or 30 s)."""
    out: dict[int, list] = {p: [] for p in range(partitions)}
    async with Consumer(admin=admin, max_wait_ms=200) as consumer:
        await consumer.assign([(topic, p) for p in range(partitions)], "earliest")
        deadline = time.monotonic() + 30
        while sum(map(len, out.values())) < count and time.monotonic() < deadline:
            for r in await consumer.poll(timeout_ms=500):
                out[r.partition].append((r.offset, r.value))
    return out


async def produce_with_lost_answers(admin: str, topic: str, idempotent: bool) -> Counter:
    metadata = LossyMetadata(admin, every=2)
    async with Producer(metadata, acks="all", enable_idempotence=idempotent, linger_ms=2,
                        retry_backoff_ms=20) as producer:  # fmt: skip
        for burst in range(10):
            futures = [await producer.send(topic, f"{burst}-{i}".encode()) for i in range(20)]
            await producer.flush()
            for future in futures:
                await future
    await metadata.close()
    return metadata.counter


def test_lost_answers_are_retried_without_duplicates():
    with running_cluster(ClusterSpec(controllers=1, brokers=3, session_ttl=5)) as cluster:

        async def scenario():
            async with AdminClient(cluster.admin_address) as admin:
                for name in ("once", "twice"):
                    made = await admin.create_topic(
                        name, 1, 3, configs={"min.insync.replicas": "2"}, timeout_ms=20_000
                    )
                    assert made.error_code == 0, made.error_message
            sent = [f"{b}-{i}".encode() for b in range(10) for i in range(20)]

            counter = await produce_with_lost_answers(cluster.admin_address, "once", True)
            assert counter["lost"] >= 5
            stored = await read_values(cluster.admin_address, "once", 1, len(sent))
            assert [v for _, v in stored[0]] == sent  # each record once, in send order

            await produce_with_lost_answers(cluster.admin_address, "twice", False)
            stored = await read_values(cluster.admin_address, "twice", 1, len(sent) + 20)
            values = [v for _, v in stored[0]]
            assert len(values) > len(sent) and set(values) == set(sent)  # duplicates

        asyncio.run(scenario())


def test_a_leader_killed_mid_stream_costs_no_duplicates_and_no_reordering():
    with running_cluster(ClusterSpec(controllers=1, brokers=3, session_ttl=3)) as cluster:

        async def scenario():
            async with AdminClient(cluster.admin_address) as admin:
                made = await admin.create_topic(
                    "ha", 3, 3, configs={"min.insync.replicas": "2"}, timeout_ms=20_000
                )
                assert made.error_code == 0, made.error_message
                (desc,) = await admin.describe_topics(["ha"])
                victim = desc.partitions[0].leader
            acked: dict[bytes, tuple[int, int]] = {}
            stop = asyncio.Event()

            async def produce(name: str) -> None:
                async with Producer(admin=cluster.admin_address, acks="all", linger_ms=2,
                                    retry_backoff_ms=100) as producer:  # fmt: skip
                    seq = 0
                    while not stop.is_set():
                        futures = []
                        for _ in range(30):
                            value = f"{name}-{seq:06d}".encode()
                            future = await producer.send("ha", value, partition=seq % 3)
                            futures.append((value, future))
                            seq += 1
                        await asyncio.sleep(0.02)
                        for value, future in futures:
                            meta = await future
                            acked[value] = (meta.partition, meta.offset)

            writers = [asyncio.create_task(produce(n)) for n in ("p1", "p2")]
            await asyncio.sleep(2)
            cluster.brokers[victim].kill()
            await asyncio.sleep(8)  # the lease expires, a new leader takes over, writes go on
            stop.set()
            await asyncio.gather(*writers)

            stored = await read_values(cluster.admin_address, "ha", 3, len(acked))
            at = {(p, o): v for p, rows in stored.items() for o, v in rows}
            for value, place in acked.items():
                assert at.get(place) == value, f"{value!r} acknowledged at {place}"
            for partition, rows in stored.items():
                values = [v for _, v in rows]
                assert len(values) == len(set(values)), f"p{partition} holds a duplicate"
                for name in (b"p1", b"p2"):
                    mine = [v for v in values if v.startswith(name)]
                    assert mine == sorted(mine), f"p{partition}: {name!r} out of send order"

        asyncio.run(scenario())
