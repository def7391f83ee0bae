"""The broker's Kafka gauges, computed from hosted partitions and fetchers (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.broker_agent.follower.fetch_state import PartitionFetchState, Phase
from services.broker_agent.metrics import (
    PartitionCounts,
    fetcher_lags,
    isr_change_kind,
    partition_counts,
)
from services.broker_agent.model import TopicPartition

ME = 1


@dataclass
class _Partition:
    """What the gauges read of a ``Partition``."""

    tp: TopicPartition
    leader_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def is_leader(self) -> bool:
        return self.leader_id == ME


def _p(topic: str, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> _Partition:
    return _Partition(TopicPartition(topic, 0), leader, replicas, isr)


MIN_ISR = {"a": 1, "b": 2, "c": 3}


@pytest.mark.parametrize(
    ("partitions", "expected"),
    [
        ([], PartitionCounts()),
        ([_p("a", 2, (1, 2), (2,))], PartitionCounts(partitions=1)),
        ([_p("a", ME, (1, 2, 3), (1, 2, 3))], PartitionCounts(1, 1, 0, 0, 0)),
        ([_p("a", ME, (1, 2, 3), (1,))], PartitionCounts(1, 1, 1, 0, 1)),
        ([_p("b", ME, (1, 2, 3), (1, 2))], PartitionCounts(1, 1, 1, 0, 1)),
        ([_p("b", ME, (1, 2, 3), (1,))], PartitionCounts(1, 1, 1, 1, 0)),
        ([_p("c", ME, (1, 2), (1, 2))], PartitionCounts(1, 1, 0, 1, 0)),
        (
            [_p("a", ME, (1, 2), (1,)), _p("b", 2, (1, 2), (2,)), _p("b", ME, (1, 2), (1, 2))],
            PartitionCounts(3, 2, 1, 0, 2),
        ),
    ],
)
def test_kafka_replica_manager_gauges(partitions, expected):
    assert partition_counts(partitions, MIN_ISR.__getitem__) == expected


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ((1, 2, 3), (1, 2), (True, False)),
        ((1, 2), (1, 2, 3), (False, True)),
        ((1, 2), (1, 3), (True, True)),
        ((1, 2), (2, 1), (False, False)),
    ],
)
def test_isr_changes_are_shrinks_and_or_expansions(before, after, kind):
    assert isr_change_kind(before, after) == kind


@dataclass
class _Fetcher:
    states: dict = field(default_factory=dict)


@dataclass
class _Manager:
    fetchers: dict = field(default_factory=dict)


def _state(lag: int | None) -> PartitionFetchState:
    return PartitionFetchState(10, 1, Phase.FETCHING, lag=lag)


def test_fetcher_lag_is_the_largest_of_its_partitions():
    t = TopicPartition
    manager = _Manager(
        {
            (2, 0): _Fetcher(
                {t("a", 0): _state(5), t("a", 1): _state(40), t("b", 0): _state(None)}
            ),
            (3, 1): _Fetcher({t("c", 0): _state(None)}),
            (3, 0): _Fetcher({}),
        }
    )
    assert fetcher_lags(manager) == {(2, 0): 40, (3, 1): 0, (3, 0): 0}
    assert fetcher_lags(None) == {}
