"""A broker failure's LeaderAndIsr on a survivor: half its partitions become leaders, half follow
the other survivor; one journal write, exact per-partition outcomes, equal epochs ignored."""

from __future__ import annotations

import asyncio
import itertools
import os

import pytest

from leasehold.etcd import Keyspace
from services.broker_agent.follower.fetch_state import FetcherSettings, PartitionFetchState, Phase
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.log import LogManager, Record
from services.broker_agent.log.epoch_journal import JOURNAL, decode_records
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    TopicPartition,
)
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.replica_state import FollowerState
from services.broker_agent.topic_configs import ConfigStore

LOCAL, DEAD, OTHER = 2, 1, 3
ENDPOINTS = {b: Endpoint(b, "127.0.0.1", 9000 + b) for b in (DEAD, LOCAL, OTHER)}
NOW = 1_000  # the manager's clock: fixed, so caught-up times are exact


class SilentLeader:
    """A leader that never answers: fetchers park on it (no network in these tests)."""

    def __init__(self, leader: Endpoint) -> None:
        self.leader = leader

    async def _never(self, *_args, **_kwargs):
        await asyncio.Event().wait()

    fetch = offsets_for_leader_epoch = list_offset = _never

    async def wait_ready(self, _timeout_s: float) -> bool:
        return True

    async def close(self) -> None:
        pass


@pytest.fixture
async def replicas(tmp_path):
    logs = LogManager(tmp_path)
    configs = ConfigStore(Keyspace("test"), LOCAL, 1, 1 << 20)
    manager = ReplicaManager(LOCAL, logs, MetadataCache(), configs, lambda: NOW, 30_000)
    manager.broker_epoch = 7

    def new_fetcher(leader: Endpoint, fetcher_id: int) -> ReplicaFetcher:
        endpoint = SilentLeader(leader)
        clock = itertools.count().__next__
        return ReplicaFetcher(fetcher_id, endpoint, manager, FetcherSettings(), clock)  # type: ignore[arg-type]

    manager.fetchers = FetcherManager(1, new_fetcher)
    yield manager
    await manager.close()


def state(i: int, leader: int, epoch: int) -> LeaderAndIsrPartition:
    """Partition i of topic t: replicas (1, 2, 3) for even i, (1, 3, 2) for odd; the ISR is the
    replicas from the leader on (broker 1 out once it failed)."""
    replicas = (DEAD, LOCAL, OTHER) if i % 2 == 0 else (DEAD, OTHER, LOCAL)
    isr = replicas[replicas.index(leader) :]
    return LeaderAndIsrPartition(
        topic="t",
        partition=i,
        leader=leader,
        leader_epoch=epoch,
        isr=isr,
        replicas=replicas,
        partition_epoch=epoch,
        controller_epoch=1,
        topic_id="id-t",
    )


def request(states: list[LeaderAndIsrPartition], leaders: tuple[int, ...]) -> LeaderAndIsr:
    return LeaderAndIsr(
        controller_id=100,
        controller_epoch=1,
        broker_epoch=7,
        partitions=tuple(states),
        live_leaders=tuple(ENDPOINTS[b] for b in leaders),
    )


def before(count: int) -> LeaderAndIsr:
    return request([state(i, DEAD, 1) for i in range(count)], (DEAD,))


def failure(count: int) -> LeaderAndIsr:
    """Each partition's first live replica leads, at the next epoch."""
    states = [state(i, LOCAL if i % 2 == 0 else OTHER, 2) for i in range(count)]
    return request(states, (LOCAL, OTHER))


def journal(manager: ReplicaManager) -> dict:
    return decode_records((manager.log_manager.data_dir / JOURNAL).read_bytes())[0]


def fetch_states(manager: ReplicaManager) -> dict[int, dict[TopicPartition, PartitionFetchState]]:
    """Each fetcher's partition states, by leader broker id."""
    fetchers = manager.fetchers.fetchers  # type: ignore[union-attr]
    return {leader: dict(f.states) for (leader, _fid), f in fetchers.items()}


