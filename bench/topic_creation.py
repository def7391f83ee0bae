"""Topic creation through admin: partitions per second brought online, against raw etcd writes.

A cluster of 2 controllers, 3 broker agents and admin starts empty and settles. Then, per row,
one ``AdminService.CreateTopics`` call (the SDK's ``AdminClient.create_topics``) creates topics
with replication factor 3 and Kafka's default assignment, asking admin to wait until every
partition has a leader. Timed from just before the call:

- **etcd ms**: every new partition's state names a leader (etcd watch); **partitions/s** is
  the partition count over that time (the figure the baseline is compared with);
- **answer ms**: admin's answer (it waits on the same states);
- **brokers ms**: every broker answers Metadata with every new partition led (polled every
  50 ms): the brokers have been told.

The cluster settles between rows (brokers create the new logs). Baseline, same run, same etcd
(separate prefix): one ``fenced.commit`` creating as many partition-state keys, 8 transactions
in flight (``bench.raw_etcd.bulk_create``), as keys per second.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bench.framework import BenchSuite, Column, Result, Row, RunContext
from bench.observe import poll_brokers, watch_states
from bench.raw_etcd import BULK_CONCURRENCY
from bench.scenario import Scenario, Sizing, raw_state_writes
from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2
from leasehold.client import AdminClient
from leasehold.common.v1 import common_pb2

REPLICATION = 3
WAIT_MS = 300_000


@dataclass(frozen=True)
class Knobs:
    shapes: tuple[tuple[int, int], ...]  # (topics, partitions per topic) per row

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(shapes=ctx.pick(((1, 1_000), (10, 1_000)), ((1, 50), (4, 50))))

    @property
    def largest(self) -> int:
        return max(t * p for t, p in self.shapes)


def all_led(count: int):
    """A Metadata predicate: ``count`` partitions, each with a leader."""

    def ready(answer: broker_pb2.MetadataResponse) -> bool:
        parts = [p for t in answer.topics for p in t.partitions]
        return len(parts) == count and all(
            p.error_code == common_pb2.ERROR_CODE_NONE and p.leader >= 0 for p in parts
        )

    return ready


async def create(sc: Scenario, admin: AdminClient, names: list[str], per_topic: int) -> dict:
    """Create the topics in one call; the instants of the row's figures, in ms from the call."""
    count = len(names) * per_topic
    _, revision = await sc.client.get_with_revision(sc.keyspace.topics_prefix)
    online = asyncio.create_task(
        watch_states(sc.client, sc.keyspace, start_revision=revision + 1, target=count,
                     ok=lambda s: s.leader >= 0, topics=set(names))
    )  # fmt: skip
    request = [
        admin_pb2.CreatableTopic(
            name=name, num_partitions=per_topic, replication_factor=REPLICATION
        )
        for name in names
    ]
    try:
        started = time.time()
        response = await admin.create_topics(request, timeout_ms=WAIT_MS)
        answered = time.time()
        for topic in response.topics:
            if topic.error_code != common_pb2.ERROR_CODE_NONE:
                raise RuntimeError(f"CreateTopics {topic.name}: {topic.error_message}")
        led = await asyncio.wait_for(online, timeout=WAIT_MS / 1000)
    finally:
        online.cancel()
    told = await poll_brokers(
        sc.broker_addresses(),
        all_led(count),
        request=broker_pb2.MetadataRequest(topics=names),
        interval=0.05,
        timeout=300,
    )
    return {
        "partitions_per_s": count / (led - started),
        "etcd_ms": (led - started) * 1000,
        "answer_ms": (answered - started) * 1000,
        "brokers_ms": (max(told.values()) - started) * 1000,
    }


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    sizing = Sizing.of(knobs.largest)
    rows: list[Row] = []
    async with Scenario(controllers=2, brokers=3, admin=True, sizing=sizing) as sc:
        raw_ms, txns = await raw_state_writes(sc.client, knobs.largest)
        rows.append(
            Row(f"raw etcd: {knobs.largest:,} fenced state writes",
                {"partitions_per_s": knobs.largest / raw_ms * 1000, "etcd_ms": raw_ms},
                note=f"{txns} txns, {BULK_CONCURRENCY} in flight")
        )  # fmt: skip
        await sc.start_services()
        await sc.settle()
        async with AdminClient(sc.cluster.admin_address, timeout=60) as admin:
            for index, (topics, per_topic) in enumerate(knobs.shapes):
                names = [f"create-{index}-{t}" for t in range(topics)]
                values = await create(sc, admin, names, per_topic)
                label = f"CreateTopics {topics} x {per_topic:,} partitions"
                rows.append(Row(label, values, note=f"{topics * per_topic:,} partitions"))
                await sc.settle()
        losses = sc.lease_losses()
    return [
        Result(
            "topic creation through admin (RF 3, 3 brokers), one request per row",
            COLUMNS,
            tuple(rows),
            baseline=rows[0].label,
            ratio_of="partitions_per_s",
            notes=(
                "partitions/s = partitions / etcd ms; etcd ms: every new partition state "
                "names a leader (watch); answer ms: admin's CreateTopics answer (it waits for "
                "leaders); brokers ms: every broker's Metadata shows every new partition led",
                f"{sizing.describe()}; services at log level warning; the cluster settles "
                f"between rows; etcd sessions lost during the run: {losses}",
            ),
        )
    ]


COLUMNS = (
    Column("partitions_per_s", "partitions/s"),
    Column("etcd_ms", "etcd ms", ",.0f"),
    Column("answer_ms", "answer ms", ",.0f"),
    Column("brokers_ms", "brokers ms", ",.0f"),
)

SUITE = BenchSuite(
    "topic_creation",
    "partitions per second brought online through admin CreateTopics",
    run,
    time_limit_s=1800.0,
)
