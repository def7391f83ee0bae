"""HeapFreezer: what it freezes, when it settles, and that thawing reclaims frozen cycles."""

from __future__ import annotations

import gc
import weakref

import pytest

from leasehold.heap import BULK_PARTITIONS, HeapFreezer


@pytest.fixture(autouse=True)
def clean_gc():
    gc.unfreeze()
    yield
    gc.unfreeze()


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_freezes_survivors_but_not_young_garbage():
    freezer = HeapFreezer()
    kept = [Node() for _ in range(100)]
    garbage = cycle()  # unreachable already: the young collection must reclaim it
    freezer.settle()
    assert garbage() is None
    assert gc.get_freeze_count() >= len(kept)
    assert freezer.settles == 1


@pytest.mark.parametrize(
    ("partitions", "settled"), [(0, 0), (BULK_PARTITIONS - 1, 0), (BULK_PARTITIONS, 1)]
)
def test_only_bulk_requests_settle(partitions, settled):
    freezer = HeapFreezer()
    freezer.settle_after(partitions)
    assert freezer.settles == settled


def test_maintain_thaws_once_per_interval_and_reclaims_frozen_cycles():
    now = [0.0]
    freezer = HeapFreezer(thaw_interval_s=60.0, clock=lambda: now[0])
    holder = [cycle()]
    ref = holder[0]
    strong = ref()
    freezer.settle()  # the cycle is frozen while still referenced
    del strong
    gc.collect()
    assert ref() is not None  # frozen garbage survives ordinary collections
    now[0] = 59.0
    assert freezer.maintain() is False
    assert ref() is not None
    now[0] = 60.0
    assert freezer.maintain() is True
    assert ref() is None
    assert gc.get_freeze_count() > 0  # refrozen after the full collection
    assert (freezer.maintain(), freezer.thaws) == (False, 1)
