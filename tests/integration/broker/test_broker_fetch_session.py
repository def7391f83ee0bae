"""Incremental fetch sessions (KIP-227) end to end on real logs: the leader's FetchHandler behind
the real BrokerServicer, and a real follower (ReplicaFetcher + LeaderEndpoint) over gRPC.

The leader must learn exactly what full fetches would tell it (follower offsets, the high
watermark, caught-up times), answer only partitions with news, wake a waiting fetch as soon as
records arrive, and never touch the files (nor the follower state) of an idle partition.
"""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.etcd import Keyspace
from services.broker_agent.follower.fetch_state import FetcherSettings, PartitionFetchState, Phase
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.leader_endpoint import LeaderEndpoint
from services.broker_agent.leader.fetch import FetchHandler
from services.broker_agent.leader.fetch_session import FetchSessionCache, FetchSessionConfig
from services.broker_agent.log import LogManager, Record, decode_records
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    TopicPartition,
)
from services.broker_agent.produce import ProduceHandler
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.servicer import BrokerServicer
from services.broker_agent.topic_configs import ConfigStore

T = "s"
TPS = [TopicPartition(T, p) for p in range(3)]
A, B, C = TPS
FOLLOWER = 2
RETRY_MS = 100


class Clock:
    def __init__(self, now: int = 1_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


async def replica_manager(broker_id: int, data_dir, clock, leader: int) -> ReplicaManager:
    configs = ConfigStore(Keyspace("test"), broker_id, 1, 1 << 20)
    replicas = ReplicaManager(
        broker_id, LogManager(data_dir), MetadataCache(), configs, clock, 30_000
    )
    replicas.broker_epoch = 7
    states = tuple(LeaderAndIsrPartition(T, tp.partition, leader, 1, (1, 2), (1, 2)) for tp in TPS)
    result = await replicas.become_leader_or_follower(LeaderAndIsr(100, 1, 7, states))
    assert result.error == Code.NONE and all(c == Code.NONE for _, c in result.partition_errors)
    return replicas


@pytest.fixture
async def leader(tmp_path):
    clock = Clock()
    replicas = await replica_manager(1, tmp_path / "leader", clock, leader=1)
    sessions = FetchSessionCache(FetchSessionConfig(retry_ms=RETRY_MS))
    fetch = FetchHandler(replicas, None, sessions, clock)
    servicer = BrokerServicer(replicas, ProduceHandler(replicas), fetch, MetadataCache(), "c")
    yield servicer, replicas, clock
    replicas.log_manager.close()


def request(
    parts=(), *, session_id=0, epoch=None, forgotten=(), wait=0, replica_id=FOLLOWER, leader_epoch=1
):
    """A Fetch naming ``parts`` as (tp, fetch offset); ``epoch`` None means sessionless."""
    fields = dict(
        replica_id=replica_id,
        replica_broker_epoch=7 if replica_id >= 0 else -1,
        max_wait_ms=wait,
        min_bytes=1,
        max_bytes=1 << 20,
        record_format=broker_pb2.RECORD_FORMAT_BATCHES,
        session_id=session_id,
        topics=[
            broker_pb2.FetchTopic(
                topic=T,
                partitions=[
                    broker_pb2.FetchPartition(
                        partition=tp.partition,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        partition_max_bytes=1 << 20,
                    )
                    for tp, offset in parts
                ],
            )
        ]
        if parts
        else [],
        forgotten_topics=[
            broker_pb2.ForgottenTopic(topic=T, partitions=[tp.partition for tp in forgotten])
        ]
        if forgotten
        else [],
    )
    if epoch is not None:
        fields["session_epoch"] = epoch
    return broker_pb2.FetchRequest(**fields)


def answered(response) -> dict[TopicPartition, tuple[int, int]]:
    """(high watermark, number of records) per answered partition."""
    return {
        TopicPartition(t.topic, p.partition): (p.high_watermark, len(decode_records(p.records)))
        for t in response.topics
        for p in t.partitions
    }


def append(replicas: ReplicaManager, tp: TopicPartition, *values: bytes) -> None:
    replicas.partition(tp).append_as_leader(
        [Record(v) for v in values], current_leader_epoch=-1, required_acks=1, min_insync_replicas=1
    )


def follower_leo(replicas: ReplicaManager, tp: TopicPartition) -> int:
    return replicas.partition(tp).followers[FOLLOWER].log_end_offset


async def test_full_fetch_opens_a_session_then_only_news_is_answered(leader):
    servicer, replicas, _clock = leader
    full = await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None)
    sid = full.session_id
    assert (full.error_code, sid != 0, answered(full)) == (
        Code.NONE,
        True,
        {A: (0, 0), B: (0, 0), C: (0, 0)},
    )
    idle = await servicer.Fetch(request(session_id=sid, epoch=1), None)
    assert (idle.error_code, idle.session_id, answered(idle)) == (Code.NONE, sid, {})

    append(replicas, B, b"x", b"y")
    await asyncio.sleep(0)  # the change callback runs on the loop
    news = await servicer.Fetch(request(session_id=sid, epoch=2), None)
    assert answered(news) == {B: (0, 2)}  # records; the watermark waits for the follower
    assert [follower_leo(replicas, tp) for tp in TPS] == [0, 0, 0]

    # The follower appended them: it names B at its new offset, the watermark moves.
    caught_up = await servicer.Fetch(request([(B, 2)], session_id=sid, epoch=3), None)
    assert answered(caught_up) == {B: (2, 0)}
    assert [follower_leo(replicas, tp) for tp in TPS] == [0, 2, 0]
    assert replicas.partition(B).log.high_watermark == 2
    quiet = await servicer.Fetch(request(session_id=sid, epoch=4), None)
    assert answered(quiet) == {}


