"""The producer's per-partition queues (Kafka's RecordAccumulator, with its sequence numbers).

Records are encoded into the partition's open batch as they are sent. A batch is sealed when the
next record would take it past ``batch_size`` bytes, and sealed batches wait in ``ready``; they
are sent oldest first, at most ``max_in_flight`` per partition at a time. The open batch may be
sent once it has lingered ``linger_ms`` (or on flush), but, as in Kafka, only when the
partition can send: while its batches in flight are at the limit it keeps filling, so under load
batches grow towards ``batch_size`` instead of queueing up small.

With idempotence, a batch gets its producer epoch and base sequence when it is first sent, and
keeps them (and its bytes) for every retry, so the leader can recognise a retry of a batch it
already holds. After a retriable failure the partition is **recovering**: the failed batches go
back to the head of ``ready`` in sequence order, and batches are sent one at a time until one
succeeds, so a gap caused by the failure is never sent twice. A batch that fails for good leaves
a hole in the sequence: the partition then **resequences** — once nothing of it is in flight,
its waiting batches start again at sequence 0 under a new producer epoch (Kafka's KIP-360 bump).
A leader without state for the producer (UNKNOWN_PRODUCER_ID for the next batch it should take:
the producer's batches there are gone) also makes the partition resequence, the refused batch
included.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence

from leasehold.records import BatchBuilder, increment_sequence

NO_PRODUCER = -1
RECORD_OVERHEAD = 12  # bytes a record adds besides its key and value (a bound for batch_size)


class ProducerBatch:
    """Records of one partition sent (and retried) together; ``done`` resolves when each
    record's future has its answer."""

    __slots__ = (
        "attempts",
        "builder",
        "created",
        "data",
        "deadline",
        "done",
        "epoch",
        "futures",
        "probe",
        "seq",
        "timestamps",
    )

    def __init__(self, created: float, deadline: float, done: asyncio.Future[None]) -> None:
        self.builder = BatchBuilder()
        self.futures: list[asyncio.Future] = []
        self.timestamps: list[int] = []
        self.created = created
        self.deadline = deadline
        self.done = done
        self.attempts = 0
        self.epoch = NO_PRODUCER
        self.seq = NO_PRODUCER  # base sequence, once first sent by an idempotent producer
        self.data = b""
        self.probe = False  # sent alone while its partition recovers

    @property
    def count(self) -> int:
        return self.builder.count

    @property
    def last_seq(self) -> int:
        return increment_sequence(self.seq, self.count - 1)

    def stamp(self, producer_id: int, epoch: int, seq: int) -> None:
        self.epoch, self.seq = epoch, seq
        self.data = self.builder.build(0, -1, producer_id, epoch, seq)

    def unstamp(self) -> None:
        self.epoch = self.seq = NO_PRODUCER
        self.data = b""


