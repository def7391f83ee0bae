"""In-process micro-benchmark of the controller's own CPU on its two large-cluster paths.

Not a registered suite (the scenario suites measure the real processes): this drives a real
``Controller`` fed by the same metadata events its watch would produce, with etcd replaced by an
in-memory store (commits succeed at once, values are still encoded) and the broker channels by a
recorder that serialises every request as gRPC would. So the figures are the controller's event
loop time alone, which is what the failover and controlled-shutdown targets leave once etcd
(~52k keys/s) and the brokers are accounted for.

    python -m bench.controller_micro                 # 10,000 and 100,000 partitions
    python -m bench.controller_micro 10000 --profile /tmp/cm.prof
    python -m bench.controller_micro 1_000_000 --brokers 1000   # bench scale's target size
    python -m bench.controller_micro 1_000_000 --brokers 1000 --standby-moves

Figures per size: ``um_sent_ms`` (failover start -> every broker's UpdateMetadata serialised
and handed over, i.e. on the wire in the real controller), ``failover_ms`` (the whole failover
handler), ``shutdown_ms`` (ControlledShutdown handler of broker 1), ``broker_failure_ms`` (the
handler of broker 1's lease expiry: what it led re-elected), each with the first and the last
other broker's first UpdateMetadata serialised after its start (``sd_first_um_sent_ms``,
``sd_um_sent_ms``, ``bf_first_um_sent_ms``, ``bf_um_sent_ms``), and the process CPU time of
the handlers (``*_cpu_ms``: less sensitive to a shared machine's load). ``--standby-moves``
adds ``standby_moves_cpu_ms``: a standby applying what broker 1 led moved to another replica
(a controlled shutdown's leadership moves, as its watch would see them), ``MOVES_PER_BATCH``
states a watch batch, each followed by its sync. With 3 brokers (the
default) broker 1 leads every partition; with ``--brokers N`` replicas rotate over N brokers,
so broker 1 leads ``partitions / N`` and follows twice as many, as in ``bench scale``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from leasehold.controller.v1 import controller_pb2
from leasehold.etcd.fenced import CommitResult, Write
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.controller import Controller
from services.controller.core import BrokerInfo, LeaderAndIsr, StateChangePlan, TopicPartition
from services.controller.delivery.channels import (
    _RESPONSES,
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)
from services.controller.statelog import StateChangeLog
from services.controller.store import PlanCommit

BROKERS = (1, 2, 3)
PER_TOPIC = 1_000
# State changes a standby's watch batch holds in ``--standby-moves``: about one fenced
# transaction's (a commit writes at most ``MAX_TXN_OPS`` less the fence's two compares, 126
# states, a transaction). A watch may deliver each transaction in a batch of its own, under
# the standby's ``CACHE_REFRESH_AT_ONCE`` and so re-encoded at once, as py-spy showed a
# 1,000 x 1,000,000 cluster's standby doing through a controlled shutdown.
MOVES_PER_BATCH = 125


class MemoryStore:
    """The ``ControllerStore`` surface the failover and shutdown paths use, without etcd."""

    def __init__(self, first_revision: int) -> None:
        self.ks = Keyspace("micro")
        self.mirror: dict = {}
        self.revision = first_revision
        self.writes = 0

    async def bump_epoch(self, key: bytes, revision: int, controller_id: int) -> tuple[int, int]:
        self.revision += 1
        return 2, self.revision

    def clear_fence(self) -> None:
        pass

    async def commit_plan(
        self, plan: StateChangePlan, offline: Mapping[TopicPartition, Iterable[int]] | None = None
    ) -> PlanCommit:
        epochs = {}
        for w in plan.writes:
            codec.encode_write(w, (offline or {}).get(w.tp, ()))
            self.revision += 1
            epochs[w.tp] = self.revision
        self.writes += len(plan.writes)
        return PlanCommit(epochs=epochs, transactions=-(-len(plan.writes) // 126))

    async def commit(self, writes: list[Write]) -> CommitResult:
        return CommitResult()

    async def read_modify_write(self, updates, extra=(), *, attempts: int = 5) -> dict:
        return {}


class RecordingChannels(ControllerChannelManager):
    """The real manager (queues, sender tasks, ``wait_issued``) with gRPC replaced by a call
    that, like grpc aio, serialises the request in a task of its own and answers at once; it
    notes when each broker's first request of each kind was serialised (on the wire, for
    real): ``first_at[(kind, broker id)]``, and ``um_at[broker id]`` for UpdateMetadata;
    ``on_first(kind, broker id)`` is called right then."""

    def __init__(self) -> None:
        super().__init__(ChannelSettings("127.0.0.1", 9999), lambda *a: None)
        self.um_at: dict[int, float] = {}
        self.first_at: dict[tuple[str, int], float] = {}
        self.on_first: Callable[[str, int], None] = lambda kind, broker_id: None
        self.bytes = 0

    def add_broker(self, info: BrokerInfo) -> None:
        self.remove_broker(info.id)
        broker = self._broker(info, None)  # type: ignore[arg-type]
        broker.methods = {kind: self._method(broker, kind) for kind in _RESPONSES}
        broker.task = asyncio.create_task(self._sender(broker))
        self._brokers[info.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        broker = self._take(broker_id)
        if broker is not None and broker.task is not None:
            broker.task.cancel()

    def _connect_ahead(self, broker: _Broker) -> None:
        return None  # no channel to connect

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                self.bytes += len(broker.serialize(request))
                now = time.perf_counter()
                if (kind, broker.info.id) not in self.first_at:
                    self.first_at[(kind, broker.info.id)] = now
                    self.on_first(kind, broker.info.id)
                if kind == UPDATE_METADATA:
                    self.um_at.setdefault(broker.info.id, now)
                await asyncio.sleep(0)
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call

    async def close(self) -> None:
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)


Recording = TypeVar("Recording", bound=RecordingChannels)


def broker_ids(count: int = len(BROKERS)) -> tuple[int, ...]:
    return tuple(range(1, count + 1))


def metadata_events(
    partitions: int, leader: int | None, brokers: int = len(BROKERS)
) -> tuple[list[ev.ControllerEvent], dict[TopicPartition, int]]:
    """Brokers, topics and partition states as the watch delivers them (all led, full ISR):
    ``leader`` leads every partition, or (None) replicas rotate over the ``brokers``, each
    leading ``partitions / brokers`` and following twice as many, as ``bench scale`` places
    them."""
    ids = broker_ids(brokers)
    infos = tuple(BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10 + b) for b in ids)
    topics: dict[str, dict[int, list[int]]] = {}
    for i in range(partitions):
        if leader is None:
            replicas = [ids[(i + k) % brokers] for k in range(3)]
        else:
            others = [b for b in ids if b != leader]
            replicas = [leader, others[i % 2], others[(i + 1) % 2]]
        topics.setdefault(f"bench-{i // PER_TOPIC}", {})[i % PER_TOPIC] = replicas
    revision = 100
    topic_updates, state_updates = [], []
    leaders: dict[TopicPartition, int] = {}
    for name, parts in topics.items():
        revision += 1
        value = metadata_pb2.TopicAssignment(
            topic_id=f"{name:0>32}"[-32:],
            partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in parts.items()},
        )
        topic_updates.append(ev.TopicUpdate(name, value, revision))
        for p, replicas in parts.items():
            revision += 1
            tp = TopicPartition(name, p)
            lai = LeaderAndIsr(replicas[0], 3, tuple(replicas), 1, partition_epoch=revision)
            state = codec.StoredPartitionState(lai)
            state_updates.append(ev.PartitionStateUpdate(tp, state, revision))
            leaders[tp] = replicas[0]
    events: list[ev.ControllerEvent] = [
        ev.BrokerChange(registered=infos),
        ev.TopicChange(tuple(topic_updates)),
        ev.PartitionStateChange(tuple(state_updates)),
        ev.Synced(revision),
    ]
    return events, leaders


async def standby(
    partitions: int,
    leader: int | None,
    statelog: StateChangeLog,
    channels: type[RecordingChannels] = RecordingChannels,
    brokers: int = len(BROKERS),
) -> Controller:
    """A standby controller that has seen the cluster's metadata; once active, it talks to
    the brokers through ``channels`` (a ``RecordingChannels``, or a test's subclass of it)."""
    events, _ = metadata_events(partitions, leader, brokers)
    store = MemoryStore(first_revision=10 * partitions)
    c = Controller(ControllerConfig(controller_id=1), store, statelog, lambda: [], channels)
    for e in events:
        await c.handle(e)
    await c.handle(ev.RefreshStandbyCache())  # the standby's deferred cache refresh, now
    return c


async def active(
    partitions: int, statelog: StateChangeLog, channels: type[Recording]
) -> tuple[Controller, Recording]:
    """An active controller, broker 1 leading every partition, after its failover and the
    answers to it; with its ``channels``."""
    c = await standby(partitions, 1, statelog, channels)
    await failover(c)
    assert isinstance(c.channels, channels)
    return c, c.channels


async def failover(c: Controller) -> dict[str, float]:
    cpu = time.process_time()
    started = time.perf_counter()
    c.role.elected(2, c.store.revision, time.monotonic())
    await c.handle(ev.Synced(c.store.revision))
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    await asyncio.sleep(0.05)  # let the senders drain what the last events queued
    assert c.active, "failover did not complete"
    channels = c.channels
    assert isinstance(channels, RecordingChannels)
    live = c.ctx.live_or_shutting_down_broker_ids
    um = max(channels.um_at.values()) if len(channels.um_at) == len(live) else float("nan")
    return {
        "um_sent_ms": (um - started) * 1000,
        "failover_ms": (done - started) * 1000,
        "failover_cpu_ms": cpu * 1000,
    }


async def _timed(
    c: Controller, broker_id: int, event: ev.ControllerEvent
) -> tuple[float, float, float, float]:
    """Handle ``event``: its wall and CPU ms, and the ms from its start until the first and
    the last broker other than ``broker_id`` had its first UpdateMetadata after it began."""
    channels = c.channels
    assert isinstance(channels, RecordingChannels)
    channels.um_at.clear()
    others = sorted(c.ctx.live_or_shutting_down_broker_ids - {broker_id})
    cpu = time.process_time()
    started = time.perf_counter()
    await c.handle(event)
    elapsed = (time.perf_counter() - started) * 1000
    cpu = (time.process_time() - cpu) * 1000
    await asyncio.sleep(0.05)  # let the senders drain what the event queued last
    sent = [channels.um_at.get(b, float("nan")) for b in others]
    return elapsed, cpu, (min(sent) - started) * 1000, (max(sent) - started) * 1000


async def shutdown(c: Controller, broker_id: int) -> dict[str, float]:
    future = asyncio.get_running_loop().create_future()
    req = controller_pb2.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=-1)
    elapsed, cpu, first, last = await _timed(c, broker_id, ev.ControlledShutdown(req, future))
    resp = future.result()
    assert resp.error_code == 0 and not resp.remaining_partitions, resp
    return {
        "shutdown_ms": elapsed,
        "shutdown_cpu_ms": cpu,
        "sd_first_um_sent_ms": first,
        "sd_um_sent_ms": last,
        "shutdown_writes": c.store.writes,
    }


