"""A bulk control request is decoded and applied with the cyclic collector paused, and the heap is
settled after it before the collector runs again (else the collector walks the request's new
objects once on its own, and the settle again); small requests, a freezer that is off (tests,
libraries) and a collector someone else disabled are left alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from leasehold.broker.v1 import control_pb2
from leasehold.heap import BULK_PARTITIONS, HeapFreezer
from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.model import Code, ControlResult
from services.broker_agent.servicer import BrokerControlServicer


class _Replicas:
    """Notes whether the collector ran while each request was applied."""

    def __init__(self) -> None:
        self.enabled_during: list[bool] = []
        self.priority = ControlPriority()

    async def _apply(self, request) -> ControlResult:
        self.enabled_during.append(gc.isenabled())
        return ControlResult(Code.NONE)

    become_leader_or_follower = stop_replicas = update_metadata = _apply


class _Freezer(HeapFreezer):
    """Records settles (and whether the collector was running then) instead of freezing the
    test process's heap."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled=enabled)
        self.settled_with: list[bool] = []

    def settle(self) -> None:
        self.settled_with.append(gc.isenabled())


def _states(n: int) -> list[dict]:
    return [dict(topic="t", partition=p, leader=1, leader_epoch=1) for p in range(n)]


def _requests(n: int) -> dict[str, object]:
    return {
        "LeaderAndIsr": control_pb2.LeaderAndIsrRequest(
            controller_epoch=1, partition_states=[dict(s, replicas=[1]) for s in _states(n)]
        ),
        "StopReplica": control_pb2.StopReplicaRequest(
            controller_epoch=1,
            partition_states=[dict(topic=s["topic"], partition=s["partition"]) for s in _states(n)],
        ),
        "UpdateMetadata": control_pb2.UpdateMetadataRequest(
            controller_epoch=1, partition_states=_states(n)
        ),
    }


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize(
    "partitions, freezer_on, enabled_before, paused, settled",
    [
        (BULK_PARTITIONS, True, True, True, [False]),  # settled while still paused
        (BULK_PARTITIONS - 1, True, True, False, []),  # not a bulk request
        (BULK_PARTITIONS, False, True, False, [True]),  # freezer off: the default collector
        (BULK_PARTITIONS, True, False, True, [False]),  # disabled by someone else: stays so
    ],
)
@pytest.mark.parametrize("kind", ["LeaderAndIsr", "StopReplica", "UpdateMetadata"])
async def test_bulk_control_requests_run_with_the_collector_paused(
    collector, kind, partitions, freezer_on, enabled_before, paused, settled
) -> None:
    replicas = _Replicas()
    heap = _Freezer(enabled=freezer_on)
    servicer = BrokerControlServicer(replicas, heap)  # type: ignore[arg-type]
    if not enabled_before:
        gc.disable()
    response = await getattr(servicer, kind)(_requests(partitions)[kind], None)
    assert response.error_code == 0
    assert replicas.enabled_during == [not paused]
    assert gc.isenabled() is enabled_before
    # (The real ``settle`` does nothing when the freezer is off; ours records every call.)
    assert heap.settled_with == settled


async def test_a_failed_decode_turns_the_collector_back_on(collector) -> None:
    replicas = _Replicas()
    servicer = BrokerControlServicer(replicas, _Freezer(enabled=True))  # type: ignore[arg-type]
    request = _requests(BULK_PARTITIONS)["UpdateMetadata"]
    request.partition_states.add(topic="t", partition=0, leader=1)  # listed twice
    with pytest.raises(Exception, match="listed twice"):
        await servicer.UpdateMetadata(request, None)
    assert gc.isenabled()
    assert replicas.enabled_during == []
