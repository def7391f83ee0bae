"""In-process micro-benchmark of one simulation process told of a broker failure.

Not a registered suite (``bench scale`` runs the whole simulated fleet): this builds one
simulation process's share of that fleet, N simulated brokers each with the real
``ObservedControlServicer`` behind its own gRPC server (``simulation.broker.control_server``),
sharing one ``Sharing`` as a fleet process does, every cache holding the cluster's P partitions
laid out as ``bench scale`` lays them (RF 3 over B brokers, 1,000 partitions a topic, broker
1 the preferred leader of each topic's partition 0 at 1,000 brokers). Another process then
opens a control stream to each broker and sends each, at once, what the controller sends the
fleet when broker 1's lease expires: the partitions broker 1 led with their new leader (broker
2) and broker 1 gone from the live brokers. Further rounds move the same partitions on again
(each round a new body, as each failure is). A digest-only UpdateMetadata round (a controller
failover's, no states) gives a request's fixed cost.

    python -m bench.sim_micro                              # 100 brokers, 1,000 x 1,000,000
    python -m bench.sim_micro --partitions 100000 --rounds 3
    python -m bench.sim_micro --profile /tmp/sim.prof      # cProfile of the first failure round

Figures, per round (CPU is this process's, gRPC's threads included; the sender's process is
apart; wall is the sender's, from the first write to the last answer):

- ``digest_cpu_ms`` / ``digest_wall_ms``: a digest-only UpdateMetadata to every broker;
- ``failure_cpu_ms`` / ``failure_wall_ms``: the broker failure's UpdateMetadata to every broker
  (all of them show broker 1's partitions led by their leader before, then none: checked);
- ``direct_cpu_ms``: the next failure's requests handed to the servicers in process, one broker
  after another, without gRPC: the brokers' own work; ``first_cpu_ms`` is its first broker's
  (the body decoded and applied for the process), the rest is the other brokers' share.

The fleet of ``bench scale`` at 1,000 brokers runs ten such processes on the machine's cores,
beside the controllers and etcd.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import logging
import multiprocessing
import time
import uuid
from collections.abc import Sequence
from multiprocessing.connection import Connection

import grpc

from bench import scenario
from bench.broker_micro import summary
from leasehold import control_stream
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.simulation.__main__ import default_settings
from services.broker_agent.simulation.broker import (
    Observation,
    ObservedControlServicer,
    Watch,
    control_server,
    start_watch,
)
from services.broker_agent.simulation.replicas import SimulatedReplicas
from services.broker_agent.simulation.sharing import Sharing

PER_TOPIC = 1_000
CONTROLLER_ID = 1_001
CONTROLLER_EPOCH = 2
BROKER_EPOCH = 5
FAILED = 1
CONTROL = f"/{control_pb2.DESCRIPTOR.services_by_name['BrokerControlService'].full_name}/Control"


class Layout(scenario.Layout):
    """``bench scale``'s layout (``bench.scenario.Layout``, no fixed leader: global partition i
    has replicas brokers i, i+1, i+2, mod B, from 1), read by topic and partition."""

    @classmethod
    def of(cls, brokers: int, partitions: int) -> Layout:
        return cls(partitions, PER_TOPIC, tuple(range(1, brokers + 1)))

    def topic_count(self) -> int:
        return -(-self.partitions // self.per_topic)

    def topic_size(self, topic: int) -> int:
        return min(self.per_topic, self.partitions - topic * self.per_topic)

    def replicas_of(self, topic: int, partition: int) -> list[int]:
        return self.replicas(topic * self.per_topic + partition)

    def led_by(self, broker: int) -> list[tuple[int, int]]:
        """(topic, partition) of every partition ``broker`` is the preferred leader of."""
        return [
            (t, p)
            for t in range(self.topic_count())
            for p in range(self.topic_size(t))
            if self.replicas_of(t, p)[0] == broker
        ]


def _state(
    layout: Layout, topic: int, partition: int, leader: int, epoch: int
) -> control_pb2.UpdateMetadataPartitionState:
    replicas = layout.replicas_of(topic, partition)
    return control_pb2.UpdateMetadataPartitionState(
        topic=f"bench-{topic}",
        topic_id=str(uuid.UUID(int=topic + 1)),
        partition=partition,
        controller_epoch=CONTROLLER_EPOCH,
        leader=leader,
        leader_epoch=epoch,
        isr=[b for b in replicas if b != FAILED] if epoch else replicas,
        replicas=replicas,
        partition_epoch=epoch,
    )


def _request(states, **fields) -> bytes:
    return control_pb2.UpdateMetadataRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=CONTROLLER_EPOCH,
        broker_epoch=BROKER_EPOCH,
        partition_states=states,
        controller_host="127.0.0.1",
        controller_port=9000,
        **fields,
    ).SerializeToString()


def _leader(epoch: int) -> int:
    """Who leads broker 1's partitions at ``epoch``: broker 1 at 0, then broker 2 (odd epochs)
    or 3 (even)."""
    if epoch == 0:
        return FAILED
    return 2 if epoch % 2 else 3


def _failure(layout: Layout, led: list[tuple[int, int]], epoch: int, **fields) -> bytes:
    """Broker 1's partitions led by ``_leader(epoch)``, at ``epoch``."""
    return _request([_state(layout, t, p, _leader(epoch), epoch) for t, p in led], **fields)


