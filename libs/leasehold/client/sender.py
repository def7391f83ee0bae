"""The producer's sender task (Kafka's Sender): seal, expire, number, send, and apply answers.

One loop wakes when a batch is sealed or opened, when an answer arrives, or when the earliest
linger or backoff runs out. Each pass seals lingering batches, fails batches past their delivery
timeout, and for every leader sends one Produce with at most one batch per partition that may
send now (``PartitionQueue.next_to_send``). Answers come back on their own tasks, so requests
to different brokers, and successive ones to the same broker, overlap. An idempotent producer
first takes its producer id (``InitProducerId``) from any broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from leasehold.broker.v1 import broker_pb2
from leasehold.client.accumulator import PartitionQueue, ProducerBatch
from leasehold.client.errors import error_from_rpc
from leasehold.common.v1 import common_pb2 as E
from leasehold.errors import LeaseholdError, UnavailableError

if TYPE_CHECKING:
    from leasehold.client.producer import Producer

log = logging.getLogger(__name__)

MAX_PRODUCER_EPOCH = 2**15 - 1
NOT_RETRIABLE_STATUS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)


@dataclass(frozen=True)
class SendOutcome:
    """One partition's answer: an ErrorCode and offset, or ``error`` for the whole call."""

    code: int
    message: str = ""
    base_offset: int = -1
    error: LeaseholdError | None = None
    retriable: bool = True


