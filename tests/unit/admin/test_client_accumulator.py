"""The SDK producer's per-partition queue: batching by size and linger, sequence numbers kept
across retries, one-at-a-time recovery after a failure, and resequencing after a lost batch."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.client.accumulator import PartitionQueue, ProducerBatch
from leasehold.records import parse_header

PID, EPOCH = 7, 0


def new_batch_factory(now: float = 0.0):
    loop = asyncio.new_event_loop()

    def make() -> ProducerBatch:
        return ProducerBatch(now, now + 60, loop.create_future())

    return make, loop


def fill(queue: PartitionQueue, count: int, size: int = 100, batch_size: int = 1_000) -> None:
    make, loop = new_batch_factory()
    for _ in range(count):
        queue.append(b"v" * size, None, (), 1_000, loop.create_future(), batch_size, make)


def send(queue: PartitionQueue, epoch: int = EPOCH, max_in_flight: int = 5, send_open=True):
    return queue.next_to_send(PID, epoch, max_in_flight, send_open)


def header_of(batch: ProducerBatch):
    return parse_header(batch.data)


def test_batches_are_sealed_by_size_and_the_open_one_only_when_due() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 20)  # 100-byte values, about 112 bytes each: 8 fit under 1,000 bytes
    assert [b.count for b in queue.ready] == [8, 8] and queue.open.count == 4
    assert queue.lingering(now=0.001, linger=0.005, force=False) == pytest.approx(0.005)
    assert queue.lingering(now=0.010, linger=0.005, force=False) is None
    assert queue.lingering(now=0.001, linger=0.005, force=True) is None
    sent = [send(queue, send_open=False) for _ in range(3)]
    assert [b.count if b else None for b in sent] == [8, 8, None]  # open batch not due yet
    assert send(queue).count == 4


def test_sequences_follow_records_and_a_retry_keeps_its_numbers_and_bytes() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 20)
    first, second, third = send(queue), send(queue), send(queue)
    starts = [
        (h.producer_id, h.producer_epoch, h.base_sequence)
        for h in map(header_of, (first, second, third))
    ]
    assert starts == [(PID, EPOCH, 0), (PID, EPOCH, 8), (PID, EPOCH, 16)]
    data = first.data
    queue.retry(first, backoff_until=0)  # its answer was lost
    queue.retry(second, backoff_until=0)  # the echo of the first one's gap
    assert [b.seq for b in queue.ready] == [0, 8]
    assert send(queue) is None  # recovering: the third is still in flight
    queue.succeeded(third)
    again = send(queue)
    assert again is first and again.data == data
    assert send(queue) is None  # one at a time until one succeeds
    queue.succeeded(first)
    assert send(queue) is second and queue.last_acked == 7


def test_an_out_of_order_answer_is_a_real_gap_only_for_the_next_expected_batch() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 16)
    first, second = send(queue), send(queue)
    assert queue.is_first_unacked(first) and not queue.is_first_unacked(second)
    queue.succeeded(first)
    assert queue.is_first_unacked(second)


def test_a_lost_batch_resequences_the_rest_under_the_new_epoch() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 24)
    first, second = send(queue), send(queue)
    queue.failed(first, in_flight=True)  # e.g. expired with its outcome unknown
    queue.retry(second, backoff_until=0)
    restarted = send(queue, epoch=1)  # nothing in flight: every waiting batch starts afresh
    assert restarted is second
    assert (header_of(second).producer_epoch, header_of(second).base_sequence) == (1, 0)
    assert send(queue, epoch=1) is None  # the restart is a probe: alone until it succeeds
    queue.succeeded(second)
    assert header_of(send(queue, epoch=1)).base_sequence == 8


def test_a_leader_without_our_state_makes_the_partition_restart_its_sequences() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 24)
    first = send(queue)
    queue.succeeded(first)
    second, third = send(queue), send(queue)
    queue.restart(second, backoff_until=0)  # UNKNOWN_PRODUCER_ID: its earlier batches are gone
    queue.retry(third, backoff_until=0)  # the echo
    restarted = send(queue, epoch=1)
    assert restarted is second
    assert (header_of(second).producer_epoch, header_of(second).base_sequence) == (1, 0)
    queue.succeeded(second)
    assert header_of(send(queue, epoch=1)).base_sequence == 8  # the third, renumbered


def test_another_partitions_epoch_bump_waits_for_this_ones_batches_in_flight() -> None:
    queue = PartitionQueue("t", 0)
    fill(queue, 16)
    first = send(queue)
    assert send(queue, epoch=1) is None  # a bump elsewhere: in-flight epoch-0 batch first
    queue.succeeded(first)
    moved = send(queue, epoch=1)
    assert (header_of(moved).producer_epoch, header_of(moved).base_sequence) == (1, 0)
