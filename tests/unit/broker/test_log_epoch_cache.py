"""LeaderEpochCache against the examples of Kafka's LeaderEpochFileCacheTest."""

from __future__ import annotations

import pytest

from services.broker_agent.log import UNDEFINED_EPOCH, EpochEntry, LeaderEpochCache

U = (UNDEFINED_EPOCH, -1)

# (assignments, [(requested epoch, log end offset, expected (epoch, end offset)), ...])
END_OFFSET_CASES = {
    "latest epoch answers the log end offset": (
        [(2, 10)],
        [(2, 11, (2, 11))],
    ),
    "latest epoch with repeated assigns": (
        [(2, 11), (2, 12)],
        [(2, 14, (2, 14))],
    ),
    "undefined epoch requested": (
        [(2, 11), (3, 12)],
        [(UNDEFINED_EPOCH, 0, U)],
    ),
    "empty cache": ([], [(0, 0, U), (7, 0, U), (UNDEFINED_EPOCH, 73, U)]),
    "requested epoch below the first: first start offset, requested epoch": (
        [(5, 11), (6, 12), (7, 13)],
        [(4, 0, (4, 11))],
    ),
    "matching epoch with earlier start truncates": (
        [(5, 11), (6, 12), (7, 13), (7, 12)],
        [(5, 0, (5, 12)), (6, 0, (5, 12))],
    ),
    "previous epoch ends where the next starts": (
        [(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)],
        [(2, 17, (2, 15))],
    ),
    "gaps answer the largest epoch below": (
        [(0, 10), (2, 13), (4, 17)],
        [(1, 0, (0, 13)), (2, 0, (2, 17)), (3, 0, (2, 17))],
    ),
    "epoch above every known one": (
        [(2, 100)],
        [(3, 100, U)],
    ),
    "epochs need not start at zero": (
        [(2, 6)],
        [(2, 7, (2, 7))],
    ),
    "older epoch re-assigned later wins": (
        [(1, 5), (2, 6), (1, 7)],
        [(1, 8, (1, 8)), (2, 8, U)],
    ),
    "leader changes many times": (
        [(0, 0), (1, 0), (2, 5)],
        [(2, 10, (2, 10)), (1, 10, (1, 5)), (0, 10, (0, 0))],
    ),
    "follower receives many messages": (
        [(0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5), (2, 6), (2, 7), (2, 8)],
        [(2, 9, (2, 9)), (0, 9, (0, 3)), (1, 9, (1, 6))],
    ),
}


@pytest.mark.parametrize("name", list(END_OFFSET_CASES))
def test_end_offset_for(name: str) -> None:
    assignments, queries = END_OFFSET_CASES[name]
    cache = LeaderEpochCache()
    for epoch, start in assignments:
        cache.assign(epoch, start)
    for requested, leo, expected in queries:
        assert cache.end_offset_for(requested, leo) == expected, (requested, leo)


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        ([(2, 9), (3, 9)], [(3, 9)]),  # start offsets strictly increase
        ([(2, 6), (2, 10)], [(2, 6)]),  # an epoch's start never moves forward
        ([(2, 6), (2, 7)], [(2, 6)]),
        ([(2, 6), (3, 5)], [(3, 5)]),  # a lower start offset drops what it contradicts
        ([(1, 5), (2, 6), (1, 7)], [(1, 7)]),
        ([(5, 11), (6, 12), (7, 13), (7, 12)], [(5, 11), (7, 12)]),
    ],
)
def test_assign_keeps_both_columns_monotonic(
    assignments: list[tuple[int, int]], expected: list[tuple[int, int]]
) -> None:
    cache = LeaderEpochCache(assignments)
    assert cache.pairs() == expected


def test_assign_reports_whether_anything_changed() -> None:
    cache = LeaderEpochCache()
    assert cache.assign(2, 6) is True
    assert cache.assign(2, 7) is False
    assert cache.assign(3, 8) is True
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


BASE = [(2, 6), (3, 8), (4, 11)]


@pytest.mark.parametrize(
    ("end_offset", "expected", "changed"),
    [
        (8, [(2, 6)], True),  # on an epoch boundary: that epoch goes
        (9, [(2, 6), (3, 8)], True),  # between boundaries
        (11, [(2, 6), (3, 8)], True),
        (12, BASE, False),
        (-1, BASE, False),  # undefined offset: nothing
        (0, [], True),
    ],
)
def test_truncate_from_end(end_offset: int, expected: list, changed: bool) -> None:
    cache = LeaderEpochCache(BASE)
    assert cache.truncate_from_end(end_offset) is changed
    assert cache.pairs() == expected


@pytest.mark.parametrize(
    ("start_offset", "expected"),
    [
        (8, [(3, 8), (4, 11)]),
        (1, BASE),  # too early: nothing
        (6, BASE),  # exactly the first start: nothing
        (11, [(4, 11)]),
        (9, [(3, 9), (4, 11)]),  # inside an epoch: it now starts there
        (15, [(4, 15)]),
        (-1, BASE),
    ],
)
def test_truncate_from_start(start_offset: int, expected: list) -> None:
    cache = LeaderEpochCache(BASE)
    cache.truncate_from_start(start_offset)
    assert cache.pairs() == expected


def test_truncate_from_start_between_the_first_two_epochs() -> None:
    cache = LeaderEpochCache([(0, 0), (1, 7), (2, 10)])
    cache.truncate_from_start(5)
    assert cache.entries() == [EpochEntry(0, 5), EpochEntry(1, 7), EpochEntry(2, 10)]


def test_truncations_on_an_empty_cache_are_no_ops() -> None:
    cache = LeaderEpochCache()
    assert cache.truncate_from_start(7) is False
    assert cache.truncate_from_end(7) is False
    assert cache.latest_epoch is None
    assert cache.clear() is False


@pytest.mark.parametrize(
    ("offset", "expected"),
    [(0, None), (5, None), (6, 2), (7, 2), (8, 3), (10, 3), (11, 4), (99, 4)],
)
def test_epoch_for_offset(offset: int, expected: int | None) -> None:
    assert LeaderEpochCache(BASE).epoch_for_offset(offset) == expected
