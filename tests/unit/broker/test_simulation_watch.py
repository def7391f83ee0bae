"""A simulated broker's watch notes the instant its cache stopped showing a failed broker as the
leader of any watched partition, as the UpdateMetadata that did it was applied: a benchmark
poll answered later by a busy process does not move it."""

from __future__ import annotations

from types import SimpleNamespace

from services.broker_agent.model import TopicPartition
from services.broker_agent.simulation.broker import Observation, prune_watch

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


class Cache:
    def __init__(self, leaders: dict[TopicPartition, int]) -> None:
        self.leaders = leaders

    def partition(self, tp: TopicPartition):
        leader = self.leaders.get(tp)
        return None if leader is None else SimpleNamespace(leader=leader)


def test_cleared_at_is_the_update_that_left_none_led() -> None:
    cache = Cache({T0: 1, T1: 1, T2: 3})
    seen = Observation(watch_leader=1, still_led={T0, T1, T2})
    prune_watch(seen, cache, 10.0)
    assert (seen.still_led, seen.cleared_at) == ({T0, T1}, 0.0)  # T2 was never led by 1
    cache.leaders[T0] = 2
    prune_watch(seen, cache, 11.0)
    assert (seen.still_led, seen.cleared_at) == ({T1}, 0.0)
    del cache.leaders[T1]  # gone from the cache (its topic deleted): not led by 1 either
    prune_watch(seen, cache, 12.0)
    assert (seen.still_led, seen.cleared_at) == (set(), 12.0)
    prune_watch(seen, cache, 13.0)  # later updates and polls leave the instant alone
    assert seen.cleared_at == 12.0
