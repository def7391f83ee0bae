"""Producer: batches records per partition and sends them to partition leaders, with retries.

``send`` picks the partition (explicit, Kafka's key hash, or round robin), encodes the record
into that partition's open batch (``accumulator``) and returns a future for its offset. A sender
task sends sealed batches — full at ``batch_size`` bytes, lingered ``linger_ms``, or flushed —
one batch per partition per request, one request per leader broker at a time per partition set,
at most ``max_in_flight`` batches per partition. Batches go as record-batch bytes; the broker
stores them as sent.

**Idempotence** (on by default with acks=all, as in Kafka): the producer takes a producer id
from a broker (``InitProducerId``) and numbers each partition's records; a retried batch keeps
its numbers, so the leader stores it once even if an earlier attempt's answer was lost, and a
gap (OUT_OF_ORDER_SEQUENCE_NUMBER) is never papered over. Leadership errors refresh metadata and
retry after ``retry_backoff_ms``, until ``retries`` attempts failed or ``delivery_timeout_ms``
passed since the batch was opened (Kafka's ``delivery.timeout.ms``: long enough to ride out a
broker's lease expiry and a new leader's election); other errors fail the batch's records.
Without idempotence a retried batch may be written twice if only its answer was lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import NamedTuple

from leasehold.broker.v1 import broker_pb2
from leasehold.client.accumulator import NO_PRODUCER, PartitionQueue, ProducerBatch
from leasehold.client.errors import error_from_code
from leasehold.client.metadata import ClusterMetadata
from leasehold.client.partitioner import DefaultPartitioner, Partitioner
from leasehold.client.sender import Sender, SendOutcome
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.errors import InvalidRequestError, LeaseholdError, NotFoundError

log = logging.getLogger(__name__)

E = common_pb2
RETRIABLE = frozenset(
    {
        E.ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
        E.ERROR_CODE_LEADER_NOT_AVAILABLE,
        E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
        E.ERROR_CODE_FENCED_LEADER_EPOCH,
        E.ERROR_CODE_UNKNOWN_LEADER_EPOCH,
        E.ERROR_CODE_REQUEST_TIMED_OUT,
        E.ERROR_CODE_NOT_ENOUGH_REPLICAS,
        E.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E.ERROR_CODE_BROKER_NOT_AVAILABLE,
        E.ERROR_CODE_KAFKA_STORAGE_ERROR,
    }
)
ACKS = {"0": 0, "1": 1, "-1": -1, "all": -1}
MAX_IN_FLIGHT_IDEMPOTENT = 5  # the leader remembers a producer's last 5 batches


class RecordMetadata(NamedTuple):
    """Where a record was written (a named tuple: one is made per record acknowledged)."""

    topic: str
    partition: int
    offset: int  # -1 with acks=0
    timestamp_ms: int


class Producer:
    """Async producer; ``async with Producer(admin="host:port") as p: await p.send(...)``."""

    def __init__(
        self,
        metadata: ClusterMetadata | None = None,
        *,
        admin: str | None = None,
        bootstrap: Sequence[str] = (),
        tls: TlsConfig | None = None,
        acks: int | str = -1,
        enable_idempotence: bool | None = None,
        linger_ms: int = 5,
        batch_size: int = 256 * 1024,
        max_in_flight: int = 5,
        retries: int = 2**31 - 1,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        partitioner: Partitioner | None = None,
    ) -> None:
        self._own_metadata = metadata is None
        self.metadata = metadata or ClusterMetadata(admin, bootstrap=bootstrap, tls=tls)
        self.acks = ACKS.get(str(acks))
        if self.acks is None:
            raise InvalidRequestError(
                E.ERROR_CODE_INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or all: {acks}"
            )
        if enable_idempotence is None:
            enable_idempotence = self.acks == -1
        elif enable_idempotence and self.acks != -1:
            raise InvalidRequestError(
                E.ERROR_CODE_INVALID_REQUIRED_ACKS, "enable_idempotence needs acks=all"
            )
        if batch_size < 1 or max_in_flight < 1 or linger_ms < 0:
            raise InvalidRequestError(
                E.ERROR_CODE_INVALID_REQUEST,
                "batch_size and max_in_flight must be positive, linger_ms not negative",
            )
        if enable_idempotence and max_in_flight > MAX_IN_FLIGHT_IDEMPOTENT:
            raise InvalidRequestError(
                E.ERROR_CODE_INVALID_REQUEST,
                f"max_in_flight must be at most {MAX_IN_FLIGHT_IDEMPOTENT} with idempotence",
            )
        self.idempotent = enable_idempotence
        self.linger = linger_ms / 1000.0
        self.batch_size = batch_size
        self.max_in_flight = max_in_flight
        self.retries = retries
        self.delivery_timeout = delivery_timeout_ms / 1000.0
        self.backoff = retry_backoff_ms / 1000.0
        self.request_timeout_ms = request_timeout_ms
        self.partitioner = partitioner or DefaultPartitioner()
        self.producer_id = NO_PRODUCER
        self.producer_epoch = NO_PRODUCER
        self._queues: dict[tuple[str, int], PartitionQueue] = {}
        self._sender = Sender(self)
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the first send

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
        timestamp_ms: int = 0,
    ) -> asyncio.Future:
        """Queue a record; the returned future resolves to its :class:`RecordMetadata`."""
        if self._closed:
            raise RuntimeError("producer is closed")
        known = self.metadata.topics.get(topic)
        count = len(known) if known else await self.metadata.partitions(topic)
        if partition is None:
            partition = self.partitioner(topic, key, count)
        elif not 0 <= partition < count:
            raise NotFoundError(
                E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                f"Topic '{topic}' has {count} partitions; partition {partition} does not exist.",
            )
        queue = self._queues.get((topic, partition))
        if queue is None:
            queue = self._queues[(topic, partition)] = PartitionQueue(topic, partition)
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future = loop.create_future()
        fresh = queue.open is None
        sealed = queue.append(
            value,
            key,
            headers,
            timestamp_ms or time.time_ns() // 1_000_000,
            future,
            self.batch_size,
            self._new_batch,
        )
        if sealed or fresh:
            self._sender.wake()
        return future

    def _new_batch(self) -> ProducerBatch:
        now = time.monotonic()
        done = asyncio.get_running_loop().create_future()
        return ProducerBatch(now, now + self.delivery_timeout, done)

    async def send_and_wait(self, topic: str, value: bytes | None, **kwargs) -> RecordMetadata:
        future = await self.send(topic, value, **kwargs)
        await self.flush()
        return await future

    async def flush(self) -> None:
        """Send everything queued now and wait until each record succeeded or failed."""
        waiting = [b.done for q in self._queues.values() for b in q.batches()]
        if not waiting:
            return
        self._sender.flushing += 1
        self._sender.wake()
        try:
            await asyncio.gather(*waiting, return_exceptions=True)
        finally:
            self._sender.flushing -= 1

    async def close(self) -> None:
        await self.flush()
        self._closed = True
        await self._sender.stop()
        if self._own_metadata:
            await self.metadata.close()

    # --- what the sender tells us ----------------------------------------------------------------

    def queues(self) -> list[PartitionQueue]:
        return list(self._queues.values())

    def complete(self, queue: PartitionQueue, batch: ProducerBatch, outcome: SendOutcome) -> None:
        """Apply one partition's answer to ``batch`` (in flight)."""
        if batch not in queue.in_flight:
            return  # failed meanwhile (``fail_everything``): its futures have their answer
        code = outcome.code
        if code == E.ERROR_CODE_NONE:
            queue.succeeded(batch)
            base = outcome.base_offset
            topic, partition = queue.topic, queue.partition
            offsets = range(base, base + batch.count) if base >= 0 else [-1] * batch.count
            make = tuple.__new__  # a RecordMetadata per record: skip the named tuple's __new__
            for offset, future, stamp in zip(offsets, batch.futures, batch.timestamps, strict=True):
                if not future.done():
                    future.set_result(make(RecordMetadata, (topic, partition, offset, stamp)))
            _resolve(batch.done)
            return
        error = outcome.error or error_from_code(code, outcome.message)
        if code == E.ERROR_CODE_UNKNOWN_PRODUCER_ID and outcome.error is None:
            self._unknown_producer(queue, batch, error)
            return
        if outcome.error is not None:
            retriable = outcome.retriable
        else:
            retriable = code in RETRIABLE or self._echoed_gap(queue, batch, code)
        if retriable:
            batch.attempts += 1
            if batch.attempts > self.retries or time.monotonic() >= batch.deadline:
                self.fail(queue, batch, error, in_flight=True)
            else:
                queue.retry(batch, time.monotonic() + self.backoff)
            return
        self.fail(queue, batch, error, in_flight=True)

    def _unknown_producer(
        self, queue: PartitionQueue, batch: ProducerBatch, error: LeaseholdError
    ) -> None:
        """The leader holds no state of us. For the batch it should take next, our earlier
        batches there are gone (retention, expiry): restart the partition's sequences under a
        new epoch, this batch included (the leader did not store it). For a later batch it is
        the echo of an earlier one not yet stored (requests served out of order): retry."""
        batch.attempts += 1
        if batch.attempts > self.retries or time.monotonic() >= batch.deadline:
            self.fail(queue, batch, error, in_flight=True)
            return
        backoff_until = time.monotonic() + self.backoff
        if batch.seq >= 0 and queue.is_first_unacked(batch):
            queue.restart(batch, backoff_until)
            if batch.epoch == self.producer_epoch:
                self.producer_epoch += 1
        else:
            queue.retry(batch, backoff_until)

    def _echoed_gap(self, queue: PartitionQueue, batch: ProducerBatch, code: int) -> bool:
        """OUT_OF_ORDER_SEQUENCE_NUMBER for a batch behind one that failed or is pending: the
        earlier batch's gap, not this one's; it is retried after that one."""
        return (
            code == E.ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER
            and batch.seq >= 0
            and not queue.is_first_unacked(batch)
        )

    def fail(
        self, queue: PartitionQueue, batch: ProducerBatch, error: LeaseholdError, in_flight: bool
    ) -> None:
        """No more tries for ``batch``; a numbered one costs its partition a new epoch."""
        queue.failed(batch, in_flight)
        if batch.seq >= 0 and batch.epoch == self.producer_epoch:
            self.producer_epoch += 1  # KIP-360: the partition's sequences restart at 0
        for future in batch.futures:
            if not future.done():
                future.set_exception(error)
        _resolve(batch.done)

    def fail_everything(self, error: BaseException) -> None:
        for queue in self._queues.values():
            for batch in queue.batches():
                for future in batch.futures:
                    if not future.done():
                        future.set_exception(error)
                _resolve(batch.done)
            queue.open = None
            queue.ready.clear()
            queue.in_flight.clear()

    def produce_request(
        self, items: list[tuple[PartitionQueue, ProducerBatch]]
    ) -> broker_pb2.ProduceRequest:
        """One request for ``items``, built in place (a message appended to a repeated field
        is copied, batch bytes included)."""
        request = broker_pb2.ProduceRequest(acks=self.acks, timeout_ms=self.request_timeout_ms)
        topics: dict[str, broker_pb2.TopicProduceData] = {}
        for queue, batch in items:
            topic = topics.get(queue.topic)
            if topic is None:
                topic = topics[queue.topic] = request.topics.add(topic=queue.topic)
            leader = self.metadata.leader(queue.topic, queue.partition)
            topic.partitions.add(
                partition=queue.partition,
                record_batch=batch.data,
                current_leader_epoch=leader.leader_epoch if leader else -1,
            )
        return request


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)