class Process:
    """One simulation process's brokers, in this process."""

    def __init__(self, brokers: int, layout: Layout) -> None:
        self.layout = layout
        self.sharing = Sharing()
        self.sharing.heap.enabled = True  # as a simulation process's main sets it
        self.brokers: list[tuple[SimulatedReplicas, ObservedControlServicer, Observation]] = []
        for broker_id in range(2, brokers + 2):  # broker 1 is the one that fails
            replicas = SimulatedReplicas(broker_id, MetadataCache(self.sharing.updates))
            replicas.broker_epoch = BROKER_EPOCH
            seen = Observation()
            servicer = ObservedControlServicer(replicas, seen, self.sharing)
            self.brokers.append((replicas, servicer, seen))
        self.servers: list[grpc.aio.Server] = []

    async def handle(self, encoded: bytes) -> None:
        """Every broker handed ``encoded``, in process, as its servicer would be."""
        for _, servicer, _ in self.brokers:
            request = self.sharing.decodes.deserialize(encoded)
            response = await servicer.UpdateMetadata(request, None)
            if response.error_code != Code.NONE:
                raise RuntimeError(f"UpdateMetadata refused: {response.error_message}")

    async def load(self) -> None:
        """Every cache holding every partition (one request a topic, the live brokers first)."""
        layout = self.layout
        live = [
            common_pb2.BrokerEndpoint(broker_id=b, host="127.0.0.1", port=10_000 + b)
            for b in layout.brokers
        ]
        for t in range(layout.topic_count()):
            size = layout.topic_size(t)
            states = [_state(layout, t, p, layout.replicas_of(t, p)[0], 0) for p in range(size)]
            await self.handle(_request(states, live_brokers=live if t == 0 else []))
        gc.collect()
        gc.freeze()

    async def serve(self) -> list[int]:
        settings = default_settings(None)
        ports = []
        for replicas, _, seen in self.brokers:
            server = control_server(replicas, seen, settings, self.sharing)
            ports.append(server.add_insecure_port("127.0.0.1:0"))
            await server.start()
            self.servers.append(server)
        return ports

    async def close(self) -> None:
        await asyncio.gather(*(s.stop(0) for s in self.servers))

    def watch(self, led: list[tuple[int, int]], leader: int) -> None:
        """Every broker counts ``led`` while its cache shows ``leader`` leading one, as a
        simulated broker of ``bench scale`` does from before a failure to its last request."""
        watch = Watch(leader, [TopicPartition(f"bench-{t}", p) for t, p in led])
        now = time.time()
        for replicas, _, seen in self.brokers:
            start_watch(seen, watch, replicas.metadata, now)

    def still_led(self) -> int:
        """Brokers whose cache still shows one of the watched partitions led by the watched
        leader."""
        return sum(1 for _, _, seen in self.brokers if seen.still_led)


def sender(conn: Connection, ports: Sequence[int]) -> None:
    """The controller's side: a control stream to each broker; each request ``conn`` gives is
    written to every broker at once, and the wall until the last answer sent back."""

    async def run() -> None:
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for port in ports]
        streams = [channel.stream_stream(CONTROL)() for channel in channels]
        sequence = 0

        async def exchange(stream, body: bytes) -> None:
            await stream.write(
                control_stream.encode_request(sequence, control_stream.UPDATE_METADATA, body)
            )
            answer = control_pb2.ControlResponse.FromString(await stream.read())
            if answer.status_code or answer.update_metadata.error_code:
                raise RuntimeError(f"answer: {answer}")

        try:
            while (body := await asyncio.to_thread(conn.recv)) is not None:
                sequence += 1
                started = time.monotonic()
                await asyncio.gather(*(exchange(s, body) for s in streams))
                conn.send(time.monotonic() - started)
        finally:
            for stream in streams:
                stream.cancel()
            await asyncio.gather(*(c.close() for c in channels))

    asyncio.run(run())


