"""Where new followers start fetching, and how fetch states are added and removed in bulk.

A local log without leader-epoch entries is truncated to the high watermark, which cuts nothing
when the log ends at or below it: such a partition starts Fetching from its log end at once.
"""

from __future__ import annotations

import pytest

from services.broker_agent.follower.fetch_specs import FetchStates
from services.broker_agent.follower.fetch_state import FetcherSettings, PartitionFetchState, Phase
from services.broker_agent.follower.fetch_state import initial_state as initial
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.fetcher_manager import FetcherManager, InitialFetch
from services.broker_agent.model import Endpoint, TopicPartition

F, T = Phase.FETCHING, Phase.TRUNCATING


@pytest.mark.parametrize(
    ("existing", "init_offset", "unepoched_end", "expected"),
    [
        # No epochs, the log ends below / at the high watermark: fetch from its end.
        (None, 10, 4, PartitionFetchState(4, 7, F)),
        (None, 10, 10, PartitionFetchState(10, 7, F)),
        (None, 0, 0, PartitionFetchState(0, 7, F)),
        # No epochs but records past the high watermark: truncate first.
        (None, 10, 11, PartitionFetchState(10, 7, T)),
        # Epochs (or unknown): truncate by epoch first, as before.
        (None, 10, None, PartitionFetchState(10, 7, T)),
        # An unknown initial offset still asks the leader, whatever the log.
        (None, -1, 0, None),
        # Already fetching under the same epoch: kept as is.
        (PartitionFetchState(3, 7, F, 2), 10, 0, PartitionFetchState(3, 7, F, 2)),
        # Under an older epoch: replaced.
        (PartitionFetchState(3, 6, F, 2), 10, 5, PartitionFetchState(5, 7, F)),
    ],
)
def test_initial_state(existing, init_offset, unepoched_end, expected):
    got = initial(existing, init_offset=init_offset, leader_epoch=7, unepoched_end=unepoched_end)
    assert got == expected


def tp(i: int) -> TopicPartition:
    return TopicPartition("t", i)


@pytest.mark.parametrize(
    ("held", "truncating", "remove", "removed", "left", "truncating_left"),
    [
        ([0, 1, 2, 3], [1, 3], [1, 2, 9], [1, 2], [0, 3], [3]),
        ([0, 1], [0], [0, 1], [0, 1], [], []),
        ([0, 1], [0], [], [], [0, 1], [0]),
        ([], [], [4], [], [], []),
    ],
)
def test_pop_all(held, truncating, remove, removed, left, truncating_left):
    states = FetchStates()
    for i in held:
        states[tp(i)] = PartitionFetchState(i, 1, T if i in truncating else F)
    states.take_changed()
    out = states.pop_all([tp(i) for i in remove])
    assert list(out) == [tp(i) for i in removed]
    assert out == {tp(i): PartitionFetchState(i, 1, T if i in truncating else F) for i in removed}
    assert list(states) == [tp(i) for i in left]
    assert states.truncating == {tp(i) for i in truncating_left}
    assert states.take_changed() == {tp(i) for i in removed}


class Quiet:
    """A leader endpoint for fetchers that are never started."""

    def __init__(self, leader: Endpoint) -> None:
        self.leader = leader


@pytest.mark.parametrize("num_fetchers", [1, 3])
async def test_new_followers_start_where_their_logs_allow(num_fetchers):
    made: list[ReplicaFetcher] = []

    def create(leader: Endpoint, fetcher_id: int) -> ReplicaFetcher:
        fetcher = ReplicaFetcher(fetcher_id, Quiet(leader), None, FetcherSettings(), lambda: 0)  # type: ignore[arg-type]
        fetcher.start = lambda: None  # type: ignore[method-assign]
        made.append(fetcher)
        return fetcher

    manager = FetcherManager(num_fetchers, create)
    two, three = Endpoint(2, "h", 2), Endpoint(3, "h", 3)
    await manager.add_fetcher_for_partitions(
        {
            tp(0): InitialFetch(two, 5, 8, 8),  # no epochs, ends at the high watermark
            tp(1): InitialFetch(three, 5, 8, 3),  # no epochs, ends below it
            tp(2): InitialFetch(two, 5, 8, 9),  # no epochs, a record past it
            tp(3): InitialFetch(three, 5, 8),  # has epochs
            tp(4): InitialFetch(two, 5, -1, 0),  # unknown offset: ask the leader
        }
    )
    assert {t: manager.fetch_state(t) for t in map(tp, range(5))} == {
        tp(0): PartitionFetchState(8, 5, F),
        tp(1): PartitionFetchState(3, 5, F),
        tp(2): PartitionFetchState(8, 5, T),
        tp(3): PartitionFetchState(8, 5, T),
        tp(4): PartitionFetchState(-1, 5, T),
    }
    assert {key[0] for key in manager.fetchers} == {2, 3}
    for (leader, fetcher_id), fetcher in manager.fetchers.items():
        assert fetcher.leader.broker_id == leader and fetcher.fetcher_id == fetcher_id
        assert all(manager.fetcher_id(t) == fetcher_id for t in fetcher.states)
    assert sum(len(f.states) for f in made) == 5
