"""SIGKILL of a broker at 10,000 (and, with ``LEASEHOLD_BENCH_LARGE=1``, 100,000) partitions,
timed from the kill and from its lease's expiry, at the default session TTL.

Per size: 2 controllers, 3 broker agents, RF 3, online and settled. At 10,000 partitions broker
1 leads every partition (followers rotating over brokers 2 and 3: the controlled-shutdown
cluster, the hardest case); at 100,000 the preferred leaders rotate over all three brokers, as
Kafka's assignment places them, so broker 1 leads a third (33,334). Broker 1 is SIGKILLed.

Two clocks, both reported:

- **from the kill** (what users feel): the SIGKILL instant. Target: every partition re-led and
  every live broker's metadata updated within TTL + 1 s at 10,000 partitions, TTL + 2 s at
  100,000;
- **from expiry**: the deletion of ``/brokers/ids/1`` (its lease expired; an etcd watch), which
  is where the cluster's own work starts.

Instants: **led** = every partition state in etcd names a live leader again (a watch on the
states: the controller's elections, committed); **brokers** = brokers 2 and 3 both answer
Metadata with every partition led by a live broker (polled every 50 ms once etcd shows every
partition led, each broker asked only for the topics it has not yet shown all led; each asked
once for every topic before the kill, as clients of a real cluster keep the answers warm);
**noticed** = the controller's state-change record of the expiry. Sessions lost or unconfirmed
by the live processes during the run are counted from their logs (target 0).

Baseline, same run, same etcd (separate prefix): one ``fenced.commit`` creating as many
partition-state keys as there are partitions, 64 transactions in flight
(``bench.raw_etcd.bulk_create``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bench.controlled_shutdown import BASELINE, LEADER
from bench.framework import BenchSuite, Column, Result, Row, RunContext
from bench.observe import (
    active_controller,
    log_size,
    partition_states,
    poll_topics,
    wait_record,
    warm_metadata,
    watch_states,
    watch_until,
)
from bench.raw_etcd import BULK_CONCURRENCY
from bench.scenario import (
    LARGE_ENV,
    Layout,
    Scenario,
    Sizing,
    large_enabled,
    large_only,
    raw_state_writes,
)


@dataclass(frozen=True)
class Knobs:
    sizes: tuple[int, ...]
    per_topic: int

    @classmethod
    def of(cls, ctx: RunContext) -> Knobs:
        if large_only():
            sizes: tuple[int, ...] = (100_000,)
        else:
            sizes = (10_000, 100_000) if large_enabled() else (10_000,)
        return cls(sizes=ctx.pick(sizes, (300,)), per_topic=ctx.pick(1_000, 100))


def budget_s(partitions: int, ttl: float) -> float:
    """The target, from the kill: TTL + 1 s up to 10,000 partitions, TTL + 2 s above."""
    return ttl + (1.0 if partitions <= 10_000 else 2.0)


def layout_for(partitions: int, per_topic: int) -> Layout:
    leader = LEADER if partitions <= 10_000 else None
    return Layout(partitions, per_topic, brokers=(1, 2, 3), leader=leader)


async def one_size(n: int, knobs: Knobs) -> Result:
    layout = layout_for(n, knobs.per_topic)
    victim_leads = sum(1 for i in range(n) if layout.replicas(i)[0] == LEADER)
    sizing = Sizing.of(n)
    async with Scenario(controllers=2, brokers=3, sizing=sizing) as sc:
        raw_ms, txns = await raw_state_writes(sc.client, n)
        setup = await sc.bring_up(layout)
        lapses_before, losses_before = sc.lease_lapses(), sc.lease_losses()
        late_before = sc.late_renewals()
        client, ks = sc.client, sc.keyspace
        controller, _ = await active_controller(client, ks)
        statelog = sc.cluster.workdir / f"state-change-{controller}.log"
        offset = log_size(statelog)
        states, revision = await partition_states(client, ks)
        led = {k for k, s in states.items() if s.leader not in (LEADER, -1)}
        arm = {"start_revision": revision + 1}
        gone = asyncio.create_task(
            watch_until(client, ks.broker(LEADER), done=lambda e: e.deleted, **arm)
        )
        all_led = asyncio.create_task(
            watch_states(client, ks, target=n, good=led,
                         ok=lambda s: s.leader not in (LEADER, -1), **arm)
        )  # fmt: skip
        survivors = sc.broker_addresses(exclude=(LEADER,))
        await warm_metadata(survivors)
        try:
            killed = time.time()
            sc.cluster.brokers[LEADER].kill()
            expired = await asyncio.wait_for(gone, timeout=sizing.ttl + 30)
            led_at = await asyncio.wait_for(all_led, timeout=300)
            told = await poll_topics(
                survivors,
                {t: len(parts) for t, parts in layout.topics().items()},
                lambda p: p.leader not in (LEADER, -1),
                interval=0.05,
                timeout=300,
            )
        finally:
            gone.cancel()
            all_led.cancel()
        noticed = await wait_record(
            statelog, since=offset, timeout=30, kind="broker", event="expired", broker_id=LEADER
        )
        losses = sc.lease_losses() - losses_before
        who = {name: n for name, n in sc.log_counts(b"session lease unconfirmed").items() if n}
        lapses = sc.lease_lapses() - lapses_before
        late = sc.late_renewals() - late_before
        late_all = sc.late_renewals()
    told_at = max(told.values())
    values = {
        "kill_brokers_ms": (told_at - killed) * 1000,
        "kill_led_ms": (led_at - killed) * 1000,
        "brokers_ms": (told_at - expired) * 1000,
        "led_ms": (led_at - expired) * 1000,
        "noticed_ms": noticed["ts_ms"] - expired * 1000,
        "expiry_after_kill_ms": (expired - killed) * 1000,
    }
    budget = budget_s(n, sizing.ttl)
    met = values["kill_brokers_ms"] <= budget * 1000 and losses == 0 and lapses == 0
    verdict = f"from the kill <= TTL + {budget - sizing.ttl:g} s: {'met' if met else 'MISSED'}"
    return Result(
        f"SIGKILL of a broker leading {victim_leads:,} of {n:,} partitions (RF 3, 3 brokers)",
        COLUMNS,
        (
            Row(
                BASELINE,
                {"brokers_ms": raw_ms},
                note=f"{txns} txns, {BULK_CONCURRENCY} in flight",
            ),
            Row("SIGKILL", values, note=verdict),
        ),
        baseline=BASELINE,
        ratio_of="brokers_ms",
        notes=(
            "from the kill = the SIGKILL instant; from expiry = the killed broker's "
            "registration key deleted (its lease expired, seen by an etcd watch); led = etcd "
            "shows every partition led by a live broker; brokers = brokers 2 and 3 answer "
            "Metadata with every partition led (polled every 50 ms, per topic); noticed = the "
            "controller's 'expired' state-change record",
            f"broker {LEADER} led {victim_leads:,} partitions; topics written straight into "
            f"etcd ({knobs.per_topic:,} per topic); {setup}",
            f"{sizing.describe()}; services at log level warning; by the live processes during "
            f"the failure: {losses} sessions lost, {lapses} unconfirmed (target 0), {late} "
            f"renewals sent with under half the TTL left ({late_all} in the whole run, set-up "
            f"included); sessions unconfirmed in the whole run, by process: {who or 'none'}",
            *([f"100,000-partition runs need {LARGE_ENV}=1"] if n < 100_000 else []),
        ),
    )


async def run(ctx: RunContext) -> list[Result]:
    knobs = Knobs.of(ctx)
    return [await one_size(n, knobs) for n in knobs.sizes]


COLUMNS = (
    Column("kill_brokers_ms", "kill->brokers ms", ",.0f"),
    Column("kill_led_ms", "kill->led ms", ",.0f"),
    Column("brokers_ms", "expiry->brokers ms", ",.0f"),
    Column("led_ms", "expiry->led ms", ",.0f"),
    Column("noticed_ms", "expiry->noticed ms", ",.0f"),
    Column("expiry_after_kill_ms", "kill->expiry ms", ",.0f"),
)

SUITE = BenchSuite(
    "broker_failure",
    "SIGKILL of a broker at 10k (100k with LEASEHOLD_BENCH_LARGE=1) partitions, default TTL, "
    "from the kill and from expiry",
    run,
    time_limit_s=5400.0 if large_enabled() else 1800.0,
)
