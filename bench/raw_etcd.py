"""Raw etcd limits on this machine, through the same client and write path as the controller.

A fresh single-member etcd (free loopback port, temporary data directory) is written through
``leasehold.etcd.EtcdClient`` and ``leasehold.etcd.fenced.commit``: every transaction carries the
controller fence (election key create revision, controller-epoch mod revision) plus one
mod-revision compare per key, as partition-state writes do. Figures:

- fenced transactions of a full chunk (126 puts + 128 compares, the 128-op limit less the two
  fence compares) with 1, 4, 8, 16 and 64 in flight, against single-op puts one at a time
  (baseline);
- bulk creations of N keys in one ``commit`` each, with its default in flight
  (``COMMIT_CONCURRENCY``, what a broker failure's commits use) and with a creation's
  (``CREATION_COMMIT_CONCURRENCY``), each with lease renewals timed meanwhile
  (``RenewalRounds``): etcd renews a lease only after applying what was committed before;
- a paged ``range_prefix`` read of those N keys with the client's page size and a 10x larger
  one, against single-key gets one at a time. (etcd 3.5 counts the whole rest of the range on
  every page, so small pages make a large read quadratic; the two rows show what that costs.)

The measuring functions are public so later suites (topic creation, failover) can measure the
same raw figure in their own run as their baseline.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from aetcd import rpc

from bench.framework import (
    BenchSuite,
    Column,
    EtcdServer,
    Load,
    Result,
    Row,
    RunContext,
    Timer,
    closed_loop,
    filesystem_of,
)
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import PAGE_SIZE
from leasehold.etcd.fenced import (
    COMMIT_CONCURRENCY,
    CREATION_COMMIT_CONCURRENCY,
    MAX_TXN_OPS,
    Fence,
    Write,
    commit,
)
from leasehold.etcd.keepalive import BatchedKeepAlive, KeepAliveError
from leasehold.metadata.v1 import metadata_pb2

IN_FLIGHT = (1, 4, 8, 16, 64)
BULK_CONCURRENCY = COMMIT_CONCURRENCY  # fenced.commit's default, what the controller uses
# Leases renewed in each round while a bulk creation runs, and the pause between rounds.
RENEWED_LEASES = 50
RENEWAL_PAUSE_S = 0.1
PAGE_SIZES = (1_000, PAGE_SIZE)  # the old default against the current one


@dataclass(frozen=True)
class Knobs:
    duration_s: float
    warmup_s: float
    range_keys: int

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        return cls(
            duration_s=ctx.pick(5.0, 0.3),
            warmup_s=ctx.pick(1.0, 0.1),
            range_keys=ctx.pick(100_000, 3_000),
        )


def state_value(leader_epoch: int) -> bytes:
    """A realistic partition-state value (RF 3, leader 1)."""
    return metadata_pb2.PartitionState(
        leader=1, leader_epoch=leader_epoch, isr=[1, 2, 3], controller_epoch=1
    ).SerializeToString()


async def bench_fence(client: EtcdClient, keyspace: Keyspace) -> Fence:
    """Create an election key and an epoch key and fence on them, as an elected controller does."""
    election_key = keyspace.controller_election_prefix + b"bench"
    await client.put(election_key, b"bench")
    await client.put(keyspace.controller_epoch, b"1")
    election, _ = await client.get_with_revision(election_key)
    epoch, _ = await client.get_with_revision(keyspace.controller_epoch)
    assert election is not None and epoch is not None
    return Fence.controller(
        election_key, election.create_revision, keyspace.controller_epoch, epoch.mod_revision
    )


def writes_per_txn(fence: Fence) -> int:
    return MAX_TXN_OPS - len(fence.compares)


async def measure_puts(
    client: EtcdClient, keyspace: Keyspace, *, duration_s: float, warmup_s: float
) -> Load:
    """Single-op puts, one in flight: the latency floor of one etcd write (one fsync)."""
    key = keyspace.partition_state("bench-put", 0)
    value = state_value(1)

    async def op(_worker: int) -> int:
        await client.put(key, value)
        return 1

    return await closed_loop(op, concurrency=1, duration_s=duration_s, warmup_s=warmup_s)


async def measure_fenced_txns(
    client: EtcdClient,
    keyspace: Keyspace,
    fence: Fence,
    *,
    in_flight: int,
    duration_s: float,
    warmup_s: float,
) -> Load:
    """``in_flight`` workers, each committing full-chunk fenced CAS transactions on its own keys.

    The first transaction of each worker creates its keys (expected revision 0); later ones
    update them with the revisions the previous commit returned, like partition-epoch CAS.
    """
    size = writes_per_txn(fence)
    keys = [
        [keyspace.partition_state(f"bench-txn-{in_flight}-{w}", p) for p in range(size)]
        for w in range(in_flight)
    ]
    expected: list[dict[bytes, int]] = [dict.fromkeys(ks, 0) for ks in keys]
    rounds = [0] * in_flight

    async def op(worker: int) -> int:
        rounds[worker] += 1
        value = state_value(rounds[worker])
        writes = [Write(k, value, expected[worker][k]) for k in keys[worker]]
        result = await commit(client, fence, writes, concurrency=1)
        if result.stale:
            raise RuntimeError(f"unexpected stale keys in a private key set: {len(result.stale)}")
        expected[worker].update(result.revisions)
        return len(writes)

    return await closed_loop(op, concurrency=in_flight, duration_s=duration_s, warmup_s=warmup_s)


async def bulk_create(
    client: EtcdClient,
    keyspace: Keyspace,
    fence: Fence,
    topic: str,
    count: int,
    *,
    concurrency: int = BULK_CONCURRENCY,
) -> tuple[list[bytes], float, int]:
    """Create ``count`` partition-state keys in one ``commit``; return keys, seconds, txns."""
    keys = [keyspace.partition_state(topic, p) for p in range(count)]
    value = state_value(0)
    writes = [Write(k, value, 0) for k in keys]
    with Timer() as t:
        result = await commit(client, fence, writes, concurrency=concurrency)
    if len(result.revisions) != count:
        raise RuntimeError(f"bulk create wrote {len(result.revisions)} of {count} keys")
    return keys, t.elapsed_s, result.transactions


class RenewalRounds:
    """Lease renewals while something else runs: ``RENEWED_LEASES`` leases renewed in one
    round (``BatchedKeepAlive``, as the agent and the simulation renew), a round every
    ``RENEWAL_PAUSE_S``, each round timed. etcd's leader answers a renewal only once it has
    applied every entry committed before it, so these rounds show how far behind its applies
    run while the writes go on."""

    def __init__(self, endpoints: list[str], leases: list[int]) -> None:
        self._keeper = BatchedKeepAlive(endpoints)
        self._leases = leases
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="renewal-rounds", daemon=True)
        self.seconds: list[float] = []
        self.failed = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._keeper.keep_alive(self._leases, timeout=10.0)
            except KeepAliveError:
                self.failed += 1  # not every lease answered in time: said in the summary
            else:
                self.seconds.append(time.monotonic() - started)
            self._stop.wait(RENEWAL_PAUSE_S)

    def __enter__(self) -> RenewalRounds:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._keeper.close()

    def summary(self) -> str:
        ms = sorted(x * 1000 for x in self.seconds)
        failed = f", {self.failed} not answered in 10 s" if self.failed else ""
        if not ms:
            return f"no renewal round answered{failed}"
        p50, p99 = ms[len(ms) // 2], ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        return (
            f"renewal rounds meanwhile ({len(self._leases)} leases, {len(ms)} rounds): "
            f"p50 {p50:,.1f} ms, p99 {p99:,.1f} ms, max {ms[-1]:,.1f} ms{failed}"
        )


async def measure_gets(
    client: EtcdClient, keys: list[bytes], *, duration_s: float, warmup_s: float
) -> Load:
    """Single-key gets, one in flight, cycling through ``keys``."""
    position = [0]

    async def op(_worker: int) -> int:
        key = keys[position[0] % len(keys)]
        position[0] += 1
        if await client.get(key) is None:
            raise RuntimeError(f"key {key!r} vanished")
        return 1

    return await closed_loop(op, concurrency=1, duration_s=duration_s, warmup_s=warmup_s)


async def measure_range(
    client: EtcdClient,
    prefix: bytes,
    expected: int,
    *,
    duration_s: float,
    warmup_s: float,
    page_size: int = PAGE_SIZE,
) -> Load:
    """Whole-prefix reads through ``range_prefix`` (paged, one revision), one in flight."""

    async def op(_worker: int) -> int:
        kvs, _revision = await client.range_prefix(prefix, page_size=page_size)
        if len(kvs) != expected:
            raise RuntimeError(f"range read {len(kvs)} keys, expected {expected}")
        return len(kvs)

    return await closed_loop(op, concurrency=1, duration_s=duration_s, warmup_s=warmup_s)


async def etcd_version(client: EtcdClient) -> str:
    status = await client.maintenance.Status(rpc.StatusRequest(), timeout=client.timeout)
    return status.version


WRITE_COLUMNS = (
    Column("ops_per_s", "keys written/s"),
    Column("calls_per_s", "requests/s"),
    Column("p50_ms", "p50 ms", ",.2f"),
    Column("p99_ms", "p99 ms", ",.2f"),
)
READ_COLUMNS = (
    Column("ops_per_s", "keys read/s"),
    Column("calls_per_s", "reads/s"),
    Column("p50_ms", "p50 ms", ",.2f"),
    Column("p99_ms", "p99 ms", ",.2f"),
)
PUT_BASELINE = "put, 1 key, 1 in flight"
GET_BASELINE = "get, 1 key, 1 in flight"


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    timing = {"duration_s": knobs.duration_s, "warmup_s": knobs.warmup_s}
    keyspace = Keyspace("bench")
    with EtcdServer() as server:
        async with EtcdClient([server.endpoint]) as client:
            version = await etcd_version(client)
            filesystem = filesystem_of(server.data_dir or ".")
            fence = await bench_fence(client, keyspace)
            size = writes_per_txn(fence)
            write_rows = [
                Row(PUT_BASELINE, (await measure_puts(client, keyspace, **timing)).figures())
            ]
            for n in IN_FLIGHT:
                load = await measure_fenced_txns(client, keyspace, fence, in_flight=n, **timing)
                write_rows.append(Row(f"fenced txn, {size} puts, {n} in flight", load.figures()))
            count = knobs.range_keys
            leases = [await client.lease_grant(30) for _ in range(RENEWED_LEASES)]
            keys: list[bytes] = []
            # A failure's commits (the default in flight), then a creation's.
            for topic, in_flight in (
                ("bench-range", BULK_CONCURRENCY),
                ("bench-created", CREATION_COMMIT_CONCURRENCY),
            ):
                with RenewalRounds(server.endpoints, leases) as rounds:
                    created, seconds, txns = await bulk_create(
                        client, keyspace, fence, topic, count, concurrency=in_flight
                    )
                keys = keys or created
                bulk = {"ops_per_s": count / seconds, "calls_per_s": txns / seconds}
                write_rows.append(
                    Row(f"bulk create {count:,} keys, {in_flight} in flight", bulk,
                        note=f"one commit() call, {txns} txns, {seconds:.2f}s; "
                        + rounds.summary())
                )  # fmt: skip
            read_rows = [Row(GET_BASELINE, (await measure_gets(client, keys, **timing)).figures())]
            prefix = keyspace.partition_states_prefix("bench-range")
            for page in PAGE_SIZES:
                ranged = await measure_range(client, prefix, count, page_size=page, **timing)
                label = f"range_prefix {count:,} keys, pages of {page:,}"
                read_rows.append(Row(label, ranged.figures(), note=f"{ranged.calls} reads"))
    setup = (
        f"etcd {version}, one member, data dir on {filesystem}; "
        f"client leasehold.etcd.EtcdClient; {knobs.duration_s:g}s per row after "
        f"{knobs.warmup_s:g}s warm-up"
    )
    return [
        Result(
            "etcd writes: fenced CAS transactions vs single puts",
            WRITE_COLUMNS,
            tuple(write_rows),
            baseline=PUT_BASELINE,
            ratio_of="ops_per_s",
            notes=(
                setup,
                f"each txn: 2 fence compares + {size} mod-revision compares, {size} puts of a "
                f"{len(state_value(1))}-byte PartitionState (fenced.commit, one chunk per call)",
                "latency columns are per request (one put or one txn)",
            ),
        ),
        Result(
            "etcd reads: paged prefix range vs single gets",
            READ_COLUMNS,
            tuple(read_rows),
            baseline=GET_BASELINE,
            ratio_of="ops_per_s",
            notes=(
                setup,
                "range latency is the whole paged read at one revision; "
                f"{PAGE_SIZE:,} is EtcdClient.range_prefix's default page size",
            ),
        ),
    ]


SUITE = BenchSuite(
    "raw_etcd",
    "etcd txn throughput with the controller's client and fenced commits",
    run,
)