async def test_records_not_taken_up_are_sent_again(leader):
    """A follower that dropped an answer does not name the partition again; the leader still
    holds the old offset, so the partition stays unsettled and is answered again."""
    servicer, replicas, _clock = leader
    sid = (await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None)).session_id
    append(replicas, A, b"x")
    await asyncio.sleep(0)
    first = await servicer.Fetch(request(session_id=sid, epoch=1), None)
    again = await servicer.Fetch(request(session_id=sid, epoch=2), None)
    assert answered(first) == answered(again) == {A: (0, 1)}


@pytest.mark.parametrize(
    ("session_id_delta", "epoch", "error"),
    [
        (1, 1, Code.FETCH_SESSION_ID_NOT_FOUND),
        (0, 2, Code.INVALID_FETCH_SESSION_EPOCH),
        (0, -5, Code.INVALID_FETCH_SESSION_EPOCH),
    ],
)
async def test_session_errors_answer_nothing(leader, session_id_delta, epoch, error):
    servicer, _replicas, _clock = leader
    sid = (await servicer.Fetch(request([(A, 0)], epoch=0), None)).session_id
    response = await servicer.Fetch(
        request([(A, 0)], session_id=sid + session_id_delta, epoch=epoch), None
    )
    assert (response.error_code, response.session_id, answered(response)) == (error, 0, {})


async def test_sessionless_fetches_and_closing_a_session(leader):
    servicer, replicas, _clock = leader
    append(replicas, A, b"a")
    consumer = await servicer.Fetch(request([(tp, 0) for tp in TPS], replica_id=-1), None)
    assert (consumer.session_id, answered(consumer)) == (0, {A: (0, 0), B: (0, 0), C: (0, 0)})
    sid = (await servicer.Fetch(request([(A, 0)], epoch=0), None)).session_id
    closing = await servicer.Fetch(request([(A, 1), (B, 0)], session_id=sid, epoch=-1), None)
    assert (closing.session_id, answered(closing)) == (0, {A: (1, 0), B: (0, 0)})
    gone = await servicer.Fetch(request(session_id=sid, epoch=1), None)
    assert gone.error_code == Code.FETCH_SESSION_ID_NOT_FOUND


