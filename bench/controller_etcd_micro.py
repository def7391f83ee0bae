"""In-process harness of a broker failure on an active controller against a real etcd.

``bench.controller_micro`` replaces etcd by a dict, so it cannot show what the etcd path costs:
the fenced commits, and the watch events of the controller's own writes that the same event
loop receives and decodes meanwhile. This harness runs the real pieces in one process against a
real etcd (``EtcdServer``, loopback): ``ClusterWatcher`` (load, then watch the whole cluster
root), ``EventLoop``, ``ControllerStore`` and ``Controller``, with the broker channels replaced
by the recorder of ``controller_micro`` (requests serialised as gRPC would, answered at once).
A hot-standby controller (the same pieces, never elected) runs in a child process, as in the
real deployment, so its work on the same watch events shows as CPU on the shared machine.

Each round seeds a fresh cluster prefix (brokers 1-3, ``N`` partitions of RF 3 all led by
broker 1), lets the in-process controller win an election and fail over, waits until both
controllers are idle, then deletes broker 1's registration key (what its lease expiry does).
Figures, from that deletion (wall ms unless named ``cpu``):

- ``noticed``: the controller starts handling the ``BrokerChange``;
- ``commit`` / ``commit_ms``: the elections' commit starts / how long it takes;
- ``lai``: both survivors' first LeaderAndIsr serialised (handed to gRPC); ``um`` the same for
  UpdateMetadata; ``handled``: the whole event done (the replica step, the log written);
- ``synced``: the controller has applied the watch events of every write it made;
- ``cpu_decide`` / ``cpu_commit`` / ``cpu_post``: this process's CPU time until the commit
  starts / during it / from its end to ``lai``; ``cpu_lai``, ``cpu_1s``, ``cpu_synced``: until
  ``lai``, in the first second, until ``synced`` (the CPU the machine's load cannot inflate much);
- ``etcd_cpu_lai`` / ``etcd_cpu_1s``: etcd's CPU time until ``lai`` / in the first second;
- ``sb_cpu_lai`` / ``sb_cpu_1s``: the standby's CPU time until ``lai`` / in the first second;
  ``sb_synced``: the standby has applied every write (``sb_cpu_synced`` its CPU until then).

CPU times come from /proc in 10 ms steps (this process's from ``time.process_time``). With
``--profile`` this process is profiled from the deletion to ``lai`` (the critical path), with
``--profile-standby`` the standby from the deletion until it has applied every write.

Baselines in the same run, same etcd: ``raw`` commits the very values of the round's election
commit under a separate, unwatched prefix (8 transactions in flight, fenced, compare-and-set).

    python -m bench.controller_etcd_micro                  # 10,000 partitions, 3 rounds
    python -m bench.controller_etcd_micro 10000 --rounds 5 --no-standby
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection

from bench.controller_etcd_nodes import (
    BROKERS,
    LEADER,
    Node,
    RecordingChannels,
    ask,
    cpu_at,
    cpu_now,
    cpu_of,
    seed,
    standby_process,
)
from bench.framework import EtcdServer, environment
from bench.raw_etcd import bench_fence
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.fenced import Write, commit
from services.controller.delivery.channels import LEADER_AND_ISR, UPDATE_METADATA


@dataclass(frozen=True)
class Options:
    partitions: int = 10_000
    rounds: int = 3
    standby: bool = True
    profile: str = ""  # cProfile of this process's failure window, to this path
    standby_profile: str = ""  # the same for the standby child


async def round_once(
    server: EtcdServer, opts: Options, tmp: str, profile: cProfile.Profile | None
) -> dict[str, float]:
    """One broker failure on a freshly seeded prefix; figures in milliseconds."""
    ks = Keyspace(f"micro-{uuid.uuid4().hex[:8]}")
    setup = EtcdClient([server.endpoint])
    await setup.connect()
    revision = await seed(setup, ks, opts.partitions)
    node = Node(server.endpoint, ks, 1, f"{tmp}/{ks.cluster_id}.log")
    await node.start()
    await node.synced(revision)
    await node.elect()
    await node.synced(node.c.epoch_revision)
    with contextlib.ExitStack() as stack:
        standby = None
        if opts.standby:
            child = standby_process(server.endpoint, ks.cluster_id, opts.standby_profile)
            standby = stack.enter_context(child)
        await asyncio.sleep(0.3)  # the previous steps' collections and senders settle
        figures = await fail_broker(node, setup, server, standby, profile)
    written = node.written
    await node.stop()
    figures["raw"] = await raw_commit(setup, written)
    await setup.delete(ks.root + b"/", prefix=True)
    await setup.close()
    return {k: v * 1000 for k, v in figures.items()}


async def fail_broker(
    node: Node,
    setup: EtcdClient,
    server: EtcdServer,
    standby: tuple[int, Connection] | None,
    profile: cProfile.Profile | None = None,
) -> dict[str, float]:
    channels = node.c.channels
    assert isinstance(channels, RecordingChannels)
    channels.first_at.clear()
    node.commits.clear()
    assert server.pid is not None
    pids = {"etcd": server.pid}
    if standby is not None:
        pids["sb"] = standby[0]
        standby[1].send("profile")
    cpu0 = {name: cpu_of(pid) for name, pid in pids.items()}
    survivors = [b for b in BROKERS if b != LEADER]
    at_lai: asyncio.Future[dict[str, float]] = asyncio.get_running_loop().create_future()

    def on_first(kind: str, broker_id: int) -> None:
        told = all((LEADER_AND_ISR, b) in channels.first_at for b in survivors)
        if kind == LEADER_AND_ISR and told and not at_lai.done():
            if profile is not None:
                profile.disable()
            at_lai.set_result(cpu_now(pids))

    channels.on_first = on_first
    if profile is not None:
        profile.enable()
    own0 = time.process_time()
    t0 = time.perf_counter()
    first_second = asyncio.create_task(cpu_at(pids, t0 + 1.0))
    await setup.delete(node.ks.broker(LEADER))
    cpu_lai = await at_lai
    lai = max(channels.first_at[(LEADER_AND_ISR, b)] for b in survivors)
    while not node.handled:
        await asyncio.sleep(0.001)
    _, now = await setup.get_with_revision(node.ks.controller_epoch)
    synced = await node.synced(now)
    um = [channels.first_at.get((UPDATE_METADATA, b), float("nan")) for b in survivors]
    figures = {
        "noticed": node.noticed - t0,
        "commit": node.commits[0][0] - t0,
        "commit_ms": node.commits[0][1] - node.commits[0][0],
        "cpu_decide": node.commits[0][2] - own0,
        "cpu_commit": node.commits[0][3] - node.commits[0][2],
        "cpu_post": cpu_lai["own"] - node.commits[0][3],
        "lai": lai - t0,
        "um": max(um) - t0,
        "handled": node.handled - t0,
        "synced": synced - t0,
        "cpu_lai": cpu_lai["own"] - own0,
        "cpu_synced": time.process_time() - own0,
        "etcd_cpu_lai": cpu_lai["etcd"] - cpu0["etcd"],
    }
    cpu_1s = await first_second
    figures["etcd_cpu_1s"] = cpu_1s["etcd"] - cpu0["etcd"]
    figures["cpu_1s"] = cpu_1s["own"] - own0
    if standby is not None:
        pid, conn = standby
        figures["sb_cpu_lai"] = cpu_lai["sb"] - cpu0["sb"]
        figures["sb_cpu_1s"] = cpu_1s["sb"] - cpu0["sb"]
        figures["sb_synced"] = await asyncio.to_thread(ask, conn, now) - t0
        figures["sb_cpu_synced"] = cpu_of(pid) - cpu0["sb"]
    return figures


async def raw_commit(client: EtcdClient, writes: Sequence[Write]) -> float:
    """Seconds to commit ``writes``' values as fresh keys under an unwatched prefix, fenced,
    compare-and-set, 8 transactions in flight (what ``ControllerStore.commit`` does)."""
    ks = Keyspace(f"raw-{uuid.uuid4().hex[:8]}")
    fence = await bench_fence(client, ks)
    raw = [Write(ks.root + w.key, w.value, 0) for w in writes]
    started = time.perf_counter()
    await commit(client, fence, raw)
    elapsed = time.perf_counter() - started
    await client.delete(ks.root + b"/", prefix=True)
    return elapsed


ORDER = (
    "raw", "noticed", "commit", "commit_ms", "lai", "um", "handled", "synced", "cpu_decide",
    "cpu_commit", "cpu_post", "cpu_lai",
    "cpu_1s", "cpu_synced", "etcd_cpu_lai", "etcd_cpu_1s", "sb_cpu_lai", "sb_cpu_1s",
    "sb_synced", "sb_cpu_synced",
)  # fmt: skip


async def measure(opts: Options) -> list[dict[str, float]]:
    profile = cProfile.Profile() if opts.profile else None
    server = EtcdServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = [await round_once(server, opts, tmp, profile) for _ in range(opts.rounds)]
    finally:
        server.stop()
    if profile is not None:
        profile.dump_stats(opts.profile)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("partitions", nargs="?", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-standby", action="store_true", help="no standby child process")
    parser.add_argument(
        "--profile", default="", help="cProfile the controller from the expiry to the LeaderAndIsr"
    )
    parser.add_argument("--profile-standby", default="", help="cProfile the standby's")
    args = parser.parse_args(argv)
    opts = Options(
        args.partitions, args.rounds, not args.no_standby, args.profile, args.profile_standby
    )
    logging.basicConfig(level=logging.WARNING)
    print(f"{opts.partitions:,} partitions, load average {environment()['loadavg_1m']:.1f}")
    results = asyncio.run(measure(opts))
    for i, figures in enumerate(results, 1):
        print(f"round {i}: " + ", ".join(f"{k} {figures[k]:,.0f}" for k in ORDER if k in figures))
    keys = [k for k in ORDER if k in results[0]]
    print(
        "median:  "
        + ", ".join(f"{k} {statistics.median(r[k] for r in results):,.0f}" for k in keys)
    )


if __name__ == "__main__":
    main()
