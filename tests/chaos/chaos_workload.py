"""The workload of a chaos run: SDK producers (acks=all) and a live consumer, all recorded.

Each producer sends records whose value is a unique id (``p<producer>-<seq>``) round-robin over
the partitions, at a steady rate with a bounded number in flight, and records what it was told:
an acknowledgement with its offset, or a failure. The live consumer reads every partition from
the earliest offset while faults happen and records each (partition, offset, id) it sees. The
monitor asks every broker for Metadata twice a second and records the controller epoch it
reports. The checkers compare all of this with the final read and the replicas on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from chaos_checks import Ack, EpochSighting, Seen

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.client import EARLIEST, LATEST, Consumer, Producer
from leasehold.errors import LeaseholdError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkloadSpec:
    topic: str
    partitions: int
    producers: int = 2
    rate_per_s: float = 40.0  # per producer
    window: int = 32  # records in flight per producer
    delivery_timeout_ms: int = 40_000
    request_timeout_ms: int = 8_000


@dataclass
class WorkloadLog:
    """Everything the clients were told; the checkers' input."""

    sent: set[str] = field(default_factory=set)
    acks: list[Ack] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # record id -> error
    seen: list[Seen] = field(default_factory=list)
    sightings: list[EpochSighting] = field(default_factory=list)
    consumer_errors: list[str] = field(default_factory=list)


class Workload:
    def __init__(
        self,
        spec: WorkloadSpec,
        admin: str,
        brokers: dict[int, str],
        clock: Callable[[], float],
    ) -> None:
        self.spec = spec
        self.admin = admin
        self.brokers = brokers  # broker id -> address (stable across restarts)
        self.clock = clock
        self.log = WorkloadLog()
        self.ack_times: list[float] = []
        self._stop_producing = asyncio.Event()
        self._stop_reading = asyncio.Event()
        self._producers: list[asyncio.Task] = []
        self._others: list[asyncio.Task] = []

    def start(self) -> None:
        self._producers = [
            asyncio.create_task(self._produce(i), name=f"producer-{i}")
            for i in range(1, self.spec.producers + 1)
        ]
        self._others = [
            asyncio.create_task(self._consume(), name="live-consumer"),
            asyncio.create_task(self._monitor(), name="epoch-monitor"),
        ]

    async def stop_producers(self) -> None:
        """Stop sending; wait until every record in flight is acknowledged or failed."""
        self._stop_producing.set()
        await asyncio.gather(*self._producers)

    async def stop_readers(self) -> None:
        self._stop_reading.set()
        await asyncio.gather(*self._others)

    # ------------------------------------------------------------------------------ producing

    async def _produce(self, index: int) -> None:
        spec = self.spec
        producer = Producer(
            admin=self.admin,
            acks="all",
            linger_ms=5,
            retry_backoff_ms=150,
            delivery_timeout_ms=spec.delivery_timeout_ms,
            request_timeout_ms=spec.request_timeout_ms,
        )
        in_flight: set[asyncio.Future] = set()
        seq = 0
        try:
            while not self._stop_producing.is_set():
                if len(in_flight) >= spec.window:
                    await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                rid = f"p{index}-{seq:06d}"
                partition = seq % spec.partitions
                try:
                    future = await producer.send(spec.topic, rid.encode(), partition=partition)
                except LeaseholdError as e:  # metadata unavailable: not sent, try again
                    log.info("send failed before queueing: %s", e)
                    await asyncio.sleep(0.2)
                    continue
                self.log.sent.add(rid)
                future.add_done_callback(self._recorder(index, seq, rid))
                in_flight.add(future)
                future.add_done_callback(in_flight.discard)
                seq += 1
                await asyncio.sleep(1.0 / spec.rate_per_s)
        finally:
            # close() flushes: every record resolves within the delivery timeout
            try:
                await asyncio.wait_for(producer.close(), spec.delivery_timeout_ms / 1000 + 10)
            except TimeoutError:
                log.error("producer %d did not flush within its delivery timeout", index)

    def _recorder(self, producer: int, seq: int, rid: str) -> Callable[[asyncio.Future], None]:
        def record(future: asyncio.Future) -> None:
            if future.cancelled():
                self.log.failed[rid] = "cancelled"
            elif future.exception() is not None:
                self.log.failed[rid] = repr(future.exception())
            else:
                meta = future.result()
                self.log.acks.append(Ack(producer, seq, meta.partition, meta.offset, rid))
                self.ack_times.append(self.clock())

        return record

    # ------------------------------------------------------------------------------- consuming

    async def _consume(self) -> None:
        consumer = Consumer(admin=self.admin, max_wait_ms=300, request_timeout_ms=5_000)
        try:
            while not self._stop_reading.is_set():
                try:
                    if not consumer.assignment():
                        tps = [(self.spec.topic, p) for p in range(self.spec.partitions)]
                        await consumer.assign(tps, "earliest")
                    for r in await consumer.poll(timeout_ms=500):
                        rid = r.value.decode(errors="replace") if r.value is not None else ""
                        self.log.seen.append(Seen("live-consumer", r.partition, r.offset, rid))
                except LeaseholdError as e:
                    self.log.consumer_errors.append(f"t={self.clock():.1f}s {e!r}")
                    await asyncio.sleep(0.5)
        finally:
            await consumer.close()

    async def _monitor(self) -> None:
        channels = {b: grpc.aio.insecure_channel(a) for b, a in self.brokers.items()}
        try:
            while not self._stop_reading.is_set():
                await asyncio.gather(*(self._sight(b, ch) for b, ch in channels.items()))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop_reading.wait(), 0.5)
        finally:
            for ch in channels.values():
                await ch.close()

    async def _sight(self, broker: int, ch: grpc.aio.Channel) -> None:
        try:
            resp = await broker_pb2_grpc.BrokerServiceStub(ch).Metadata(
                broker_pb2.MetadataRequest(), timeout=1.0
            )
        except grpc.aio.AioRpcError:
            return  # paused, dead or restarting
        self.log.sightings.append(EpochSighting(self.clock(), broker, resp.controller_epoch))


async def read_all(admin: str, topic: str, partitions: int, timeout_s: float):
    """Every record of every partition from the earliest offset to the current end, read by a
    fresh consumer: {partition: [(offset, record id)]}."""
    consumer = Consumer(admin=admin, max_wait_ms=200, request_timeout_ms=10_000)
    try:
        tps = [(topic, p) for p in range(partitions)]
        await consumer.assign(tps, "earliest")
        starts = await consumer.offsets_for({tp: EARLIEST for tp in tps})
        ends = await consumer.offsets_for({tp: LATEST for tp in tps})
        out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(*tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                behind = {tp[1]: (consumer.position(*tp), ends[tp]) for tp in tps}
                raise TimeoutError(f"final read incomplete after {timeout_s}s: {behind}")
            for r in await consumer.poll(timeout_ms=500):
                if r.offset < ends[(topic, r.partition)]:
                    rid = r.value.decode(errors="replace") if r.value is not None else ""
                    out[r.partition].append((r.offset, rid))
        return out, {tp[1]: (starts[tp], ends[tp]) for tp in tps}
    finally:
        await consumer.close()