async def test_forgotten_partitions_are_no_longer_answered(leader):
    servicer, replicas, _clock = leader
    sid = (await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None)).session_id
    await servicer.Fetch(request(session_id=sid, epoch=1, forgotten=[A, C]), None)
    append(replicas, A, b"a")
    append(replicas, B, b"b")
    await asyncio.sleep(0)
    news = await servicer.Fetch(request(session_id=sid, epoch=2), None)
    assert answered(news) == {B: (0, 1)}


async def test_idle_partitions_read_no_files(leader, monkeypatch):
    servicer, replicas, _clock = leader
    for tp in TPS:
        append(replicas, tp, b"v")
    fetched_all = [(tp, 1) for tp in TPS]
    await servicer.Fetch(request(fetched_all), None)  # followers at the end: HW 1

    def no_reads(*_args, **_kwargs):
        raise AssertionError("an idle partition read its log")

    for tp in TPS:
        monkeypatch.setattr(replicas.partition(tp).log, "read", no_reads)
    sessionless = await servicer.Fetch(request(fetched_all), None)
    consumer = await servicer.Fetch(request(fetched_all, replica_id=-1), None)
    opened = await servicer.Fetch(request(fetched_all, epoch=0), None)
    incremental = await servicer.Fetch(request(session_id=opened.session_id, epoch=1), None)
    expected = {tp: (1, 0) for tp in TPS}
    assert answered(sessionless) == answered(consumer) == answered(opened) == expected
    assert answered(incremental) == {}


async def test_a_waiting_fetch_wakes_when_records_arrive(leader):
    servicer, replicas, _clock = leader
    sid = (await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None)).session_id
    started = time.monotonic()
    idle = await servicer.Fetch(request(session_id=sid, epoch=1, wait=200), None)
    assert answered(idle) == {} and time.monotonic() - started >= 0.19

    async def produce_soon() -> None:
        await asyncio.sleep(0.05)
        append(replicas, C, b"late")

    producer = asyncio.create_task(produce_soon())
    started = time.monotonic()
    woken = await servicer.Fetch(request(session_id=sid, epoch=2, wait=10_000), None)
    await producer
    assert answered(woken) == {C: (0, 1)}
    assert time.monotonic() - started < 2.0


async def test_idle_partitions_count_as_fetched_at_each_session_request(leader):
    """Omitted partitions are fetched by every request of the session (as in Kafka) but cost
    nothing until their leader's end moves: then the follower is credited with being caught
    up at its session's last request, so the shrink clock starts there, not at its last read.
    """
    servicer, replicas, clock = leader
    sid = (await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None)).session_id

    def caught_up() -> list[int]:
        return [replicas.partition(tp).followers[FOLLOWER].last_caught_up_ms for tp in TPS]

    assert caught_up() == [1_000] * 3
    clock.now = 1_099
    await servicer.Fetch(request([(A, 0)], session_id=sid, epoch=1), None)
    clock.now = 5_000
    await servicer.Fetch(request(session_id=sid, epoch=2), None)
    assert caught_up() == [1_099, 1_000, 1_000]  # only the named one was read
    clock.now = 6_000
    append(replicas, B, b"x")  # the follower (at 0) was caught up at the request at 5,000
    assert caught_up() == [1_099, 5_000, 1_000]
    lag = 30_000  # the fixture's replica.lag.time.max.ms
    clock.now = 5_000 + lag
    assert replicas.partition(B).propose_shrink() is None
    clock.now = 5_000 + lag + 1
    assert replicas.partition(B).propose_shrink().new_isr == (1,)


