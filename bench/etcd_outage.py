"""etcd outages under a loaded cluster: SIGKILL + restart after 10 s, and SIGSTOP for 15 s.

One cluster per size (10,000 partitions; 100,000 too with ``LEASEHOLD_BENCH_LARGE=1``): etcd,
2 controllers, 3 broker agents, admin, RF 3, preferred leaders rotating, online and settled,
every service at its default settings (session TTL included). Two producers (SDK, acks=all,
40 records/s each over 6 partitions) run through both outages:

1. **restart**: etcd SIGKILLed, started again on its data directory 10 s later. etcd keeps
   leases across a restart and renews their TTL, so every session should survive: the active
   controller resumes office without a new epoch, every broker keeps its registration.
2. **pause**: etcd SIGSTOPped for 15 s, then SIGCONT. etcd expires every lease as it resumes
   (each is 5x past its TTL): brokers register again from the same processes, a controller is
   elected again, and the controller's grace must keep every partition's leader and ISR.

Per case, counted from etcd's history of partition states between just before the fault and
the end of the controller's grace (TTL + 1 s after etcd's return, plus 2 s): **leader changes**
(a new leader epoch), **ISR shrinks** (a state whose ISR lost a member); and **acked lost**:
acks=all records acknowledged by the producers that a fresh consumer does not find at their
offsets after the case. Targets: 0, 0, 0.

Clocks, from etcd's return (the restarted process spawned / SIGCONT sent): **admin answers** =
the first successful admin ``DescribeCluster`` (polled every 50 ms), **admin after etcd** = the
same after our own raw etcd client's first answer (target: within 2 s of etcd serving again),
**admin complete** = the first answer that names an active controller and all three brokers. Also:
fault -> etcd answering our own client (the outage as users' clients see it). Baseline, same
run: a raw etcd client (the services' channel settings) answering a Range after etcd's return.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aetcd import rpc

from bench.framework import BenchSuite, Column, Result, Row, RunContext
from bench.observe import controller_epoch
from bench.scenario import LARGE_ENV, Layout, Scenario, Sizing, large_enabled, large_only
from leasehold.client import AdminClient, Consumer, Producer
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.controller.config import grace_default

BASELINE = "raw etcd: Range answered after etcd's return"
ADMIN_TARGET_S = 2.0
PRODUCE_PARTITIONS = 6
RATE_PER_S = 40.0
POLL_S = 0.05


@dataclass(frozen=True)
class Knobs:
    sizes: tuple[int, ...]
    per_topic: int
    restart_after_s: float
    pause_s: float

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        if large_only():
            sizes: tuple[int, ...] = (100_000,)
        else:
            sizes = (10_000, 100_000) if large_enabled() else (10_000,)
        return cls(
            sizes=ctx.pick(sizes, (300,)),
            per_topic=ctx.pick(1_000, 100),
            restart_after_s=ctx.pick(10.0, 5.0),  # quick: still past the 3 s TTL
            pause_s=ctx.pick(15.0, 5.0),
        )


class Producers:
    """Two acks=all SDK producers writing ids round-robin over a few partitions; what each was
    told is kept: acknowledged (partition, offset, id) and failures."""

    def __init__(self, admin: str, topic: str) -> None:
        self.admin, self.topic = admin, topic
        self.acked: list[tuple[int, int, str]] = []
        self.failed = 0
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    def start(self, count: int = 2) -> None:
        self._tasks = [asyncio.create_task(self._produce(i)) for i in range(count)]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def _produce(self, index: int) -> None:
        producer = Producer(admin=self.admin, acks="all", linger_ms=5, retry_backoff_ms=150)
        seq = 0
        try:
            while not self._stop.is_set():
                rid = f"p{index}-{seq:06d}"
                partition = seq % PRODUCE_PARTITIONS
                future = await producer.send(self.topic, rid.encode(), partition=partition)
                future.add_done_callback(self._recorder(partition, rid))
                seq += 1
                await asyncio.sleep(1.0 / RATE_PER_S)
        finally:
            await producer.close()  # flushes: every record is acknowledged or failed

    def _recorder(self, partition: int, rid: str) -> Callable[[asyncio.Future], None]:
        def record(future: asyncio.Future) -> None:
            if future.cancelled() or future.exception() is not None:
                self.failed += 1
            else:
                self.acked.append((partition, future.result().offset, rid))

        return record


async def lost_records(admin: str, topic: str, acked: list[tuple[int, int, str]]) -> int:
    """Acknowledged records a fresh consumer does not find at their offsets."""
    wanted = {(p, o): rid for p, o, rid in acked}
    ends = {p: max((o for q, o, _ in acked if q == p), default=-1) for p, _, _ in acked}
    found: dict[tuple[int, int], str] = {}
    consumer = Consumer(admin=admin, max_wait_ms=200, request_timeout_ms=10_000)
    try:
        await consumer.assign([(topic, p) for p in ends], "earliest")
        deadline = time.monotonic() + 120
        while any(consumer.position(topic, p) <= end for p, end in ends.items()):
            if time.monotonic() > deadline:
                break
            for r in await consumer.poll(timeout_ms=500):
                found[(r.partition, r.offset)] = (r.value or b"").decode(errors="replace")
    finally:
        await consumer.close()
    return sum(1 for key, rid in wanted.items() if found.get(key) != rid)


async def first_success(check: Callable[[], Awaitable[bool]], since: float, limit: float) -> float:
    """Seconds from ``since`` (wall clock) until ``check()`` first returns True."""
    while time.time() - since < limit:
        try:
            if await check():
                return time.time() - since
        except Exception:  # etcd or admin not answering yet
            pass
        await asyncio.sleep(POLL_S)
    raise TimeoutError(f"no answer within {limit:g}s")


async def churn(
    client: EtcdClient, ks: Keyspace, since_revision: int
) -> tuple[int, int, set[bytes]]:
    """(leader changes, ISR shrinks, partitions touched) in etcd's history of partition states
    from ``since_revision`` (exclusive) to now (every key under the cluster root is watched,
    so the history's last revision is always reached)."""
    kvs, _ = await client.range_prefix(ks.topics_prefix, revision=since_revision)
    last = {kv.key: _decode(kv.value) for kv in kvs if _state(kv.key)}
    _, current = await client.get_with_revision(ks.controller_epoch)
    leader_changes = shrinks = 0
    touched: set[bytes] = set()
    if current <= since_revision:
        return 0, 0, touched
    root = ks.root + b"/"
    async with asyncio.timeout(120):
        async for batch in client.watch(root, prefix=True, start_revision=since_revision + 1):
            for deleted, key, value in batch.events.changes():
                if deleted or not _state(key):
                    continue
                new, old = _decode(value), last.get(key)
                if old is not None:
                    leader_changes += new.leader_epoch != old.leader_epoch
                    shrinks += not set(old.isr) <= set(new.isr)
                    touched.add(key)
                last[key] = new
            if batch.events.last_revision >= current:
                break
    return leader_changes, shrinks, touched


def _decode(value: bytes) -> metadata_pb2.PartitionState:
    return metadata_pb2.PartitionState.FromString(value)


def _state(key: bytes) -> bool:
    return key.endswith(b"/state")


async def _registrations(client: EtcdClient, ks: Keyspace) -> dict[bytes, int]:
    kvs, _ = await client.range_prefix(ks.brokers_prefix)
    return {kv.key: kv.create_revision for kv in kvs}


@dataclass(frozen=True)
class Case:
    """One outage's figure row and its same-run baseline row."""

    baseline: Row
    row: Row


async def one_case(sc: Scenario, kind: str, down_s: float, producers: Producers) -> Case:
    client, ks, etcd = sc.client, sc.keyspace, sc.cluster.etcd
    _, revision = await client.get_with_revision(ks.controller_epoch)
    epoch_before, _ = await controller_epoch(client, ks)
    regs_before = await _registrations(client, ks)
    losses_before, acked_before = sc.lease_losses(), len(producers.acked)
    admin = AdminClient(sc.cluster.admin_address, timeout=1.0)

    async def etcd_answers() -> bool:
        await client._call(client.kv.Range, _range(ks), timeout=0.5)
        return True

    async def admin_answers() -> bool:
        await admin.describe_cluster()
        return True

    async def admin_complete() -> bool:
        d = await admin.describe_cluster()
        return (
            d.HasField("active_controller")
            and d.active_controller.controller_id >= 0
            and (len(d.brokers) == len(sc.cluster.brokers))
        )

    fault = time.time()
    if kind == "restart":
        etcd.kill()
        await asyncio.sleep(down_s)
        returned = time.time()
        starting = asyncio.create_task(asyncio.to_thread(etcd.start))
    else:
        etcd.pause()
        await asyncio.sleep(down_s)
        returned = time.time()
        etcd.resume()
        starting = None
    try:
        raw_s, answers_s, complete_s = await asyncio.gather(
            first_success(etcd_answers, returned, 60),
            first_success(admin_answers, returned, 60),
            first_success(admin_complete, returned, 60),
        )
    finally:
        if starting is not None:
            await starting
        await admin.close()
    await asyncio.sleep(grace_default(sc.sizing.ttl) + 2.0)
    leader_changes, shrinks, _ = await churn(client, ks, revision)
    epoch_after, _ = await controller_epoch(client, ks)
    regs_after = await _registrations(client, ks)
    kept = sum(1 for k, r in regs_after.items() if regs_before.get(k) == r)
    what = f"SIGSTOP {down_s:g} s"
    if kind == "restart":
        what = f"SIGKILL, restarted {down_s:g} s later"
    row = Row(
        f"etcd {what}: cluster",
        {
            "admin_ms": answers_s * 1000,
            "behind_etcd_ms": max(0.0, answers_s - raw_s) * 1000,
            "admin_complete_ms": complete_s * 1000,
            "outage_ms": (returned + answers_s - fault) * 1000,
            "leader_changes": leader_changes,
            "isr_shrinks": shrinks,
            "acked": len(producers.acked) - acked_before,
        },
        note=(
            f"controller epoch {epoch_before} -> {epoch_after}; broker registrations kept "
            f"{kept}/{len(regs_before)}; sessions lost {sc.lease_losses() - losses_before}; "
            f"admin answers within {ADMIN_TARGET_S:g} s of etcd answering again: "
            f"{'met' if answers_s - raw_s <= ADMIN_TARGET_S else 'MISSED'}"
        ),
    )
    baseline = Row(
        f"etcd {what}: {BASELINE}",
        {"admin_ms": raw_s * 1000, "outage_ms": (returned + raw_s - fault) * 1000},
    )
    return Case(baseline, row)


def _range(ks: Keyspace) -> rpc.RangeRequest:
    return rpc.RangeRequest(key=ks.controller_epoch)


async def one_size(n: int, knobs: Knobs) -> list[Result]:
    layout = Layout(n, knobs.per_topic, brokers=(1, 2, 3))
    sizing = Sizing.of(n)
    async with Scenario(controllers=2, brokers=3, admin=True, sizing=sizing) as sc:
        setup = await sc.bring_up(layout)
        topic = next(iter(layout.topics()))
        producers = Producers(sc.cluster.admin_address, topic)
        producers.start()
        await asyncio.sleep(2.0)
        cases = [
            await one_case(sc, "restart", knobs.restart_after_s, producers),
            await one_case(sc, "pause", knobs.pause_s, producers),
        ]
        await producers.stop()
        lost = await lost_records(sc.cluster.admin_address, topic, producers.acked)
    notes = (
        "admin answers ms / admin complete ms: from etcd's return (the restarted process "
        "spawned, or SIGCONT sent) to the first DescribeCluster answer / the first naming the "
        "active controller and every broker; baseline: our own raw etcd client (the services' "
        "channel settings) answering a Range, from the same instant (a restarted etcd takes a "
        "while to serve: that is etcd's own start-up); admin after etcd ms: admin's first answer "
        "after that raw answer (the 2 s target); outage ms: from the fault to admin's answer",
        f"leader changes and ISR shrinks: etcd's partition-state history from just before "
        f"the fault to {grace_default(sizing.ttl) + 2:g} s after etcd's return (the "
        f"controller's broker grace is TTL + 1 s); acked = acks=all records acknowledged "
        f"during the case; over both outages {len(producers.acked):,} acknowledged, "
        f"{producers.failed} failed, {lost} acknowledged records lost (target 0), read back "
        "by a fresh consumer",
        f"{setup}; {sizing.describe()}; services at log level warning",
        *([f"100,000-partition runs need {LARGE_ENV}=1"] if n < 100_000 else []),
    )
    return [
        Result(
            f"{case.row.label.removesuffix(': cluster')} under {n:,} partitions (RF 3, 3 "
            "brokers, acks=all producers)",
            COLUMNS,
            (case.baseline, case.row),
            baseline=case.baseline.label,
            ratio_of="admin_ms",
            notes=notes,
        )
        for case in cases
    ]


COLUMNS = (
    Column("admin_ms", "admin answers ms", ",.0f"),
    Column("behind_etcd_ms", "admin after etcd ms", ",.0f"),
    Column("admin_complete_ms", "admin complete ms", ",.0f"),
    Column("outage_ms", "outage ms", ",.0f"),
    Column("leader_changes", "leader changes", ",.0f"),
    Column("isr_shrinks", "ISR shrinks", ",.0f"),
    Column("acked", "acked", ",.0f"),
)


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    return [result for n in knobs.sizes for result in await one_size(n, knobs)]


SUITE = BenchSuite(
    "etcd_outage",
    "etcd SIGKILL + restart after 10 s and SIGSTOP 15 s under acks=all producers: leader "
    "changes, ISR shrinks, acked records lost, admin answers after etcd returns",
    run,
    time_limit_s=5400.0 if large_enabled() else 1800.0,
)
