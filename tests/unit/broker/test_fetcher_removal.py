"""Removing partitions from a fetcher, from either side of the sizes (few of many, many of few)."""

from __future__ import annotations

import pytest

from services.broker_agent.follower.fetch_state import FetcherSettings, PartitionFetchState, Phase
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.model import TopicPartition


def tp(i: int) -> TopicPartition:
    return TopicPartition("t", i)


def state(i: int) -> PartitionFetchState:
    return PartitionFetchState(i * 10, 1, Phase.FETCHING)


def fetcher_with(held: list[int], failed: list[int]) -> ReplicaFetcher:
    fetcher = ReplicaFetcher(0, object(), object(), FetcherSettings(), lambda: 0)  # type: ignore[arg-type]
    fetcher.add_partitions({tp(i): state(i) for i in held})
    fetcher.failed.update(tp(i) for i in failed)
    return fetcher


@pytest.mark.parametrize(
    ("held", "failed", "remove", "removed", "left", "failed_left"),
    [
        ([0, 1, 2, 3, 4], [7], [3], [3], [0, 1, 2, 4], [7]),  # few of many
        ([0, 1], [7], [1, 5, 6, 7], [1], [0], []),  # many of few, some not held
        ([0, 1, 2], [], [0, 1, 2], [0, 1, 2], [], []),  # all of them
        ([0, 1, 2], [8], [], [], [0, 1, 2], [8]),  # nothing
        ([], [8], [8, 9], [], [], []),  # only a failed one
    ],
)
def test_remove_partitions(held, failed, remove, removed, left, failed_left):
    fetcher = fetcher_with(held, failed)
    out = fetcher.remove_partitions({tp(i) for i in remove})
    assert out == {tp(i): state(i) for i in removed}
    assert list(fetcher.states) == [tp(i) for i in left]
    assert fetcher.failed == {tp(i) for i in failed_left}
    assert fetcher.states.changed >= {tp(i) for i in removed}
