"""In-process micro-benchmark of a surviving broker applying a broker failure's LeaderAndIsr.

Not a registered suite (``broker_failure`` measures the real processes): this builds the broker
agent's real ``ReplicaManager`` (a ``LogManager`` on a temporary directory, the real fetcher
manager and fetcher tasks) in the state of broker 2 of that scenario — a follower of broker 1
for N partitions (RF 3, followers rotating over brokers 2 and 3), its fetchers idle in a long
poll to broker 1 — and then hands ``BrokerControlServicer.LeaderAndIsr`` the request the
controller sends when broker 1's lease expires: every partition at leader epoch + 1, half led by
broker 2, half by broker 3. The leaders' endpoints never answer (no network), so the figures
are the event loop's own work, which is what the 1 s target leaves once the controller and etcd
are accounted for.

    python -m bench.broker_micro                  # 10,000 partitions, one round
    python -m bench.broker_micro 10000 --rounds 5 --dir /dev/shm
    python -m bench.broker_micro 10000 --profile /tmp/bm.prof

Each round sets up afresh (creating N logs takes seconds on a disk; ``--dir /dev/shm`` makes
that quick, and only the journal's one fdatasync in the apply gets cheaper), prints its
figures, and several rounds end with each figure's minimum and median.

Figures (wall ms and process CPU ms; CPU is the one to compare on a shared machine):

- ``decode``: ``control_convert.leader_and_isr_from_pb`` plus the servicer's partition checks, alone
  (the same-run baseline: the apply's target is a small multiple of it);
- ``call``: the whole servicer call (decode, apply, heap settle, response);
- ``apply``: ``ReplicaManager.become_leader_or_follower`` inside that call;
- ``call_gc``: the garbage collector's share of the call (collections the call's allocations
  set off; the servicer freezes the heap after it, as the agent runs);
- ``after``: the CPU spent in the 200 ms after the answer (the new fetchers' first rounds);
- ``resend``: the same request again (every partition ignored: equal leader epoch), as the
  controller's replica step re-sends it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from leasehold.etcd import Keyspace
from leasehold.heap import HeapFreezer
from services.broker_agent import control_convert
from services.broker_agent.control_servicer import BrokerControlServicer, _check_partitions
from services.broker_agent.follower.fetch_state import FetcherSettings
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.log import LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, Endpoint
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.topic_configs import ConfigStore

LOCAL = 2  # the surviving broker measured
DEAD = 1
OTHER = 3
PER_TOPIC = 1_000
BROKER_EPOCH = 42
ENDPOINTS = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in (DEAD, LOCAL, OTHER)}


class SilentLeader:
    """A leader endpoint that never answers (a long poll with nothing new, or a dead peer
    whose connection has not failed yet): the fetchers park on it and cost nothing."""

    def __init__(self, leader: Endpoint) -> None:
        self.leader = leader
        self._never = asyncio.Event()

    async def _wait(self) -> Any:
        await self._never.wait()
        raise AssertionError("unreachable")

    async def wait_ready(self, _timeout_s: float) -> bool:
        return True

    async def fetch(self, *_args: Any, **_kwargs: Any) -> Any:
        return await self._wait()

    async def offsets_for_leader_epoch(self, *_args: Any, **_kwargs: Any) -> Any:
        return await self._wait()

    async def list_offset(self, *_args: Any, **_kwargs: Any) -> Any:
        return await self._wait()

    async def close(self) -> None:
        pass


def replicas_of(i: int) -> list[int]:
    """Broker 1 leads everything; the followers rotate over brokers 2 and 3."""
    return [DEAD, LOCAL, OTHER] if i % 2 == 0 else [DEAD, OTHER, LOCAL]


def request_pb(partitions: int, *, failed: bool, controller_epoch: int = 2) -> Any:
    """Before the failure (``failed`` False): broker 1 leads at epoch 1 with the full ISR.
    After: the first live replica leads at epoch 2, the ISR without broker 1."""
    states = []
    for i in range(partitions):
        replicas = replicas_of(i)
        leader, epoch, isr = (replicas[1], 2, replicas[1:]) if failed else (DEAD, 1, replicas)
        topic = f"bench-{i // PER_TOPIC}"
        states.append(
            control_pb2.LeaderAndIsrPartitionState(
                topic=topic,
                partition=i % PER_TOPIC,
                controller_epoch=controller_epoch,
                leader=leader,
                leader_epoch=epoch,
                isr=isr,
                partition_epoch=epoch,
                replicas=replicas,
                topic_id=f"{topic:0>32}"[-32:],
                leader_recovery_state=common_pb2.LEADER_RECOVERY_STATE_RECOVERED,
            )
        )
    leaders = (LOCAL, OTHER) if failed else (DEAD,)
    return control_pb2.LeaderAndIsrRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=BROKER_EPOCH,
        partition_states=states,
        live_leaders=[control_convert.endpoint_pb(ENDPOINTS[b]) for b in leaders],
    )


class GcTime:
    """Milliseconds spent in garbage collections while registered (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._started = 0.0

    def __call__(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._started) * 1000


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass
class Clock:
    """Wall and process CPU time of one step."""

    wall_ms: float = 0.0
    cpu_ms: float = 0.0

    @classmethod
    async def of(cls, step: Callable[[], Awaitable[Any]]) -> tuple[Clock, Any]:
        cpu, wall = time.process_time(), time.perf_counter()
        out = await step()
        return cls((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000), out


class Broker:
    """Broker 2's replica side, wired as ``services.broker_agent.app`` wires it."""

    def __init__(self, data_dir: Path, heap: HeapFreezer) -> None:
        self.logs = LogManager(data_dir)
        configs = ConfigStore(Keyspace("micro"), LOCAL, 1, 1 << 20)
        self.replicas = ReplicaManager(
            LOCAL, self.logs, MetadataCache(), configs, monotonic_ms, 30_000
        )
        self.replicas.broker_epoch = BROKER_EPOCH
        self.replicas.fetchers = FetcherManager(1, self._new_fetcher)
        self.servicer = BrokerControlServicer(self.replicas, heap)
        self.applies: list[Clock] = []
        apply = self.replicas.become_leader_or_follower

        async def timed_apply(request):  # the apply inside the servicer call
            clock, result = await Clock.of(lambda: apply(request))
            self.applies.append(clock)
            return result

        self.replicas.become_leader_or_follower = timed_apply  # type: ignore[method-assign]

    def _new_fetcher(self, leader: Endpoint, fetcher_id: int) -> ReplicaFetcher:
        return ReplicaFetcher(
            fetcher_id,
            SilentLeader(leader),  # type: ignore[arg-type]
            self.replicas,
            FetcherSettings(),
            monotonic_ms,
            self.replicas.follower_quota,
        )

    async def call(self, request: Any) -> tuple[Clock, Clock, Any]:
        """The servicer call, and the apply inside it."""
        clock, response = await Clock.of(lambda: self.servicer.LeaderAndIsr(request, None))
        return clock, self.applies[-1], response

    async def close(self) -> None:
        await self.replicas.close()


def decode(request: Any) -> Any:
    domain = control_convert.leader_and_isr_from_pb(request)
    _check_partitions((s.topic, s.partition) for s in domain.partitions)
    return domain


async def decoded(request: Any) -> Any:
    return decode(request)


def errors_of(response: Any) -> dict[int, int]:
    counts: dict[int, int] = {}
    for e in response.partition_errors:
        counts[e.error_code] = counts.get(e.error_code, 0) + 1
    return counts


async def measure(
    partitions: int, profile: cProfile.Profile | None, parent: str | None = None
) -> dict[str, float]:
    """One round on a fresh data directory under ``parent`` (default: the system's temp)."""
    heap = HeapFreezer(enabled=True)  # as the agent's main runs it
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        broker = Broker(Path(tmp), heap)
        try:
            return await _measure(broker, heap, partitions, profile)
        finally:
            await broker.close()


async def _measure(
    broker: Broker, heap: HeapFreezer, partitions: int, profile: cProfile.Profile | None
) -> dict[str, float]:
    out: dict[str, float] = {}
    before = request_pb(partitions, failed=False, controller_epoch=1)
    t = time.perf_counter()
    response = (await broker.call(before))[2]
    assert errors_of(response) == {Code.NONE: partitions}, errors_of(response)
    await asyncio.sleep(0.3)  # the fetchers truncate (empty logs: locally) and park
    heap.settle()
    out["setup_ms"] = (time.perf_counter() - t) * 1000
    failure = request_pb(partitions, failed=True)
    for _ in range(3):  # warm the decode; the best of three is the baseline
        clock, _domain = await Clock.of(lambda: decoded(failure))
        if "decode_cpu_ms" not in out or clock.cpu_ms < out["decode_cpu_ms"]:
            out["decode_ms"], out["decode_cpu_ms"] = clock.wall_ms, clock.cpu_ms
    if profile is not None:
        profile.enable()
    collections = GcTime()
    gc.callbacks.append(collections)
    try:
        call, apply, response = await broker.call(failure)
    finally:
        gc.callbacks.remove(collections)
    after = time.process_time()
    await asyncio.sleep(0.2)
    after = (time.process_time() - after) * 1000
    if profile is not None:
        profile.disable()
    assert errors_of(response) == {Code.NONE: partitions}, errors_of(response)
    led = sum(1 for p in broker.replicas.partitions.values() if p.is_leader)
    assert led == (partitions + 1) // 2, led
    fetching = broker.replicas.fetchers.partition_count()  # type: ignore[union-attr]
    assert fetching == partitions // 2, fetching
    out.update(
        call_ms=call.wall_ms,
        call_cpu_ms=call.cpu_ms,
        apply_ms=apply.wall_ms,
        apply_cpu_ms=apply.cpu_ms,
        call_gc_ms=collections.ms,
        after_cpu_ms=after,
    )
    resend, resend_apply, response = await broker.call(failure)
    assert errors_of(response) == {Code.STALE_CONTROLLER_EPOCH: partitions}
    out.update(
        resend_ms=resend.wall_ms,
        resend_cpu_ms=resend.cpu_ms,
        resend_apply_cpu_ms=resend_apply.cpu_ms,
    )
    return out


def summary(rounds: list[dict[str, float]], places: int = 0) -> str:
    """Each figure's minimum and median over the rounds, to ``places`` decimals (CPU: the
    minimum is the least disturbed by other processes on a shared machine)."""
    parts = []
    for key in rounds[0]:
        values = sorted(r[key] for r in rounds)
        parts.append(f"{key} {values[0]:,.{places}f}/{statistics.median(values):,.{places}f}")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000])
    parser.add_argument("--rounds", type=int, default=1, help="fresh set-ups per size")
    parser.add_argument("--dir", default=None, help="where the data directories go")
    parser.add_argument("--profile", default="", help="write a cProfile of the failure's call")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for size in args.sizes:
        profile = cProfile.Profile() if args.profile else None
        rounds = []
        for _ in range(args.rounds):
            figures = asyncio.run(measure(size, profile, args.dir))
            rounds.append(figures)
            line = ", ".join(f"{k} {v:,.0f}" for k, v in figures.items())
            print(f"{size:>7} partitions: {line}", flush=True)
        if len(rounds) > 1:
            print(f"{size:>7} min/median: {summary(rounds)}")
        if profile is not None:
            profile.dump_stats(args.profile.replace(".prof", f"-{size}.prof"))


if __name__ == "__main__":
    main()