async def _round(conn: Connection, body: bytes) -> tuple[float, float]:
    """(CPU ms of this process, wall ms) for ``body`` sent to every broker over gRPC."""
    before = time.process_time()
    conn.send(body)
    wall = await asyncio.to_thread(conn.recv)
    return (time.process_time() - before) * 1e3, wall * 1e3


async def measure(
    brokers: int, cluster_brokers: int, partitions: int, rounds: int, profile
) -> list[dict[str, float]]:
    layout = Layout.of(cluster_brokers, partitions)
    led = layout.led_by(FAILED)
    process = Process(brokers, layout)
    started = time.monotonic()
    await process.load()
    loaded_s = time.monotonic() - started
    ports = await process.serve()
    context = multiprocessing.get_context("spawn")
    conn, theirs = context.Pipe()
    child = context.Process(target=sender, args=(theirs, ports), name="sim-micro-sender")
    child.start()
    figures: list[dict[str, float]] = []
    try:
        first_cache = process.brokers[0][0].metadata
        digest_only = _request([], metadata_digest=first_cache.digest())
        for _ in range(3):  # warm-up: streams open, first messages
            await _round(conn, digest_only)
        epoch = 0
        for i in range(rounds):
            digest_only = _request([], metadata_digest=first_cache.digest())
            digest_cpu, digest_wall = await _round(conn, digest_only)
            process.watch(led, _leader(epoch))  # who leads them before this round
            if process.still_led() != len(process.brokers):
                raise RuntimeError("the brokers' caches do not show the round's old leader")
            epoch += 1
            live = {"live_brokers_base": first_cache.brokers_digest()}
            if i == 0:
                live["removed_brokers"] = [FAILED]
            if profile is not None and i == 0:
                profile.enable()
            failure_cpu, failure_wall = await _round(conn, _failure(layout, led, epoch, **live))
            if profile is not None and i == 0:
                profile.disable()
            if process.still_led():
                raise RuntimeError(f"{process.still_led()} brokers still show the old leader")
            epoch += 1
            body = _failure(layout, led, epoch, live_brokers_base=first_cache.brokers_digest())
            answers = []
            before = time.process_time()
            first = process.brokers[0][1]
            answers.append(
                await first.UpdateMetadata(process.sharing.decodes.deserialize(body), None)
            )
            first_cpu = (time.process_time() - before) * 1e3
            before = time.process_time()
            for _, servicer, _ in process.brokers[1:]:
                request = process.sharing.decodes.deserialize(body)
                answers.append(await servicer.UpdateMetadata(request, None))
            rest_cpu = (time.process_time() - before) * 1e3
            if any(a.error_code != Code.NONE for a in answers):
                raise RuntimeError("the servicers refused the next failure's UpdateMetadata")
            figures.append(
                {
                    "digest_cpu_ms": digest_cpu,
                    "digest_wall_ms": digest_wall,
                    "failure_cpu_ms": failure_cpu,
                    "failure_wall_ms": failure_wall,
                    "direct_cpu_ms": first_cpu + rest_cpu,
                    "first_cpu_ms": first_cpu,
                }
            )
    finally:
        with contextlib.suppress(OSError):
            conn.send(None)  # the sender ends its streams and exits
        child.join(30)
        if child.is_alive():
            child.kill()
        await process.close()
        gc.unfreeze()  # what the load and the servicers' settles froze (``leasehold.heap``)
    print(
        f"{brokers} brokers of {cluster_brokers:,} x {partitions:,} partitions "
        f"(loaded in {loaded_s:.0f} s); broker 1 led {len(led):,}; "
        f"failure request {len(_failure(layout, led, 1)):,} B",
        flush=True,
    )
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=100, help="brokers in the process")
    parser.add_argument("--cluster-brokers", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", default="", help="write a cProfile of the first failure")
    args = parser.parse_args(argv)
    if args.brokers + 1 > args.cluster_brokers or args.cluster_brokers < 3:
        parser.error(
            "--cluster-brokers must exceed --brokers (broker 1 is the one that fails) and be "
            "at least 3 (RF 3)"
        )
    logging.basicConfig(level=logging.WARNING)
    profile = cProfile.Profile() if args.profile else None
    rounds = asyncio.run(
        measure(args.brokers, args.cluster_brokers, args.partitions, args.rounds, profile)
    )
    for i, figures in enumerate(rounds, 1):
        print(f"round {i}: " + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()))
    if len(rounds) > 1:
        print(f"min/median: {summary(rounds, places=1)}")
    if profile is not None:
        profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()