async def broker_failure(c: Controller, broker_id: int) -> dict[str, float]:
    """``broker_id``'s registration disappears (lease expiry) on an active controller."""
    c.store.writes = 0
    elapsed, cpu, first, last = await _timed(
        c, broker_id, ev.BrokerChange(deregistered=(broker_id,))
    )
    assert broker_id not in c.ctx.live_or_shutting_down_broker_ids
    return {
        "broker_failure_ms": elapsed,
        "broker_failure_cpu_ms": cpu,
        "bf_first_um_sent_ms": first,
        "bf_um_sent_ms": last,
        "broker_failure_writes": c.store.writes,
    }


async def standby_moves(partitions: int, brokers: int = len(BROKERS)) -> dict[str, float]:
    """A standby told, as its watch would tell it, that every partition broker 1 led is now
    led by the next replica of its ISR: ``MOVES_PER_BATCH`` states a batch, each batch
    followed by its sync (a standby re-encodes its cache after each); the CPU of all of it."""
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(f"{tmp}/sc.log", controller_id=1)
        c = await standby(partitions, 1 if brokers == len(BROKERS) else None, log, brokers=brokers)
        ctx = c.ctx
        revision = c.store.revision
        updates = []
        for tp in ctx.partitions_led_by(1):
            lai = ctx.leader_and_isr(tp)
            assert lai is not None
            revision += 1
            moved = LeaderAndIsr(
                next(r for r in lai.isr if r != 1),
                lai.leader_epoch + 1,
                lai.isr,
                lai.controller_epoch,
                partition_epoch=revision,
            )
            updates.append(ev.PartitionStateUpdate(tp, codec.StoredPartitionState(moved), revision))
        cpu = time.process_time()
        for i in range(0, len(updates), MOVES_PER_BATCH):
            batch = updates[i : i + MOVES_PER_BATCH]
            await c.handle(ev.PartitionStateChange(tuple(batch)))
            await c.handle(ev.Synced(batch[-1].mod_revision))
        cpu = time.process_time() - cpu
        assert not ctx.partitions_led_by(1), "the standby did not apply the moves"
        await c.deactivate("done", rebuild=False)  # closes the channels it kept ready
        log.close()
    return {"standby_moves": len(updates), "standby_moves_cpu_ms": cpu * 1000}