class PartitionQueue:
    """One partition's open batch, sealed batches, in-flight batches and sequence state."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.open: ProducerBatch | None = None
        self.ready: deque[ProducerBatch] = deque()
        self.in_flight: list[ProducerBatch] = []
        self.recovering = False
        self.resequence = False
        self.backoff_until = 0.0
        self.producer_id = NO_PRODUCER  # the producer id and epoch this partition's
        self.epoch = NO_PRODUCER  # sequences count in
        self.next_seq = 0
        self.last_acked = -1  # last sequence acknowledged in ``epoch``

    # ------------------------------------------------------------------ records in

    def append(
        self,
        value: bytes | None,
        key: bytes | None,
        headers: Sequence[tuple[str, bytes]],
        timestamp_ms: int,
        future: asyncio.Future,
        batch_size: int,
        new_batch: Callable[[], ProducerBatch],
    ) -> bool:
        """Add a record, opening a batch with ``new_batch()`` if needed. True when a batch
        was sealed (the sender has something to send)."""
        sealed = False
        batch = self.open
        if batch is not None:
            builder = batch.builder
            adds = RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
            if builder.count and builder.size + adds > batch_size:
                self.ready.append(batch)
                batch = self.open = None
                sealed = True
        if batch is None:
            batch = self.open = new_batch()
        batch.builder.append(value, timestamp_ms, key, headers)
        batch.futures.append(future)
        batch.timestamps.append(timestamp_ms)
        return sealed

    def lingering(self, now: float, linger: float, force: bool) -> float | None:
        """When the open batch may be sent, if it may not yet (None: no open batch, or now)."""
        batch = self.open
        if batch is None or force:
            return None
        due = batch.created + linger
        return due if now < due else None

    # ------------------------------------------------------------------ sending

    def next_to_send(
        self, producer_id: int, producer_epoch: int, max_in_flight: int, send_open: bool
    ) -> ProducerBatch | None:
        """The batch to send now (moved to ``in_flight``), or None if it must wait;
        ``send_open``: the open batch has lingered long enough (or a flush wants it)."""
        if self.in_flight and (
            self.recovering or self.resequence or len(self.in_flight) >= max_in_flight
        ):
            return None
        if not self.ready:
            if self.open is None or not send_open:
                return None
            self.ready.append(self.open)
            self.open = None
        if self.resequence:  # nothing in flight: every waiting batch starts afresh
            for batch in self.ready:
                batch.unstamp()
            self.resequence = False
            self.producer_id = self.epoch = NO_PRODUCER
        head = self.ready[0]
        if producer_id >= 0 and head.seq < 0:
            if (self.producer_id, self.epoch) != (producer_id, producer_epoch):
                if self.in_flight:
                    return None  # switch epochs only once the old epoch's batches are done
                self.producer_id, self.epoch = producer_id, producer_epoch
                self.next_seq, self.last_acked = 0, -1
            head.stamp(producer_id, self.epoch, self.next_seq)
            self.next_seq = increment_sequence(self.next_seq, head.count)
        elif producer_id < 0 and not head.data:
            head.data = head.builder.build()
        self.ready.popleft()
        self.in_flight.append(head)
        head.probe = self.recovering
        return head

    # ------------------------------------------------------------------ answers

    def succeeded(self, batch: ProducerBatch) -> None:
        """``batch`` is stored; recovery ends with the first success of a batch sent during
        it (one sent before the failure proves nothing about the gap)."""
        self.in_flight.remove(batch)
        if batch.probe:
            self.recovering = False
        if batch.seq >= 0 and batch.epoch == self.epoch:
            self.last_acked = batch.last_seq

    def is_first_unacked(self, batch: ProducerBatch) -> bool:
        """Whether ``batch`` is the next one the leader should take: an OUT_OF_ORDER answer
        to it is a real gap, not the echo of an earlier batch's failure."""
        return batch.epoch == self.epoch and batch.seq == increment_sequence(self.last_acked, 1)

    def retry(self, batch: ProducerBatch, backoff_until: float) -> None:
        """Put ``batch`` back among the waiting ones, in sequence order, and recover."""
        self.in_flight.remove(batch)
        self.recovering = True
        self.backoff_until = max(self.backoff_until, backoff_until)
        if batch.seq < 0:
            self.ready.appendleft(batch)
            return
        at = 0
        while at < len(self.ready) and 0 <= self.ready[at].seq < batch.seq:
            at += 1
        self.ready.insert(at, batch)

    def restart(self, batch: ProducerBatch, backoff_until: float) -> None:
        """The leader holds no state of this producer (UNKNOWN_PRODUCER_ID for the next batch
        it should take): retry ``batch``, but with every waiting batch numbered afresh under a
        new producer epoch once nothing is in flight."""
        self.retry(batch, backoff_until)
        self.resequence = True

    def failed(self, batch: ProducerBatch, in_flight: bool) -> None:
        """``batch`` gets no more tries; a sequenced one leaves a hole: resequence."""
        if in_flight:
            self.in_flight.remove(batch)
        else:
            self.ready.remove(batch)
        if batch.seq >= 0:
            self.resequence = True
            self.recovering = False

    def batches(self) -> list[ProducerBatch]:
        found = [*self.in_flight, *self.ready]
        if self.open is not None:
            found.append(self.open)
        return found
