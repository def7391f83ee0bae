"""How many transactions a plan's commit keeps in flight: a plan that only creates partition
states (topic creation) goes with ``CREATION_COMMIT_CONCURRENCY``, any other with
``COMMIT_CONCURRENCY`` (``ControllerStore.commit_plan``). etcd answers a lease renewal only after
applying what was committed before it, so a creation's steps must not keep its queue long."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from leasehold.etcd import Keyspace
from leasehold.etcd.fenced import (
    COMMIT_CONCURRENCY,
    CREATION_COMMIT_CONCURRENCY,
    CommitResult,
    Fence,
    Write,
)
from services.controller import store as store_module
from services.controller.core import (
    LeaderAndIsr,
    PartitionStateWrite,
    ReplicaAssignment,
    StateChangePlan,
    TopicPartition,
)
from services.controller.store import ControllerStore

KS = Keyspace("window")
ASSIGNMENT = ReplicaAssignment((1, 2, 3))


def state_write(partition: int, *, create: bool) -> PartitionStateWrite:
    return PartitionStateWrite(
        TopicPartition("t", partition),
        LeaderAndIsr(1, 0, (1, 2, 3), 7, 0 if create else 40 + partition, False),
        0 if create else 40 + partition,
        create,
        ASSIGNMENT,
    )


@pytest.fixture
def committed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(writes, concurrency) of each ``fenced.commit`` the store makes; every write succeeds."""
    calls: list[tuple[int, int]] = []

    async def fake_commit(
        client: object, fence: Fence, writes: Sequence[Write], *, concurrency: int
    ) -> CommitResult:
        calls.append((len(writes), concurrency))
        return CommitResult(
            revisions={w.key: 100 + i for i, w in enumerate(writes)}, transactions=1
        )

    monkeypatch.setattr(store_module, "commit", fake_commit)
    return calls


def fenced_store() -> ControllerStore:
    store = ControllerStore(client=None, keyspace=KS)  # type: ignore[arg-type]
    store.fence = Fence.controller(b"election", 1, KS.controller_epoch, 2)
    return store


async def test_a_creation_commits_with_the_creation_window(committed) -> None:
    plan = StateChangePlan(7, writes=tuple(state_write(p, create=True) for p in range(300)))
    result = await fenced_store().commit_plan(plan)
    assert committed == [(300, CREATION_COMMIT_CONCURRENCY)]
    assert len(result.epochs) == 300 and not result.stale


async def test_a_plan_with_any_update_commits_with_the_default_window(committed) -> None:
    writes = [state_write(p, create=True) for p in range(5)] + [state_write(9, create=False)]
    await fenced_store().commit_plan(StateChangePlan(7, writes=tuple(writes)))
    await fenced_store().commit_plan(
        StateChangePlan(7, writes=tuple(state_write(p, create=False) for p in range(3)))
    )
    assert committed == [(6, COMMIT_CONCURRENCY), (3, COMMIT_CONCURRENCY)]