class Sender:
    def __init__(self, producer: Producer) -> None:
        self._p = producer
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._requests: set[asyncio.Task] = set()
        self._refreshing: asyncio.Task | None = None
        self._init_after = 0.0
        self.flushing = 0

    def wake(self) -> None:
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="producer-sender")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, self._refreshing, *self._requests) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            try:
                timeout = await self._pass()
            except Exception as exc:  # a bug must fail the records, not hang their futures
                log.exception("producer sender failed")
                self._p.fail_everything(exc)
                timeout = None
            if timeout is not None and timeout <= 0:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _pass(self) -> float | None:
        """One round; returns how long to sleep at most before the next (None: until woken)."""
        p = self._p
        now = time.monotonic()
        next_due: float | None = None

        def due(at: float) -> None:
            nonlocal next_due
            next_due = at if next_due is None else min(next_due, at)

        if p.producer_epoch > MAX_PRODUCER_EPOCH:
            p.producer_id = p.producer_epoch = -1  # epochs spent: take a new producer id
        queues = p.queues()
        force = self.flushing > 0
        sendable: list[tuple[PartitionQueue, bool]] = []
        for queue in queues:
            self._expire(queue, now)
            lingering = queue.lingering(now, p.linger, force)
            if lingering is not None:
                due(lingering)
            if queue.ready or (queue.open is not None and lingering is None):
                sendable.append((queue, lingering is None))
        if not sendable:
            return _sleep(next_due, now)
        if p.idempotent and p.producer_id < 0:
            if not await self._init_producer_id(now):
                due(self._init_after)
                return _sleep(next_due, now)
        by_leader: dict[int, list[tuple[PartitionQueue, ProducerBatch]]] = {}
        missing = False
        for queue, send_open in sendable:
            if queue.backoff_until > now:
                due(queue.backoff_until)
                continue
            leader = p.metadata.leader(queue.topic, queue.partition)
            if leader is None:
                missing = True
                continue
            batch = queue.next_to_send(p.producer_id, p.producer_epoch, p.max_in_flight, send_open)
            if batch is not None:
                by_leader.setdefault(leader.leader, []).append((queue, batch))
        if missing:
            self._refresh({q.topic for q in queues})
            due(now + p.backoff)
        for broker, items in by_leader.items():
            task = asyncio.create_task(self._send(broker, items))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)
        return _sleep(next_due, now)

    def _expire(self, queue: PartitionQueue, now: float) -> None:
        """Fail waiting batches past their delivery timeout (in-flight ones wait for their
        answer, which the request timeout bounds)."""
        if queue.open is not None and now >= queue.open.deadline:
            queue.ready.append(queue.open)
            queue.open = None
        for batch in [b for b in queue.ready if now >= b.deadline]:
            error = UnavailableError(
                E.ERROR_CODE_REQUEST_TIMED_OUT,
                f"{batch.count} record(s) for {queue.topic}-{queue.partition} expired after "
                f"{self._p.delivery_timeout:g}s without an acknowledgement",
            )
            self._p.fail(queue, batch, error, in_flight=False)

    async def _init_producer_id(self, now: float) -> bool:
        """Take a producer id (or a new one when the epoch is spent); False to retry later."""
        p = self._p
        if now < self._init_after:
            return False
        brokers = sorted(p.metadata.endpoints) or [-1]
        try:
            if brokers == [-1]:
                await p.metadata.refresh({q.topic for q in p.queues()})
                brokers = sorted(p.metadata.endpoints)
            stub = p.metadata.stub(brokers[int(now * 1000) % len(brokers)])
            answer = await stub.InitProducerId(
                broker_pb2.InitProducerIdRequest(), timeout=p.request_timeout_ms / 1000
            )
        except grpc.aio.AioRpcError as exc:
            self._init_after = now + p.backoff
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                p.fail_everything(
                    error_from_rpc(exc, "InitProducerId: the brokers have no idempotent producers;"
                                   " use enable_idempotence=False")
                )  # fmt: skip
                return False
            log.info("InitProducerId failed: %s", error_from_rpc(exc))
            return False
        except LeaseholdError as exc:
            log.info("InitProducerId failed: %s", exc)
            self._init_after = now + p.backoff
            return False
        if answer.error_code != E.ERROR_CODE_NONE:
            log.info("InitProducerId failed: %s", answer.error_message)
            self._init_after = now + p.backoff
            return False
        p.producer_id, p.producer_epoch = answer.producer_id, answer.producer_epoch
        return True

    async def _send(self, broker: int, items: list[tuple[PartitionQueue, ProducerBatch]]) -> None:
        p = self._p
        try:
            request = p.produce_request(items)
            try:
                response = await p.metadata.stub(broker).Produce(
                    request, timeout=p.request_timeout_ms / 1000 + 5
                )
            except (grpc.aio.AioRpcError, LeaseholdError) as exc:
                outcome = _rpc_outcome(exc, broker)
                for queue, batch in items:
                    p.complete(queue, batch, outcome)
                self._refresh({q.topic for q, _ in items})
                return
            answers = {(t.topic, a.partition): a for t in response.topics for a in t.partitions}
            refresh = False
            for queue, batch in items:
                a = answers.get((queue.topic, queue.partition))
                if a is None:
                    outcome = SendOutcome(E.ERROR_CODE_UNKNOWN_SERVER_ERROR, "no answer")
                else:
                    outcome = SendOutcome(a.error_code, a.error_message, a.base_offset)
                    if a.HasField("current_leader"):
                        p.metadata.note_leader(
                            queue.topic, queue.partition, a.current_leader, response.node_endpoints
                        )
                    refresh = refresh or a.error_code != E.ERROR_CODE_NONE
                p.complete(queue, batch, outcome)
            if refresh:
                self._refresh({q.topic for q, _ in items})
        finally:
            self.wake()

    def _refresh(self, topics: set[str]) -> None:
        """Refresh metadata in the background, one refresh at a time."""
        if self._refreshing is not None and not self._refreshing.done():
            return

        async def refresh() -> None:
            try:
                await self._p.metadata.refresh(topics)
            except LeaseholdError as exc:
                log.info("metadata refresh failed: %s", exc)
            self.wake()

        self._refreshing = asyncio.create_task(refresh())


def _rpc_outcome(exc: grpc.aio.AioRpcError | LeaseholdError, broker: int) -> SendOutcome:
    if isinstance(exc, grpc.aio.AioRpcError):
        retriable = exc.code() not in NOT_RETRIABLE_STATUS
        error = error_from_rpc(exc, f"broker {broker}")
    else:
        retriable, error = True, exc
    return SendOutcome(E.ERROR_CODE_BROKER_NOT_AVAILABLE, str(error), error=error,
                       retriable=retriable)  # fmt: skip


def _sleep(next_due: float | None, now: float) -> float | None:
    return None if next_due is None else max(0.0, next_due - now)
