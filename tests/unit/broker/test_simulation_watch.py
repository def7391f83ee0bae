"""A simulated broker's watch notes the instant its cache stopped showing a failed broker as the
leader of any watched partition, as the UpdateMetadata that did it was applied: a benchmark
poll answered later by a busy process does not move it. The count is made once per cache
digest, for every broker of the process holding those states."""

from __future__ import annotations

from types import SimpleNamespace

from services.broker_agent.model import TopicPartition
from services.broker_agent.simulation.broker import Observation, Watch, prune_watch
from services.broker_agent.simulation.sharing import ByDigest

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


class Cache:
    """A metadata cache's leaders, its digest made of them; ``looked_up`` counts reads."""

    def __init__(self, leaders: dict[TopicPartition, int]) -> None:
        self.leaders = leaders
        self.looked_up = 0

    def digest(self) -> bytes:
        return repr(sorted(self.leaders.items())).encode()

    def partition(self, tp: TopicPartition):
        self.looked_up += 1
        leader = self.leaders.get(tp)
        return None if leader is None else SimpleNamespace(leader=leader)


def _watching(watch: Watch, cache: Cache, now: float) -> Observation:
    seen = Observation(watch=watch, still_led=len(watch.partitions))
    prune_watch(seen, cache, now)
    return seen


def test_cleared_at_is_the_update_that_left_none_led() -> None:
    cache = Cache({T0: 1, T1: 1, T2: 3})
    seen = _watching(Watch(1, (T0, T1, T2)), cache, 10.0)
    assert (seen.still_led, seen.cleared_at) == (2, 0.0)  # T2 was never led by 1
    cache.leaders[T0] = 2
    prune_watch(seen, cache, 11.0)
    assert (seen.still_led, seen.cleared_at) == (1, 0.0)
    del cache.leaders[T1]  # gone from the cache (its topic deleted): not led by 1 either
    prune_watch(seen, cache, 12.0)
    assert (seen.still_led, seen.cleared_at) == (0, 12.0)
    assert seen.cleared_arrived_at == 12.0  # no request: arrived as applied
    prune_watch(seen, cache, 13.0)  # later updates and polls leave the instant alone
    assert seen.cleared_at == 12.0


def test_brokers_holding_the_same_states_share_one_count() -> None:
    watch = Watch(1, (T0, T1, T2))
    first, second = Cache({T0: 1, T1: 1, T2: 3}), Cache({T0: 1, T1: 1, T2: 3})
    seen = [_watching(watch, c, 10.0) for c in (first, second)]
    assert [s.still_led for s in seen] == [2, 2]
    assert (first.looked_up, second.looked_up) == (3, 0)
    # One broker applied an update the other has not: each is counted by its own states.
    first.leaders[T0] = 2
    for s, c in zip(seen, (first, second), strict=True):
        prune_watch(s, c, 11.0)
    assert [s.still_led for s in seen] == [1, 2]
    assert (first.looked_up, second.looked_up) == (6, 0)
    second.leaders[T0] = 2
    prune_watch(seen[1], second, 12.0)
    assert (seen[1].still_led, second.looked_up) == (1, 0)


def test_by_digest_keeps_the_latest() -> None:
    figures = ByDigest(lambda cache: len(cache.leaders), size=2)
    caches = [Cache({T0: b}) for b in (1, 2, 3)]
    assert [figures(c) for c in caches] == [1, 1, 1]
    caches[0].leaders[T1] = 1  # its digest changed: counted again
    assert figures(caches[0]) == 2
    assert len(figures._known) == 2
