"""The controller at scale, against a fleet of SIMULATED brokers (``python -m bench scale``).

Simulated brokers (``services.broker_agent.simulation``) run the agent's real registration,
session, control fence and BrokerControlService handling, without logs or a data plane, 50 a
process (``PER_PROCESS``); every figure here is labelled "simulation". Per size (``B x P``: B
brokers, P partitions, RF 3, 1,000 partitions a topic, preferred leaders rotating over the
brokers), with 2 controllers (the real service, default settings) and one etcd:

1. **topic creation**: every topic's assignment written to etcd (as admin writes it), until every
   broker hosts its replicas and caches every partition;
2. **controller failover** (default delivery, digest-first): SIGKILL of the active controller,
   until every broker accepted an UpdateMetadata of the new epoch, from the kill and from the old
   election key's deletion (lease expiry), split at the new controller's win (its state-change
   log's ``elected`` record): expiry to won, won to its UpdateMetadata push's start (the
   ``metadata_pushed`` record), won to the first broker told; the UpdateMetadata
   bytes the brokers received to then and over the whole failover, and the LeaderAndIsr
   states it resent;
3. **broker SIGKILL** of broker 1 (alone in its process; it leads P/B partitions) until every
   other broker's cache shows none of them led by it (the instant each broker applied the
   UpdateMetadata that did it), from the kill and from its registration's deletion, split at
   the active controller's detection (its ``expired`` record: when the watch delivered the
   deletion): expiry to detected, detected to the first broker told;
4. **controlled shutdown** of broker 2 (SIGTERM; the agent's shutdown), until the controller
   answers "nothing left" and every broker's cache shows none of its partitions led by it;
5. the failover again with the standby restarted under ``LEASEHOLD_DELIVERY=full`` (every
   partition in full at failover, as Kafka's controller sends it): the full path's bytes and
   times, same run (up to ``FULL_LIMIT`` brokers x partitions, or ``FULL_LIMIT_ENV``'s).

Each failure's row also gives the spread from the first broker told to the last, on the
brokers' own clocks: what of the time is the fan-out to every broker (and the simulation
processes' turns on the CPU), rather than detection and decision. The broker SIGKILL and the
shutdown also give, for the first and the last broker told, the time from the arrival of the
request that told it (its process's event loop reading it off the control stream) to that
request applied: its decoding and applying; before the arrival come the controller, the
transport and the wait for the broker's process to read it.

Memory after creation: controller RSS (active and standby) and the peak either has had so far
(the kernel's high-water mark: the creation's whole fan-out), etcd's DB file, simulated
brokers' RSS (all processes), each process with its lease renewal process
(``sim_fleet.rss_bytes``).
Sizes: ``LEASEHOLD_BENCH_SCALE=100x100000,1000x100000`` (default ``100x10000``; ``--quick``:
12 x 1,200).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from bench.framework import BenchSuite, Column, Result, Row, RunContext, filesystem_of
from bench.observe import active_controller, controller_epoch, wait_record, watch_until
from bench.scenario import Layout, Scenario, Sizing, requests_answered, write_topics
from bench.sim_fleet import (
    CpuTrace,
    Fleet,
    FleetProcess,
    fleet_niceness,
    realtime,
    rss_bytes,
    split_ids,
)

SIZES_ENV = "LEASEHOLD_BENCH_SCALE"
DEFAULT_SIZES = "100x10000"  # the largest size this 2-core machine carried (bench/README.md)
QUICK_SIZES = "12x1200"
PER_PROCESS_ENV = "LEASEHOLD_BENCH_SCALE_PER_PROCESS"
CONFIRM_ENV = "LEASEHOLD_BENCH_SCALE_CONFIRM"  # set: the plaintext broker's etcd confirmations
# The simulation processes' CPU niceness (default 0, as every figure in bench/README.md was
# taken). On a real cluster brokers never take CPU from etcd or the controllers; here they share
# 2 cores. A positive value runs etcd and the controllers first; the brokers, their own lease
# renewals included, take what CPU is left (``sim_fleet.fleet_niceness``: with the kernel's
# autogroups it is the benchmark session's group that is niced, a process's own niceness
# counting only within its session).
NICE_ENV = "LEASEHOLD_BENCH_SCALE_NICE"
# Set: etcd runs under the real-time round-robin policy (``sim_fleet.realtime``), as a stand-in
# for the machine of its own it has in a real cluster. Shared equally, its applies waited behind
# the fleet's and controllers' runnable threads for the CPU (0.1-0.8 s a 126-put transaction at
# 1,000 x 1,000,000, ~4 ms round trip on the idle machine, while etcd used under a tenth of a
# core), and every lease renewal waited behind the applies. Off by default.
ETCD_REALTIME_ENV = "LEASEHOLD_BENCH_SCALE_ETCD_REALTIME"
# Set: both controllers (restarted ones again) under the real-time policy too, below etcd,
# standing for machines of their own. Off by default.
CONTROLLERS_REALTIME_ENV = "LEASEHOLD_BENCH_SCALE_CONTROLLERS_REALTIME"


def prioritize(sc: Scenario) -> list[str]:
    """etcd and the controllers under the real-time policy, as the environment asks (etcd
    above the controllers); what was set, for the notes. Called again after a controller
    restarts."""
    done = []
    if os.environ.get(ETCD_REALTIME_ENV):
        assert sc.cluster.etcd.pid is not None
        realtime(sc.cluster.etcd.pid, priority=2)
        done.append("etcd")
    if os.environ.get(CONTROLLERS_REALTIME_ENV):
        for proc in sc.cluster.controllers.values():
            if proc.pid is not None and proc.alive():
                realtime(proc.pid, priority=1)
        done.append("controllers")
    return done


# Simulated brokers per process: they share one lease-renewal thread, and each UpdateMetadata
# body is decoded once per process (``simulation.sharing``), so more to a process costs less
# memory, decoding and idle CPU (1,000 idle brokers: 79% of a core at 20 a process, 57% at
# 100); but a process is one core, and its brokers' LeaderAndIsr requests (each broker's own)
# and lease renewals queue behind each other there.
PER_PROCESS = 50
# The full-metadata failover (every partition to every broker) is run up to this many
# brokers x partitions (``FULL_LIMIT_ENV`` sets another): above, it is minutes of the
# controller sending and the fleet receiving states it holds (~73 B each: 73 GB at
# 1,000 x 1,000,000, bench/README.md).
FULL_LIMIT = 10_000_000
FULL_LIMIT_ENV = "LEASEHOLD_BENCH_SCALE_FULL_LIMIT"
# How often the simulated brokers' figures are polled: the times come from the brokers' own
# clocks, so this only sets when the benchmark notices; a poll costs every process a pass over
# its brokers.
POLL_S = 1.0
WAIT_S = 3600.0  # creating 1,000,000 partitions for 1,000 brokers: ~30 minutes here
VICTIM, SHUTDOWN = 1, 2
LOST = "session lease lost"


def sizes(quick: bool) -> list[tuple[int, int]]:
    text = QUICK_SIZES if quick else os.environ.get(SIZES_ENV, DEFAULT_SIZES)
    out = []
    for item in text.split(","):
        brokers, _, partitions = item.strip().partition("x")
        out.append((int(brokers), int(partitions)))
    return out


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


class OverloadedError(RuntimeError):
    """Simulated brokers lost sessions: the machine cannot carry the size any further."""


async def until(fleet: Fleet, done, what: str, *, stop_on_loss: bool = True) -> list[dict]:
    """Poll every broker's figures until ``done(stats)``; returns the last figures. A lost
    session stops the size (``OverloadedError``) unless ``stop_on_loss`` is False."""
    deadline = time.monotonic() + WAIT_S
    while True:
        stats = await fleet.stats()
        if done(stats):
            return stats
        lost = fleet.log_count(LOST) if stop_on_loss else 0
        if lost:
            # A broker that lost its session re-registers as a restarted one: what follows
            # measures the machine's overload, not the scenario.
            raise OverloadedError(
                f"simulated brokers lost {lost} etcd session(s) waiting for "
                f"{what} ({load_average()}): this machine cannot carry this size"
            )
        if time.monotonic() > deadline:
            raise TimeoutError(f"simulation: {what} not reached in {WAIT_S:g}s")
        await asyncio.sleep(POLL_S)


async def quiet(sc: Scenario) -> None:
    """Until no controller has a request queued and both are idle: a standby restarted by the
    step before is still loading the cluster for a while, and a fault then would time that."""
    await requests_answered(list(sc.cluster.controllers.values()), timeout=WAIT_S)
    await sc.settle(timeout=WAIT_S)


def total(stats: list[dict], key: str) -> int:
    return sum(s[key] for s in stats)


def hosted_by(layout: Layout, broker: int) -> list[tuple[str, int]]:
    """The partitions ``broker`` is a replica of (any of which it may lead by now)."""
    return [
        (topic, p)
        for topic, parts in layout.topics().items()
        for p, replicas in parts.items()
        if broker in replicas
    ]


def state_change_log(sc: Scenario, controller_id: int) -> Path:
    return sc.cluster.workdir / f"state-change-{controller_id}.log"


async def controller_failover(
    sc: Scenario, fleet: Fleet, trace: CpuTrace, *, stop_on_loss: bool = True
) -> dict[str, float]:
    old_id, old_key = await active_controller(sc.client, sc.keyspace)
    epoch, revision = await controller_epoch(sc.client, sc.keyspace)
    logs = {c: state_change_log(sc, c) for c in sc.cluster.controllers if c != old_id}
    offsets = {c: p.stat().st_size if p.exists() else 0 for c, p in logs.items()}
    before = await fleet.stats()
    await rested(trace)
    gone = asyncio.create_task(
        watch_until(sc.client, old_key, start_revision=revision + 1, done=lambda e: e.deleted)
    )
    killed = time.time()
    sc.signal_controller(old_id, signal.SIGKILL)
    new = str(epoch + 1)
    after = await until(
        fleet,
        lambda st: all(new in s["epoch_seen_at"] for s in st),
        "new epoch everywhere",
        stop_on_loss=stop_on_loss,
    )
    expired = await asyncio.wait_for(gone, 60)
    told = max(s["epoch_seen_at"][new] for s in after)
    first = min(s["epoch_seen_at"][new] for s in after)
    sent = total(after, "update_metadata_bytes") - total(before, "update_metadata_bytes")
    mismatches = total(after, "digest_mismatches") - total(before, "digest_mismatches")
    # The rest of the failover (the state machines' startup resends every partition's
    # LeaderAndIsr and UpdateMetadata, as Kafka's does): until the new controller's
    # ``failover_done`` record, then until it has nothing queued: what every broker received.
    (new_id,) = logs
    await wait_record(
        logs[new_id],
        since=offsets[new_id],
        timeout=WAIT_S,
        event="failover_done",
        controller_epoch=epoch + 1,
    )
    # The failover's first steps on the new controller's own record: when its campaign won
    # (``detected_ms``) and when its event loop took up the win (``ts_ms``).
    elected = await wait_record(
        logs[new_id], since=offsets[new_id], event="elected", controller_epoch=epoch + 1
    )
    won = elected["detected_ms"] / 1000
    # Its UpdateMetadata push: when it began (after the epoch bump and the read up to it) and
    # how long until every broker had answered it.
    pushed = await wait_record(
        logs[new_id], since=offsets[new_id], event="metadata_pushed", controller_epoch=epoch + 1
    )
    survivor = [p for c, p in sc.cluster.controllers.items() if c != old_id]
    await requests_answered(survivor, timeout=WAIT_S)
    done = await fleet.stats()
    await sc.restart_controller(old_id)
    prioritize(sc)
    return {
        **(await cpu_used(trace, killed, expired, told, new_id)),
        "from_fault_ms": (told - killed) * 1000,
        "from_expiry_ms": (told - expired) * 1000,
        "spread_ms": (told - first) * 1000,
        "won_ms": (won - expired) * 1000,
        "handled_after_won_ms": elected["ts_ms"] - elected["detected_ms"],
        "first_told_after_won_ms": (first - won) * 1000,
        "push_began_after_won_ms": pushed["ts_ms"] - elected["detected_ms"],
        "push_ms": pushed["duration_ms"],
        "um_bytes": sent,
        "um_bytes_all": total(done, "update_metadata_bytes")
        - total(before, "update_metadata_bytes"),
        "lai_states": total(done, "leader_and_isr_states") - total(before, "leader_and_isr_states"),
        "mismatches": mismatches,
    }


async def broker_gone(
    sc: Scenario, fleet: Fleet, trace: CpuTrace, proc: FleetProcess, layout: Layout, kill: bool
) -> dict[str, float]:
    broker = proc.ids[0]
    await fleet.watch(broker, hosted_by(layout, broker))
    active_id, _ = await active_controller(sc.client, sc.keyspace)
    log = state_change_log(sc, active_id)
    offset = log.stat().st_size if log.exists() else 0
    await rested(trace)
    _, revision = await controller_epoch(sc.client, sc.keyspace)
    gone = asyncio.create_task(
        watch_until(
            sc.client,
            sc.keyspace.broker(broker),
            start_revision=revision + 1,
            done=lambda e: e.deleted,
        )
    )
    started = time.time()
    answered = None
    if kill:
        proc.kill()
    else:
        answered = (await asyncio.to_thread(proc.terminate))["at"]
    after = await until(
        fleet, lambda st: all(s["still_led"] == 0 for s in st), f"broker {broker} re-led"
    )
    expired = await asyncio.wait_for(gone, 60)
    # Each broker's own record of the UpdateMetadata that left none of them led by the broker
    # (a poll's answer comes later when the fleet is busy with the requests that follow).
    told = max(s["cleared_at"] for s in after)
    first = min(s["cleared_at"] for s in after)
    out = {
        **(await cpu_used(trace, started, expired if kill else started, told, active_id)),
        "from_fault_ms": (told - started) * 1000,
        "from_expiry_ms": (told - expired) * 1000,
        "spread_ms": (told - first) * 1000,
        **applied_after_arrival(after),
    }
    if kill:
        # The active controller's record of the loss: when its watch delivered the deletion
        # (-1 when the loss did not come from a watch delivery: no split then).
        lost = await wait_record(log, since=offset, event="expired", broker_id=broker)
        if lost["detected_ms"] > 0:
            detected = lost["detected_ms"] / 1000
            out["detected_ms"] = (detected - expired) * 1000
            out["first_told_after_detected_ms"] = (first - detected) * 1000
    if answered is not None:
        out["answered_ms"] = (answered - started) * 1000
        del out["from_expiry_ms"]  # told before its key goes: no expiry to count from
    return out


def applied_after_arrival(stats: list[dict]) -> dict[str, float]:
    """For the first and the last broker told: from the arrival of the request that told it
    (its process's event loop reading the envelope) to that request applied: its decoding
    (or waiting for the process's shared decoding) and the cache update. Before the arrival
    come the controller, the transport and the wait for the process to read it."""
    first = min(stats, key=lambda s: s["cleared_at"])
    last = max(stats, key=lambda s: s["cleared_at"])
    return {
        "first_told_applied_ms": (first["cleared_at"] - first["cleared_arrived_at"]) * 1000,
        "last_told_applied_ms": (last["cleared_at"] - last["cleared_arrived_at"]) * 1000,
    }


async def full_metadata_failover(sc: Scenario, fleet: Fleet, trace: CpuTrace) -> dict[str, float]:
    """The standby restarted with ``--delivery full`` (every partition to every broker in full
    at failover, as Kafka's controller does, with the same encoding), then the active
    controller killed: the full path's figures in the same run."""
    active, _ = await active_controller(sc.client, sc.keyspace)
    standby = next(c for c in sc.cluster.controllers if c != active)
    sc.cluster.controllers[standby].env["LEASEHOLD_DELIVERY"] = "full"
    sc.signal_controller(standby, signal.SIGTERM)
    await sc.restart_controller(standby)
    prioritize(sc)
    await quiet(sc)
    # The last row: a session lost under the full path's load is reported, not a stop.
    return await controller_failover(sc, fleet, trace, stop_on_loss=False)


# The processes whose CPU each failure's row gives (``CpuTrace``).
CPU_GROUPS = ("controllers", "fleet", "etcd")
REST_S = 2.0  # the window before a fault its row's "cores busy at rest" is read over
# Before a fault, until the cluster keeps fewer cores than this busy over ``REST_S`` (at most
# ``REST_WAIT_S``), so that it is timed on a machine at rest (1,000 idle brokers renewing
# leases: 0.2-0.6 cores): a standby re-encoding what the creation changed last (~20 s of a core
# at 1,000 x 1,000,000, begun after the controllers had looked idle), the fleet's ``watch``.
REST_CORES = 0.8
REST_WAIT_S = 30.0


def cpu_groups(sc: Scenario, fleet: Fleet) -> dict[str, list[int]]:
    """The ``CPU_GROUPS``, and each controller on its own (``controller_group``), by id: a
    restarted controller's group goes on counting its earlier processes."""
    controllers = {c: p.pid for c, p in sc.cluster.controllers.items() if p.pid and p.alive()}
    return {
        "controllers": list(controllers.values()),
        "fleet": [p.pid for p in fleet.processes if p.popen is not None],
        "etcd": [sc.cluster.etcd.pid] if sc.cluster.etcd.pid else [],
        **{controller_group(c): [pid] for c, pid in controllers.items()},
    }


def controller_group(controller_id: int) -> str:
    return f"controller {controller_id}"


async def rested(trace: CpuTrace) -> None:
    """Until the cluster kept under ``REST_CORES`` busy over the last ``REST_S``, or
    ``REST_WAIT_S`` have passed (the row's "cores busy before" then says so)."""
    deadline = time.time() + REST_WAIT_S
    while True:
        now = time.time()
        await trace.past(now)
        if busy_cores(trace, now) < REST_CORES or now > deadline:
            return
        await asyncio.sleep(POLL_S / 4)


async def cpu_used(
    trace: CpuTrace, fault: float, start: float, end: float, active: int
) -> dict[str, float]:
    """Each group's CPU milliseconds from ``start`` (the expiry, or the SIGTERM) to ``end``
    (every broker told): what telling the fleet cost, and on whose side, with the share of
    the controller ``active`` through the window (the rest of the controllers' is the
    standby's, or the killed controller's); and the cores the whole cluster kept busy in the
    ``REST_S`` before ``fault``, which the window also holds (lease renewals, polls)."""
    await trace.past(end)
    out = {f"{g}_cpu_ms": trace.used(g, start, end) * 1000 for g in CPU_GROUPS}
    out["active_cpu_ms"] = trace.used(controller_group(active), start, end) * 1000
    out["cores_at_rest"] = busy_cores(trace, fault)
    return out


def busy_cores(trace: CpuTrace, end: float) -> float:
    """The cores every side kept busy in the ``REST_S`` up to ``end``."""
    return sum(trace.used(g, end - REST_S, end) for g in CPU_GROUPS) / REST_S


def sharing_note(shared: dict[str, list[int]]) -> str:
    """What the simulated brokers of a process took from one another's work (``sharing``)."""
    decodes = shared.get("decodes", [0, 0])
    requests = shared.get("requests", [0, 0])
    return (
        f"sharing in the simulation (every process, whole run): UpdateMetadata bodies decoded "
        f"{decodes[1]:,} times for {sum(decodes):,} requests; requests naming partitions applied "
        f"{requests[1]:,} times for {sum(requests):,} (the others took the result of a broker "
        "holding the same states)"
    )


def memory(sc: Scenario, fleet: Fleet) -> dict[str, float]:
    mib = 1 << 20
    pids = [p.pid for p in sc.cluster.controllers.values() if p.pid]
    db = sc.cluster.workdir / "etcd" / "member" / "snap" / "db"
    return {
        "controller_rss_mib": max(rss_bytes(pid) for pid in pids) / mib,
        "controller_peak_rss_mib": max(rss_bytes(pid, "VmHWM") for pid in pids) / mib,
        "etcd_db_mib": (db.stat().st_size if db.exists() else 0) / mib,
        "sim_rss_mib": fleet.rss() / mib,
    }


async def scenarios(
    sc: Scenario,
    fleet: Fleet,
    trace: CpuTrace,
    layout: Layout,
    rows: list[Row],
    full_limit: int,
) -> str:
    """The failures, in order, each a row; stops at the first overload and says where. The
    full-metadata failover runs up to ``full_limit`` brokers x partitions."""
    brokers, partitions = len(layout.brokers), layout.partitions
    try:
        fast = await controller_failover(sc, fleet, trace)
        rows.append(Row("controller SIGKILL, digest-first", fast, note="simulation"))
        await quiet(sc)
        led = f"{partitions // brokers:,} led"
        killed = await broker_gone(sc, fleet, trace, fleet.processes[0], layout, kill=True)
        rows.append(Row(f"broker SIGKILL, {led}", killed, note="simulation"))
        await quiet(sc)
        stopped = await broker_gone(sc, fleet, trace, fleet.processes[1], layout, kill=False)
        rows.append(Row(f"controlled shutdown, {led}", stopped, note="simulation"))
        await quiet(sc)
        if brokers * partitions > full_limit:
            return (
                f"controller SIGKILL, full metadata: not run above {full_limit:,} cached "
                f"states (brokers x partitions): it would send {brokers - 2:,} brokers "
                f"{partitions:,} states each"
            )
        lost_before = fleet.log_count(LOST)
        full = await full_metadata_failover(sc, fleet, trace)
        lost = fleet.log_count(LOST) - lost_before
        note = "simulation; LEASEHOLD_DELIVERY=full; 2 brokers fewer (stopped above)" + (
            f"; {lost} simulated-broker sessions lost during it" if lost else ""
        )
        rows.append(Row("controller SIGKILL, full metadata", full, note=note))
    except OverloadedError as exc:
        return f"STOPPED after {len(rows)} of 5 rows: {exc}"
    return ""


async def one_size(
    brokers: int, partitions: int, quick: bool
) -> tuple[list[Row], dict[str, float], list[str]]:
    ids = list(range(1, brokers + 1))
    per_topic = 100 if quick else 1000
    layout = Layout(partitions, min(per_topic, partitions), tuple(ids))
    rows: list[Row] = []
    async with Scenario(controllers=2, brokers=0, sizing=Sizing.of(partitions)) as sc:
        await sc.start_services()
        prioritized = prioritize(sc)
        etcd_filesystem = filesystem_of(sc.cluster.etcd.data_dir or ".")
        per = 5 if quick else int(os.environ.get(PER_PROCESS_ENV, PER_PROCESS))
        confirm = bool(os.environ.get(CONFIRM_ENV))
        nice = int(os.environ.get(NICE_ENV, "0"))
        full_limit = int(os.environ.get(FULL_LIMIT_ENV, FULL_LIMIT))  # read before the creation
        groups = [[VICTIM], [SHUTDOWN], *split_ids(ids[2:], per)]
        endpoints = [sc.cluster.etcd.endpoint]
        fleet = Fleet(
            [
                FleetProcess(
                    g,
                    endpoints,
                    sc.cluster.spec.cluster_id,
                    sc.cluster.workdir / f"sim-{g[0]}.log",
                    confirm_in_etcd=confirm,
                    nice=nice,
                )
                for g in groups
            ]
        )
        niceness = contextlib.ExitStack()
        trace = CpuTrace(lambda: cpu_groups(sc, fleet)).start()
        try:
            fleet_nice = niceness.enter_context(fleet_niceness(nice))

            async def told(count: int) -> None:  # every broker so far knows every other
                await until(fleet, lambda st: all(s["live_brokers"] == count for s in st), "live")

            await fleet.start(after_wave=told)
            creator, _ = await active_controller(sc.client, sc.keyspace)
            started = time.time()
            await write_topics(sc.client, sc.keyspace, layout.topics())
            written = time.time()
            want = partitions * layout.replication
            stats = await until(
                fleet,
                lambda st: (
                    all(s["cached"] == partitions for s in st)
                    and total(st, "hosted") == want
                    and total(st, "leading") == partitions
                ),
                "every partition hosted and cached",
            )
            told = max(
                max(s["last_update_metadata_at"], s["last_leader_and_isr_at"]) for s in stats
            )
            rows.append(
                Row(
                    "topic creation",
                    {
                        **(await cpu_used(trace, started, started, told, creator)),
                        "from_fault_ms": (told - started) * 1000,
                        "etcd_write_ms": (written - started) * 1000,
                    },
                    note="simulation; from the first assignment write to every broker told",
                )
            )
            await quiet(sc)
            mem = memory(sc, fleet)
            stopped_by = await scenarios(sc, fleet, trace, layout, rows, full_limit)
            losses = sc.lease_losses()
        finally:
            trace.stop()
            fleet.close()
            niceness.close()
        sim_losses = fleet.log_count(LOST)
        late = fleet.log_count("lease renewed late")
        shared = fleet.shared()
    fence = (
        "leader changes confirmed in etcd (plaintext broker)"
        if confirm
        else ("controller epoch checked against etcd (TLS broker's fence)")
    )
    return (
        rows,
        mem,
        [
            f"{per} simulated brokers per process; fence: {fence}; controller to brokers: "
            + (
                "a control stream a broker (the default)"
                if os.environ.get("LEASEHOLD_CONTROL_STREAM", "true").lower()
                in ("1", "true", "yes", "on")
                else "a unary call a request (LEASEHOLD_CONTROL_STREAM=false)"
            )
            + (f"; simulation processes at {fleet_nice}" if nice else "")
            + (
                f"; {' and '.join(prioritized)} at real-time priority (SCHED_RR)"
                if prioritized
                else ""
            )
            + f"; etcd data and the cluster's logs on {etcd_filesystem}",
            f"etcd sessions lost: controllers {losses}, simulated brokers {sim_losses} "
            f"(renewals late: {late}); {load_average()} at the end",
            sharing_note(shared),
            *([stopped_by] if stopped_by else []),
        ],
    )


async def run(ctx: RunContext) -> list[Result]:
    results = []
    for brokers, partitions in sizes(ctx.quick):
        rows, mem, notes = await one_size(brokers, partitions, ctx.quick)
        size = f"{brokers:,} brokers x {partitions:,} partitions (RF 3)"
        results.append(
            Result(
                f"simulation: {size}",
                COLUMNS,
                tuple(rows),
                baseline=rows[0].label,
                ratio_of="from_fault_ms",
                notes=(
                    "SIMULATED brokers (real registration, session, fence and control "
                    "handling; no logs, no data plane); default TTL and settings",
                    "from fault: the kill / SIGTERM / first write, to every broker told; from "
                    "expiry: the lease's key deleted in etcd; first to last told: from the "
                    "first broker told to the last, on the brokers' own clocks (the fan-out to "
                    "every broker, and their processes' turns on the CPU); UM bytes: "
                    "UpdateMetadata bytes "
                    "all brokers received until each had the new epoch, and until the new "
                    "controller had nothing queued (whole failover); LAI states: LeaderAndIsr "
                    "partition states all brokers received in the whole failover",
                    *notes,
                ),
            )
        )
        results.append(
            Result(
                f"simulation: CPU, {size}",
                CPU_COLUMNS,
                tuple(rows),
                baseline=rows[0].label,
                ratio_of="controllers_cpu_ms",
                notes=(
                    "CPU used by each side (both controllers with their lease renewal "
                    "processes, and of it the active controller's: the one active through the "
                    "window, the winner for the controller SIGKILL; every simulation process "
                    "with its renewal process; etcd) "
                    "from the expiry (the SIGTERM for the shutdown, the first write for "
                    "the creation) to every broker told: what deciding and telling the "
                    "fleet cost, and where; read from /proc every 0.1 s (10 ms ticks) "
                    "between the samples around each end",
                    "cores busy before: every side's CPU in the 2 s before the fault, as "
                    "cores (lease renewals, the benchmark's polls): the background the "
                    "window also holds",
                ),
            )
        )
        label = "after topic creation"
        results.append(
            Result(
                f"simulation: memory, {size}",
                MEMORY_COLUMNS,
                (Row(label, mem, note="simulation"),),
                baseline=label,
                ratio_of="controller_rss_mib",
                notes=(
                    "controller RSS: the larger of active and standby; its peak: the larger "
                    "of their high-water marks (VmHWM) since they started; etcd DB: the "
                    "member/snap/db file; sim RSS: every simulated-broker process together",
                ),
            )
        )
    return results


COLUMNS = (
    Column("from_fault_ms", "from fault ms", ",.0f"),
    Column("from_expiry_ms", "from expiry ms", ",.0f"),
    Column("spread_ms", "first to last told ms", ",.0f"),
    Column("won_ms", "expiry to new controller won ms", ",.0f"),
    Column("push_began_after_won_ms", "won to push began ms", ",.0f"),
    Column("first_told_after_won_ms", "won to first told ms", ",.0f"),
    Column("detected_ms", "expiry to detected ms", ",.0f"),
    Column("first_told_after_detected_ms", "detected to first told ms", ",.0f"),
    Column("first_told_applied_ms", "first told: arrived to applied ms", ",.0f"),
    Column("last_told_applied_ms", "last told: arrived to applied ms", ",.0f"),
    Column("answered_ms", "shutdown answered ms", ",.0f"),
    Column("etcd_write_ms", "etcd writes ms", ",.0f"),
    Column("um_bytes", "UM bytes", ",.0f"),
    Column("um_bytes_all", "UM bytes, whole failover", ",.0f"),
    Column("lai_states", "LAI states, whole failover", ",.0f"),
    Column("mismatches", "digest mismatches", ",.0f"),
)
CPU_COLUMNS = (
    Column("from_expiry_ms", "from expiry ms", ",.0f"),
    Column("controllers_cpu_ms", "controllers CPU ms", ",.0f"),
    Column("active_cpu_ms", "of it the active's ms", ",.0f"),
    Column("fleet_cpu_ms", "sim fleet CPU ms", ",.0f"),
    Column("etcd_cpu_ms", "etcd CPU ms", ",.0f"),
    Column("cores_at_rest", "cores busy before", ",.2f"),
)
MEMORY_COLUMNS = (
    Column("controller_rss_mib", "controller RSS MiB", ",.0f"),
    Column("controller_peak_rss_mib", "controller peak RSS MiB", ",.0f"),
    Column("etcd_db_mib", "etcd DB MiB", ",.1f"),
    Column("sim_rss_mib", "sim RSS MiB", ",.0f"),
)

SUITE = BenchSuite(
    "scale",
    "simulation: the controller with hundreds of simulated brokers and up to 10^6 partitions",
    run,
    time_limit_s=4 * 3_600.0,
)
