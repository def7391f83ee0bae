"""Producer: batches records per partition and sends them to partition leaders, with retries.

``send`` picks the partition (explicit, or Kafka's key hash, or round robin), queues the record
and returns a future for its offset. A sender task drains the queues after ``linger_ms`` (or at
once when a batch is full or on ``flush``), groups batches by leader and sends one ``Produce``
per leader broker. A partition has at most one batch in flight, so records of one partition are
written in the order they were sent. Leadership errors (NOT_LEADER_OR_FOLLOWER,
LEADER_NOT_AVAILABLE, fenced or unknown leader epoch, ...) refresh metadata and retry the batch
after a backoff, until ``retries`` attempts failed or ``delivery_timeout_ms`` passed since the
record was sent (Kafka's ``delivery.timeout.ms``: long enough to ride out a broker's lease expiry
and a new leader's election); other errors fail the batch's futures. As in Kafka without
idempotence, a retried batch may be written twice if only its acknowledgement was lost.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc

from leasehold.broker.v1 import broker_pb2
from leasehold.client.errors import error_from_code, error_from_rpc
from leasehold.client.metadata import ClusterMetadata
from leasehold.client.partitioner import DefaultPartitioner, Partitioner
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.errors import InvalidRequestError, LeaseholdError, NotFoundError

log = logging.getLogger(__name__)

RETRIABLE = frozenset(
    {
        common_pb2.ERROR_CODE_NOT_LEADER_OR_FOLLOWER,
        common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE,
        common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
        common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH,
        common_pb2.ERROR_CODE_UNKNOWN_LEADER_EPOCH,
        common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
        common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS,
        common_pb2.ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE,
        common_pb2.ERROR_CODE_KAFKA_STORAGE_ERROR,
    }
)
ACKS = {"0": 0, "1": 1, "-1": -1, "all": -1}


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int  # -1 with acks=0
    timestamp_ms: int


@dataclass
class _Pending:
    record: broker_pb2.Record
    future: asyncio.Future
    deadline: float  # time.monotonic() by which it must be acknowledged
    attempts: int = 0  # failed sends so far, kept across re-queueing


@dataclass
class _Batch:
    topic: str
    partition: int
    items: list[_Pending] = field(default_factory=list)

    @property
    def records(self) -> list[broker_pb2.Record]:
        return [i.record for i in self.items]

    @property
    def futures(self) -> list[asyncio.Future]:
        return [i.future for i in self.items]


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
        linger_ms: int = 5,
        batch_size: int = 1000,
        retries: int = 2**31 - 1,
        delivery_timeout_ms: int = 120_000,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        partitioner: Partitioner | None = None,
    ) -> None:
        self._own_metadata = metadata is None
        self.metadata = metadata or ClusterMetadata(admin, bootstrap=bootstrap, tls=tls)
        self.acks = ACKS[str(acks)] if str(acks) in ACKS else None
        if self.acks is None:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or all: {acks}"
            )
        self.linger = linger_ms / 1000.0
        self.batch_size = batch_size
        self.retries = retries
        self.delivery_timeout = delivery_timeout_ms / 1000.0
        self.backoff = retry_backoff_ms / 1000.0
        self.request_timeout_ms = request_timeout_ms
        self.partitioner = partitioner or DefaultPartitioner()
        self._queues: dict[tuple[str, int], collections.deque] = {}
        self._wake = asyncio.Event()
        self._urgent = False
        self._outstanding: set[asyncio.Future] = set()
        self._sender: asyncio.Task | None = None
        self._closed = False

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
        count = await self.metadata.partitions(topic)
        if partition is None:
            partition = self.partitioner(topic, key, count)
        elif not 0 <= partition < count:
            raise NotFoundError(
                common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                f"Topic '{topic}' has {count} partitions; partition {partition} does not exist.",
            )
        record = broker_pb2.Record(
            timestamp_ms=timestamp_ms,
            key=key,
            value=value,
            headers=[broker_pb2.RecordHeader(key=k, value=v) for k, v in headers],
        )
        future = asyncio.get_running_loop().create_future()
        queue = self._queues.setdefault((topic, partition), collections.deque())
        queue.append(_Pending(record, future, time.monotonic() + self.delivery_timeout))
        self._outstanding.add(future)
        future.add_done_callback(self._outstanding.discard)
        if len(queue) >= self.batch_size:
            self._urgent = True
        self._wake.set()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._run())
        return future

    async def send_and_wait(self, topic: str, value: bytes | None, **kwargs) -> RecordMetadata:
        future = await self.send(topic, value, **kwargs)
        await self.flush()
        return await future

    async def flush(self) -> None:
        """Send everything queued now and wait until each record succeeded or failed."""
        if not self._outstanding:
            return
        self._urgent = True
        self._wake.set()
        await asyncio.gather(*list(self._outstanding), return_exceptions=True)

    async def close(self) -> None:
        await self.flush()
        self._closed = True
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
        if self._own_metadata:
            await self.metadata.close()

    # --- the sender task ------------------------------------------------------------------------

    def _drain(self) -> list[_Batch]:
        batches = []
        for (topic, partition), queue in self._queues.items():
            if not queue:
                continue
            items = [queue.popleft() for _ in range(min(self.batch_size, len(queue)))]
            batches.append(_Batch(topic, partition, items))
        return batches

    def _requeue(self, batch: _Batch, error: LeaseholdError) -> None:
        """Put the batch back at the head of its queue, or fail records out of retries."""
        retry = []
        now = time.monotonic()
        for item in batch.items:
            item.attempts += 1
            if item.attempts > self.retries or now >= item.deadline:
                if not item.future.done():
                    item.future.set_exception(error)
            else:
                retry.append(item)
        queue = self._queues.setdefault((batch.topic, batch.partition), collections.deque())
        queue.extendleft(reversed(retry))

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            if not self._urgent and self.linger > 0:
                await asyncio.sleep(self.linger)
            self._wake.clear()
            self._urgent = False
            try:
                await self._round()
            except Exception as e:  # a bug must fail the records, not hang their futures
                log.exception("produce round failed")
                for queue in self._queues.values():
                    queue.clear()
                for f in list(self._outstanding):
                    if not f.done():
                        f.set_exception(e)

    async def _round(self) -> None:
        batches = self._drain()
        if not batches:
            return
        if await self._send_round(batches):
            try:
                await self.metadata.refresh({b.topic for b in batches})
            except LeaseholdError as e:
                log.info("metadata refresh failed: %s", e)
            await asyncio.sleep(self.backoff)
        if any(self._queues.values()):
            self._urgent = True
            self._wake.set()

    async def _send_round(self, batches: list[_Batch]) -> bool:
        """Send one round of batches; return whether any must be retried."""
        by_leader: dict[int, list[_Batch]] = {}
        retry = False
        for b in batches:
            leader = self.metadata.leader(b.topic, b.partition)
            if leader is None:
                self._requeue(b, error_from_code(common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE, ""))
                retry = True
            else:
                by_leader.setdefault(leader.leader, []).append(b)
        results = await asyncio.gather(*(self._send_to(bid, bs) for bid, bs in by_leader.items()))
        return retry or any(results)

    async def _send_to(self, broker_id: int, batches: list[_Batch]) -> bool:
        topics: dict[str, list[broker_pb2.PartitionProduceData]] = {}
        for b in batches:
            leader = self.metadata.leader(b.topic, b.partition)
            topics.setdefault(b.topic, []).append(
                broker_pb2.PartitionProduceData(
                    partition=b.partition,
                    records=b.records,
                    current_leader_epoch=leader.leader_epoch if leader else -1,
                )
            )
        request = broker_pb2.ProduceRequest(
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topics=[
                broker_pb2.TopicProduceData(topic=t, partitions=ps) for t, ps in topics.items()
            ],
        )
        try:
            stub = self.metadata.stub(broker_id)
            response = await stub.Produce(request, timeout=self.request_timeout_ms / 1000 + 5)
        except grpc.aio.AioRpcError as e:
            error = error_from_rpc(e, f"broker {broker_id}")
            for b in batches:
                self._requeue(b, error)
            return True
        except LeaseholdError as e:
            for b in batches:
                self._requeue(b, e)
            return True
        return self._complete(batches, response)

    def _complete(self, batches: list[_Batch], response: broker_pb2.ProduceResponse) -> bool:
        answers = {(t.topic, p.partition): p for t in response.topics for p in t.partitions}
        retry = False
        for b in batches:
            answer = answers.get((b.topic, b.partition))
            if answer is None:
                self._requeue(b, error_from_code(common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR, ""))
                retry = True
                continue
            if answer.error_code == common_pb2.ERROR_CODE_NONE:
                for i, (r, f) in enumerate(zip(b.records, b.futures, strict=True)):
                    offset = answer.base_offset + i if answer.base_offset >= 0 else -1
                    stamp = (
                        answer.log_append_time_ms
                        if answer.log_append_time_ms > 0
                        else (r.timestamp_ms)
                    )
                    if not f.done():
                        f.set_result(RecordMetadata(b.topic, b.partition, offset, stamp))
                continue
            error = error_from_code(answer.error_code, answer.error_message)
            if answer.error_code in RETRIABLE:
                if answer.HasField("current_leader"):
                    self.metadata.note_leader(
                        b.topic, b.partition, answer.current_leader, response.node_endpoints
                    )
                self._requeue(b, error)
                retry = True
            else:
                for f in b.futures:
                    if not f.done():
                        f.set_exception(error)
        return retry