async def test_a_follower_outside_the_isr_is_read_again_to_retry_joining(leader):
    """A settled partition whose follower is not in the ISR is re-read every ``retry_ms``
    (an expansion that failed is proposed again); ISR members' idle partitions are not."""
    servicer, replicas, clock = leader
    outside = LeaderAndIsrPartition(T, C.partition, 1, 2, (1,), (1, 2))
    result = await replicas.become_leader_or_follower(LeaderAndIsr(100, 1, 7, (outside,)))
    assert result.error == Code.NONE
    opening = request([(tp, 0) for tp in TPS], epoch=0, leader_epoch=-1)
    sid = (await servicer.Fetch(opening, None)).session_id

    def last_fetch() -> list[int]:
        return [replicas.partition(tp).followers[FOLLOWER].last_fetch_ms for tp in TPS]

    assert last_fetch() == [1_000] * 3
    clock.now = 1_000 + RETRY_MS - 1
    await servicer.Fetch(request(session_id=sid, epoch=1), None)
    clock.now = 1_000 + RETRY_MS
    await servicer.Fetch(request(session_id=sid, epoch=2), None)
    assert last_fetch() == [1_000, 1_000, 1_100]
    clock.now = 1_000 + 2 * RETRY_MS
    await servicer.Fetch(request(session_id=sid, epoch=3), None)
    assert last_fetch() == [1_000, 1_000, 1_200]


async def served_with_follower(
    servicer: BrokerServicer, tmp_path
) -> tuple[grpc.aio.Server, ReplicaManager, LeaderEndpoint]:
    """``servicer`` (broker 1, the leader) served on a loopback port, a follower replica manager
    and the follower's endpoint to it."""
    server = grpc.aio.server()
    broker_pb2_grpc.add_BrokerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    follower = await replica_manager(FOLLOWER, tmp_path / "follower", Clock(), leader=1)
    return server, follower, LeaderEndpoint(Endpoint(1, "127.0.0.1", port), FOLLOWER, lambda: 7)


async def test_a_follower_replicates_through_a_session_and_recovers_when_it_is_lost(
    leader, tmp_path
):
    servicer, leader_replicas, _clock = leader
    server, follower, endpoint = await served_with_follower(servicer, tmp_path)
    settings = FetcherSettings(max_wait_ms=100, backoff_ms=100, flush=False)
    fetcher = ReplicaFetcher(0, endpoint, follower, settings, Clock())
    fetcher.add_partitions({tp: PartitionFetchState(0, 1, Phase.FETCHING) for tp in TPS})

    async def replicated(tp: TopicPartition, offset: int) -> None:
        for _ in range(50):
            await fetcher.maybe_fetch()
            if follower.partition(tp).log.log_end_offset >= offset:
                return
        raise AssertionError(f"{tp} never reached {offset}")

    try:
        append(leader_replicas, A, b"1", b"2")
        await replicated(A, 2)
        session_id = endpoint.session.session_id
        assert session_id != 0 and endpoint.session.epoch >= 1
        await replicated(A, 2)  # one more round: the leader learns the new offset
        assert follower_leo(leader_replicas, A) == 2
        assert leader_replicas.partition(A).log.high_watermark == 2

        leader_replicas_sessions = servicer._fetch.sessions
        leader_replicas_sessions.close_all()  # evicted, or the leader restarted
        append(leader_replicas, B, b"3")
        await replicated(B, 1)
        assert endpoint.session.session_id not in (0, session_id)
        assert [follower.partition(tp).log.log_end_offset for tp in TPS] == [2, 1, 0]
    finally:
        await endpoint.close()
        await server.stop(None)
        follower.log_manager.close()


async def test_a_log_start_moved_by_retention_reaches_the_follower(leader):
    """Retention runs off the loop and moves log starts without touching partitions; the
    replica manager then signals the logs it shortened, so their sessions answer them."""
    servicer, replicas, _clock = leader
    for value in (b"a", b"b"):
        append(replicas, A, value)
        replicas.partition(A).log.roll()
    sid = (await servicer.Fetch(request([(A, 2), (B, 0)], epoch=0), None)).session_id
    assert replicas.partition(A).log.high_watermark == 2
    replicas.log_manager.update_topic_config(T, {"retention.ms": "0"})
    deleted = await replicas.run_retention(now_ms=10**15)
    assert (deleted, replicas.partition(A).log.log_start_offset) == ({(T, 0): 2}, 2)
    await asyncio.sleep(0)  # the change callback runs on the loop
    told = await servicer.Fetch(request(session_id=sid, epoch=1), None)
    starts = {p.partition: p.log_start_offset for t in told.topics for p in t.partitions}
    assert starts == {0: 2}