async def test_leaders_and_followers_after_a_broker_failure(replicas, monkeypatch):
    count = 8
    set_up = await replicas.become_leader_or_follower(before(count))
    assert set(set_up.errors_by_partition().values()) == {Code.NONE}
    # Partitions 4 and 5 got data from broker 1: their logs know epoch 1 and end at 1, and
    # the local high watermark stayed at 0 (a follower's watermark comes from the leader).
    for i in (4, 5):
        replicas.partition(TopicPartition("t", i)).log.assign_epoch_start_offset(1, 0)
        replicas.partition(TopicPartition("t", i)).log.append_as_leader([Record(b"x")], 1)
    syncs: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (syncs.append(fd), real(fd)))

    result = await replicas.become_leader_or_follower(failure(count))

    assert result.errors_by_partition() == {TopicPartition("t", i): Code.NONE for i in range(count)}
    assert len(syncs) == 1  # every new leader epoch: one journal append and one fdatasync
    on_disk = journal(replicas)
    for i in range(count):
        tp = TopicPartition("t", i)
        partition = replicas.partition(tp)
        assert (partition.leader_id, partition.leader_epoch, partition.awaiting_sync) == (
            LOCAL if i % 2 == 0 else OTHER,
            2,
            False,
        )
        if i % 2 == 0:  # led here now: the new epoch starts at the log end, durably
            leo = partition.log.log_end_offset
            assert on_disk[("t", i)][-1] == (2, leo)
            assert partition.leader_epoch_start_offset == leo
            assert partition.followers == {  # an ISR member counts as caught up now
                DEAD: FollowerState(DEAD, last_caught_up_ms=0),
                OTHER: FollowerState(OTHER, last_caught_up_ms=NOW),
            }
    states = fetch_states(replicas)
    assert list(states) == [OTHER]  # broker 1's fetcher is gone
    assert states[OTHER] == {
        TopicPartition("t", 1): PartitionFetchState(0, 2, Phase.FETCHING),  # empty, no epochs
        TopicPartition("t", 3): PartitionFetchState(0, 2, Phase.FETCHING),
        TopicPartition("t", 5): PartitionFetchState(0, 2, Phase.TRUNCATING),  # has epoch 1
        TopicPartition("t", 7): PartitionFetchState(0, 2, Phase.FETCHING),
    }


async def test_an_equal_leader_epoch_is_ignored_and_changes_nothing(replicas):
    count = 6
    await replicas.become_leader_or_follower(before(count))
    await replicas.become_leader_or_follower(failure(count))
    on_disk, states = journal(replicas), fetch_states(replicas)
    again = await replicas.become_leader_or_follower(failure(count))
    assert again.error == Code.NONE
    assert again.errors_by_partition() == {
        TopicPartition("t", i): Code.STALE_CONTROLLER_EPOCH for i in range(count)
    }
    assert (journal(replicas), fetch_states(replicas)) == (on_disk, states)


@pytest.mark.parametrize(
    ("controller_epoch", "broker_epoch", "expected"),
    [(0, 7, Code.STALE_CONTROLLER_EPOCH), (1, 6, Code.STALE_BROKER_EPOCH)],
)
async def test_a_fenced_failover_request_changes_nothing(
    replicas, controller_epoch, broker_epoch, expected
):
    await replicas.become_leader_or_follower(before(4))
    stale = failure(4)
    stale = LeaderAndIsr(
        stale.controller_id,
        controller_epoch,
        broker_epoch,
        stale.partitions,
        stale.live_leaders,
    )
    result = await replicas.become_leader_or_follower(stale)
    assert (result.error, result.partition_errors) == (expected, ())
    assert {p.leader_id for p in replicas.partitions.values()} == {DEAD}
    assert list(fetch_states(replicas)) == [DEAD]