async def measure(
    partitions: int,
    profile: cProfile.Profile | None,
    *,
    with_shutdown: bool = True,
    with_broker_failure: bool = True,
    with_standby_moves: bool = False,
    brokers: int = len(BROKERS),
) -> dict[str, float]:
    out: dict[str, float] = {}
    if with_standby_moves:
        out.update(await standby_moves(partitions, brokers))
    with tempfile.TemporaryDirectory() as tmp:
        log = StateChangeLog(f"{tmp}/sc.log", controller_id=1)
        t = time.perf_counter()
        c = await standby(partitions, None, log, brokers=brokers)
        out["warm_standby_ms"] = (time.perf_counter() - t) * 1000
        if profile is not None:
            profile.enable()
        out.update(await failover(c))
        if profile is not None:
            profile.disable()
        await c.deactivate("done")
        log.close()
        del c
        if with_shutdown:
            out.update(await _on_active(f"{tmp}/sc2.log", partitions, profile, shutdown, brokers))
        if with_broker_failure:
            out.update(
                await _on_active(f"{tmp}/sc3.log", partitions, profile, broker_failure, brokers)
            )
    return out


async def _on_active(
    statelog: str,
    partitions: int,
    profile: cProfile.Profile | None,
    step: Callable[[Controller, int], Awaitable[dict[str, float]]],
    brokers: int = len(BROKERS),
) -> dict[str, float]:
    """``step`` against broker 1 on a controller made active, only the step profiled: with
    3 brokers broker 1 leads every partition; with more, replicas rotate (it leads
    ``partitions / brokers``, as a broker of ``bench scale`` does)."""
    log = StateChangeLog(statelog, controller_id=1)
    c = await standby(partitions, 1 if brokers == len(BROKERS) else None, log, brokers=brokers)
    await failover(c)
    c.store.writes = 0
    if profile is not None:
        profile.enable()
    figures = await step(c, 1)
    if profile is not None:
        profile.disable()
    await c.deactivate("done")
    log.close()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--profile", default="", help="write a cProfile of the measured parts")
    parser.add_argument("--no-shutdown", action="store_true", help="skip the controlled shutdown")
    parser.add_argument("--no-broker-failure", action="store_true", help="skip the broker failure")
    parser.add_argument(
        "--standby-moves", action="store_true", help="also a standby applying broker 1's moves"
    )
    parser.add_argument(
        "--brokers",
        type=int,
        default=len(BROKERS),
        help="brokers in the cluster (3: broker 1 leads every partition; more: replicas rotate)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for size in args.sizes:
        profile = cProfile.Profile() if args.profile else None
        figures = asyncio.run(
            measure(
                size,
                profile,
                with_shutdown=not args.no_shutdown,
                with_broker_failure=not args.no_broker_failure,
                with_standby_moves=args.standby_moves,
                brokers=args.brokers,
            )
        )
        print(f"{size:>7} partitions: " + ", ".join(f"{k} {v:,.0f}" for k, v in figures.items()))
        if profile is not None:
            profile.dump_stats(args.profile.replace(".prof", f"-{size}.prof"))


if __name__ == "__main__":
    main()
