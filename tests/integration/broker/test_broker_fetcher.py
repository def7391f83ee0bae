"""The replica fetcher's state machine against a scripted leader and a real follower log.

Each test drives ``do_work`` (truncate, then fetch) one round at a time and checks the
partition's fetch state and the follower's log: epoch truncation (KIP-101/279), the high-
watermark fallback, out-of-range resets, fenced epochs, transport failures, corrupt batches,
diverging epochs and answers that arrive after the partition moved on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.broker_agent.follower.fetch_state import (
    EpochEndOffset,
    FetcherSettings,
    PartitionFetchState,
    Phase,
)
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.leader_endpoint import (
    EpochAnswer,
    FetchedPartition,
    LeaderUnreachableError,
)
from services.broker_agent.log import LogManager, Record, build_batch, decode_records
from services.broker_agent.model import Code, Endpoint, LeaderAndIsrPartition, TopicPartition
from services.broker_agent.partition import Partition
from services.broker_agent.throttle import ReplicationQuota

TP = TopicPartition("t", 0)
LEADER = Endpoint(2, "127.0.0.1", 1)
BACKOFF = 100


class Clock:
    now = 10_000

    def __call__(self) -> int:
        return self.now


@dataclass
class ScriptedLeader:
    """Answers what the test scripts; records what the follower asked."""

    epochs: dict[int, EpochAnswer | Exception] = field(default_factory=dict)
    fetches: list[FetchedPartition | Exception] = field(default_factory=list)
    offsets: dict[int, tuple[Code, int]] = field(default_factory=dict)
    epoch_requests: list[dict] = field(default_factory=list)
    fetch_requests: list[list] = field(default_factory=list)
    on_fetch: object = None
    leader: Endpoint = LEADER
    ready: bool = True  # what ``wait_ready`` answers (the channel to the leader is up)

    async def wait_ready(self, _timeout_s: float) -> bool:
        return self.ready

    async def offsets_for_leader_epoch(self, requests):
        self.epoch_requests.append(dict(requests))
        (current, epoch) = requests[TP]
        answer = self.epochs[epoch]
        if isinstance(answer, Exception):
            raise answer
        return {TP: answer}

    async def fetch(self, specs, *, max_wait_ms, min_bytes, max_bytes):
        self.fetch_requests.append(list(specs))
        if self.on_fetch is not None:
            self.on_fetch()
        answer = self.fetches.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return {TP: answer}

    async def list_offset(self, tp, current_leader_epoch, timestamp):
        return self.offsets[timestamp]

    async def close(self):
        pass


def batch(base: int, epoch: int, *values: bytes) -> bytes:
    return build_batch(base, epoch, [Record(v) for v in values], 1_000)


@pytest.fixture
def follower(tmp_path):
    """A follower replica of TP under leader epoch 5, with the given batches in its log."""
    manager = LogManager(tmp_path)
    clock = Clock()

    def make(*batches: bytes) -> tuple[Partition, Clock]:
        partition = Partition(TP, 1, manager, clock, 10_000)
        partition.make_follower(LeaderAndIsrPartition("t", 0, 2, 5, (1, 2), (1, 2)))
        for data in batches:
            partition.log.append_as_follower(data)
        return partition, clock

    yield make
    manager.close()


def fetcher_for(partition: Partition, leader: ScriptedLeader, clock: Clock, state):
    source = type("Source", (), {"partition": lambda self, tp: partition if tp == TP else None})()
    fetcher = ReplicaFetcher(
        0, leader, source, FetcherSettings(backoff_ms=BACKOFF, flush=False), clock
    )
    fetcher.add_partitions({TP: state})
    return fetcher


def values(partition: Partition) -> list[bytes]:
    log = partition.log
    return [r.value for r in decode_records(log.read(log.log_start_offset, 1 << 20).records)]


async def test_truncates_to_the_leaders_epoch_end_then_fetches(follower):
    partition, clock = follower(
        batch(0, 1, b"a"), batch(1, 1, b"b"), batch(2, 2, b"x"), batch(3, 2, b"y")
    )
    leader = ScriptedLeader(epochs={2: EpochAnswer(Code.NONE, EpochEndOffset(2, 3))})
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.TRUNCATING))
    leader.fetches.append(
        FetchedPartition(Code.NONE, high_watermark=4, log_start_offset=0, records=batch(3, 5, b"z"))
    )
    await fetcher.do_work()
    assert leader.epoch_requests == [{TP: (5, 2)}]  # current epoch 5, our latest epoch 2
    assert values(partition) == [b"a", b"b", b"x", b"z"]
    assert fetcher.states[TP] == PartitionFetchState(4, 5, Phase.FETCHING, lag=0)
    assert leader.fetch_requests[0][0].fetch_offset == 3
    assert leader.fetch_requests[0][0].last_fetched_epoch == 2
    assert partition.log.high_watermark == 4


async def test_unknown_leader_epoch_steps_down_one_epoch_at_a_time(follower):
    # Our epochs: 1 from offset 0, 3 from offset 2. The leader has epochs 1, 2 and 4: it
    # never heard of our epoch 3, and we never heard of its epoch 2.
    partition, clock = follower(
        batch(0, 1, b"a"), batch(1, 1, b"b"), batch(2, 3, b"c"), batch(3, 3, b"d")
    )
    leader = ScriptedLeader(
        epochs={
            3: EpochAnswer(Code.NONE, EpochEndOffset(2, 3)),  # "my epoch 2 ends at 3"
            1: EpochAnswer(Code.NONE, EpochEndOffset(1, 1)),  # "my epoch 1 ends at 1"
        }
    )
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.TRUNCATING))
    await fetcher.maybe_truncate()
    # We do not know epoch 2: cut to the end of our largest smaller epoch (1 ends at 2) and
    # ask again about epoch 1.
    assert partition.log.log_end_offset == 2
    assert fetcher.states[TP].phase is Phase.TRUNCATING
    await fetcher.maybe_truncate()
    assert leader.epoch_requests[-1] == {TP: (5, 1)}
    assert fetcher.states[TP] == PartitionFetchState(1, 5, Phase.FETCHING)
    assert values(partition) == [b"a"]


async def test_a_log_without_epochs_truncates_to_the_high_watermark(follower):
    partition, clock = follower()
    leader = ScriptedLeader()
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.TRUNCATING))
    await fetcher.maybe_truncate()
    assert leader.epoch_requests == []
    assert fetcher.states[TP] == PartitionFetchState(0, 5, Phase.FETCHING)


async def test_fenced_epoch_parks_the_partition_and_other_errors_back_off(follower):
    partition, clock = follower(batch(0, 1, b"a"))
    leader = ScriptedLeader(
        epochs={1: EpochAnswer(Code.UNKNOWN_LEADER_EPOCH, EpochEndOffset(-1, -1))}
    )
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.TRUNCATING))
    await fetcher.maybe_truncate()
    assert fetcher.states[TP].delayed_until_ms == clock.now + BACKOFF
    await fetcher.maybe_truncate()  # still delayed: not asked again
    assert len(leader.epoch_requests) == 1
    clock.now += BACKOFF
    leader.epochs[1] = LeaderUnreachableError("down")
    await fetcher.maybe_truncate()
    assert fetcher.states[TP].delayed_until_ms == clock.now + BACKOFF
    clock.now += BACKOFF
    leader.epochs[1] = EpochAnswer(Code.FENCED_LEADER_EPOCH, EpochEndOffset(-1, -1))
    await fetcher.maybe_truncate()
    assert TP not in fetcher.states and TP in fetcher.failed
    assert values(partition) == [b"a"]  # nothing was cut


async def test_out_of_range_restarts_from_the_leaders_log_start(follower):
    partition, clock = follower(batch(0, 1, b"a", b"b"))
    leader = ScriptedLeader(offsets={-1: (Code.NONE, 120), -2: (Code.NONE, 50)})
    leader.fetches.append(FetchedPartition(Code.OFFSET_OUT_OF_RANGE))
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(2, 5, Phase.FETCHING))
    await fetcher.maybe_fetch()
    assert fetcher.states[TP].fetch_offset == -1  # reset on the next truncation round
    await fetcher.maybe_truncate()
    assert fetcher.states[TP] == PartitionFetchState(50, 5, Phase.FETCHING, lag=70)
    log = partition.log
    assert (log.log_start_offset, log.log_end_offset, values(partition)) == (50, 50, [])


async def test_out_of_range_against_a_shorter_leader_truncates_to_its_end(follower):
    partition, clock = follower(batch(0, 1, b"a"), batch(1, 1, b"b", b"c"))
    leader = ScriptedLeader(offsets={-1: (Code.NONE, 2), -2: (Code.NONE, 0)})
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(-1, 5, Phase.TRUNCATING))
    await fetcher.maybe_truncate()
    # Batches are atomic: cutting at 2 drops the whole batch holding offsets 1-2.
    assert fetcher.states[TP] == PartitionFetchState(1, 5, Phase.FETCHING, lag=1)
    assert values(partition) == [b"a"]


async def test_diverging_epoch_in_a_fetch_answer_truncates(follower):
    partition, clock = follower(batch(0, 1, b"a"), batch(1, 2, b"x", b"y"))
    leader = ScriptedLeader()
    leader.fetches.append(
        FetchedPartition(Code.NONE, high_watermark=1, diverging_epoch=EpochEndOffset(1, 1))
    )
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(3, 5, Phase.FETCHING))
    await fetcher.maybe_fetch()
    assert fetcher.states[TP] == PartitionFetchState(1, 5, Phase.FETCHING)
    assert values(partition) == [b"a"]


async def test_corrupt_batches_and_unreachable_leader_back_off(follower):
    partition, clock = follower()
    good = bytearray(batch(0, 5, b"a"))
    good[-1] ^= 0xFF  # breaks the CRC
    leader = ScriptedLeader()
    leader.fetches += [
        FetchedPartition(Code.NONE, high_watermark=1, records=bytes(good)),
        LeaderUnreachableError("connection refused"),
        FetchedPartition(Code.NOT_LEADER_OR_FOLLOWER),
    ]
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.FETCHING))
    for _ in range(3):
        await fetcher.maybe_fetch()
        assert fetcher.states[TP].delayed_until_ms == clock.now + BACKOFF
        assert partition.log.log_end_offset == 0
        clock.now += BACKOFF
    assert len(leader.fetch_requests) == 3


async def test_no_round_is_built_while_the_leader_cannot_be_reached(follower):
    partition, clock = follower()
    leader = ScriptedLeader()
    leader.ready = False
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.FETCHING))
    for _ in range(3):
        await fetcher.do_work()
    assert leader.fetch_requests == []  # Kafka's awaitReady: nothing built, nothing sent
    leader.ready = True
    leader.fetches.append(FetchedPartition(Code.NONE, high_watermark=1, records=batch(0, 5, b"a")))
    await fetcher.do_work()
    assert len(leader.fetch_requests) == 1 and values(partition) == [b"a"]


async def test_an_answer_for_a_partition_that_moved_on_is_dropped(follower):
    partition, clock = follower()
    leader = ScriptedLeader()
    leader.fetches.append(FetchedPartition(Code.NONE, high_watermark=1, records=batch(0, 5, b"a")))
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.FETCHING))
    # While the fetch is in flight, a LeaderAndIsr re-adds the partition under epoch 6.
    leader.on_fetch = lambda: fetcher.add_partitions(
        {TP: PartitionFetchState(0, 6, Phase.TRUNCATING)}
    )
    await fetcher.maybe_fetch()
    assert partition.log.log_end_offset == 0
    assert fetcher.states[TP] == PartitionFetchState(0, 6, Phase.TRUNCATING)


async def test_a_partition_that_became_leader_is_no_longer_fetched(follower):
    partition, clock = follower()
    leader = ScriptedLeader()
    fetcher = fetcher_for(partition, leader, clock, PartitionFetchState(0, 5, Phase.FETCHING))
    partition.make_leader(LeaderAndIsrPartition("t", 0, 1, 6, (1, 2), (1, 2)))
    await fetcher.maybe_fetch()
    assert leader.fetch_requests == []
    assert TP in fetcher.failed


async def test_follower_throttle_skips_out_of_sync_listed_partitions_over_quota(follower):
    partition, clock = follower()
    quota = ReplicationQuota(clock, bound_bytes_per_sec=100)
    quota.record(1_000)
    leader = ScriptedLeader()
    source = type("Source", (), {"partition": lambda self, tp: partition})()
    fetcher = ReplicaFetcher(
        0,
        leader,
        source,
        FetcherSettings(backoff_ms=10, flush=False),
        clock,
        quota,
        is_throttled=lambda tp: True,
    )
    fetcher.add_partitions({TP: PartitionFetchState(0, 5, Phase.FETCHING)})
    await fetcher.maybe_fetch()
    assert leader.fetch_requests == []  # catching up, listed, over quota: skipped
    fetcher.add_partitions({TP: PartitionFetchState(0, 5, Phase.FETCHING, lag=0)})
    leader.fetches.append(FetchedPartition(Code.NONE, high_watermark=0))
    await fetcher.maybe_fetch()
    assert len(leader.fetch_requests) == 1  # in sync: never throttled
