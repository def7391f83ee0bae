"""The replica fetcher manager (Kafka's AbstractFetcherManager, seed 001 §5).

A fetcher is identified by (leader broker id, fetcher id), where the fetcher id spreads a
leader's partitions over ``num.replica.fetchers`` tasks by a hash of the partition. Adding
partitions reuses the fetcher for that key when it still points at the same endpoint; if the
broker id now answers at another endpoint (it restarted elsewhere), the old fetcher is shut down
and a new one takes over its partitions. Fetchers left without partitions are shut down by
``shutdown_idle_fetchers`` after each LeaderAndIsr, as Kafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from leasehold.javacompat import java_string_hash
from services.broker_agent.follower.fetch_state import (
    PartitionFetchState,
    Phase,
    fetcher_id,
    initial_state,
)
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.model import Endpoint, TopicPartition

log = logging.getLogger(__name__)

FetcherKey = tuple[int, int]  # (leader broker id, fetcher id)


class InitialFetch(NamedTuple):
    """Where a new follower starts: its leader, the leader epoch and the local high watermark;
    ``unepoched_end`` is the log end offset of a local log without leader-epoch entries (None:
    it has some, or it is not known), which may spare it the truncation round
    (``fetch_state.initial_state``).

    A named tuple: a LeaderAndIsr makes one per new follower, thousands at a time."""

    leader: Endpoint
    leader_epoch: int
    offset: int
    unepoched_end: int | None = None


class FetcherManager:
    def __init__(
        self, num_fetchers: int, create_fetcher: Callable[[Endpoint, int], ReplicaFetcher]
    ) -> None:
        self.num_fetchers = num_fetchers
        self._create = create_fetcher
        self.fetchers: dict[FetcherKey, ReplicaFetcher] = {}

    def fetcher_id(self, tp: TopicPartition) -> int:
        return fetcher_id(java_string_hash(tp.topic), tp.partition, self.num_fetchers)

    def _start(self, key: FetcherKey, leader: Endpoint) -> ReplicaFetcher:
        fetcher = self._create(leader, key[1])
        self.fetchers[key] = fetcher
        fetcher.start()
        return fetcher

    async def add_fetcher_for_partitions(self, initial: dict[TopicPartition, InitialFetch]) -> None:
        """Group by (leader, fetcher id) and hand each group to its fetcher."""
        groups: dict[tuple[Endpoint, int], dict[TopicPartition, InitialFetch]] = {}
        topic_hashes: dict[str, int] = {}  # each topic's Java hash, computed once
        num_fetchers = self.num_fetchers
        # The last group used, by the identity of its leader endpoint: callers pass one
        # endpoint object per leader, which spares hashing it for every partition.
        last: tuple[Endpoint | None, int, dict[TopicPartition, InitialFetch]] = (None, -1, {})
        for tp, start in initial.items():
            if num_fetchers == 1:
                fid = 0
            else:
                topic_hash = topic_hashes.get(tp.topic)
                if topic_hash is None:
                    topic_hash = topic_hashes[tp.topic] = java_string_hash(tp.topic)
                fid = fetcher_id(topic_hash, tp.partition, num_fetchers)
            if start.leader is not last[0] or fid != last[1]:
                last = (start.leader, fid, groups.setdefault((start.leader, fid), {}))
            last[2][tp] = start
        for (leader, fid), starts in groups.items():
            key = (leader.broker_id, fid)
            fetcher = self.fetchers.get(key)
            carried: dict[TopicPartition, PartitionFetchState] = {}
            if fetcher is not None and fetcher.leader != leader:
                # Same broker id, new endpoint: replace the task, keep its partitions.
                carried = fetcher.remove_partitions(set(fetcher.states))
                del self.fetchers[key]
                await fetcher.shutdown()
                fetcher = None
            if fetcher is None:
                fetcher = self._start(key, leader)
                if carried:
                    fetcher.add_partitions(carried)
            states: dict[TopicPartition, PartitionFetchState] = {}
            for tp, start in starts.items():
                state = initial_state(
                    fetcher.states.get(tp),
                    init_offset=start.offset,
                    leader_epoch=start.leader_epoch,
                    unepoched_end=start.unepoched_end,
                )
                if state is None:
                    state = PartitionFetchState(-1, start.leader_epoch, Phase.TRUNCATING)
                states[tp] = state
            fetcher.add_partitions(states)
            if log.isEnabledFor(logging.INFO):  # the list is O(partitions) to format
                log.info(
                    "added fetcher to broker %d for %s",
                    leader.broker_id,
                    ", ".join(f"{tp}@{s.fetch_offset}" for tp, s in states.items()),
                )

    def remove_fetcher_for_partitions(self, tps: set[TopicPartition]) -> None:
        """Stop fetching ``tps`` (synchronous: no fetcher touches them after this returns)."""
        if not tps:
            return
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(tps)

    def fetch_state(self, tp: TopicPartition) -> PartitionFetchState | None:
        for fetcher in self.fetchers.values():
            state = fetcher.states.get(tp)
            if state is not None:
                return state
        return None

    def partition_count(self) -> int:
        return sum(len(f.states) for f in self.fetchers.values())

    async def shutdown_idle_fetchers(self) -> None:
        idle = [key for key, f in self.fetchers.items() if not f.states]
        for key in idle:
            fetcher = self.fetchers.pop(key)
            await fetcher.shutdown()

    async def close_all(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            fetcher.remove_partitions(set(fetcher.states))
            await fetcher.shutdown()
