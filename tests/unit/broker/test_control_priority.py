"""Control requests before data-plane work (``control_priority``, KIP-291): data-plane entries
wait while a control request is handled and for ``linger_s`` after the last one ends (not
after one the controller sent ``nothing_queued``), for ``max_hold_s`` from the latest one's
start at most; a control request starting in that time keeps them waiting; the broker
servicer's data calls and the replica fetcher's rounds take their turn through it."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.clock import ManualClock, turns
from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.follower.fetch_state import FetcherSettings
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, ControlResult
from services.broker_agent.servicer import BrokerControlServicer, BrokerServicer


async def _waiter(priority: ControlPriority, done: list[str], name: str) -> None:
    await priority.data_turn()
    done.append(name)


async def test_idle_data_turn_does_not_wait() -> None:
    priority = ControlPriority(linger_s=10.0, clock=ManualClock())
    await priority.data_turn()
    assert (priority.busy, priority.waits) == (False, 0)


@pytest.mark.parametrize("linger", [0.0, 0.03])
async def test_data_waits_for_the_control_request_and_the_linger(linger) -> None:
    clock = ManualClock()
    priority = ControlPriority(linger_s=linger, clock=clock)
    done: list[str] = []
    with priority.control():
        task = asyncio.create_task(_waiter(priority, done, "fetch"))
        clock.advance(0.02)
        await turns()
        assert done == [] and priority.busy
    await turns()
    if linger:
        assert done == [] and priority.busy  # the linger: another request may follow
        clock.advance(linger - 0.001)
        await turns()
        assert done == []
        clock.advance(0.001)
    await turns()
    assert task.done() and done == ["fetch"] and priority.waits == 1
    assert not priority.busy


async def test_a_control_request_within_the_linger_keeps_data_waiting() -> None:
    clock = ManualClock()
    priority = ControlPriority(linger_s=0.05, clock=clock)
    done: list[str] = []
    with priority.control():
        pass
    task = asyncio.create_task(_waiter(priority, done, "fetch"))
    clock.advance(0.03)
    await turns()
    with priority.control():  # the UpdateMetadata after a LeaderAndIsr
        clock.advance(0.04)  # the first linger's timer fires meanwhile: stays closed
        await turns()
        assert done == []
    clock.advance(0.049)
    await turns()
    assert done == []  # still within the second request's linger
    clock.advance(0.001)
    await turns()
    assert task.done() and done == ["fetch"]


async def test_a_request_without_linger_opens_the_data_plane_when_it_ends() -> None:
    """The controller marked it ``nothing_queued``: no wait for a request that is not coming.
    A request with the linger before it does not keep the data plane closed either."""
    clock = ManualClock()
    priority = ControlPriority(linger_s=10.0, clock=clock)
    done: list[str] = []
    with priority.control():
        pass
    with priority.control(linger=False):
        task = asyncio.create_task(_waiter(priority, done, "metadata"))
        await turns()
        assert done == [] and priority.busy
    await turns()
    assert task.done() and done == ["metadata"] and not priority.busy


async def test_overlapping_control_requests_hold_until_the_last_ends() -> None:
    priority = ControlPriority(linger_s=0.0, clock=ManualClock())
    done: list[str] = []
    first, second = priority.control(), priority.control()
    first.__enter__()
    second.__enter__()
    task = asyncio.create_task(_waiter(priority, done, "produce"))
    first.__exit__(None, None, None)
    await turns()
    assert done == []
    second.__exit__(None, None, None)
    await turns()
    assert task.done() and done == ["produce"]


async def test_a_long_busy_spell_holds_data_for_max_hold_at_most() -> None:
    """A 100,000-partition request takes seconds: clients are served meanwhile after the
    bound, counted as ``overheld``; a later request starts its own bound."""
    clock = ManualClock()
    priority = ControlPriority(linger_s=0.0, max_hold_s=0.05, clock=clock)
    for _ in range(2):
        with priority.control():
            clock.advance(0.02)
            turn = asyncio.create_task(priority.data_turn())
            await turns()
            clock.advance(0.029)
            await turns()
            assert not turn.done()
            clock.advance(0.001)  # 50 ms since the request began
            await turns()
            assert turn.done() and priority.busy  # let through while the request still runs
        clock.advance(0.01)
    assert (priority.waits, priority.overheld) == (2, 2)


async def test_the_hold_bound_counts_from_the_latest_control_request() -> None:
    """A LeaderAndIsr, then (within the linger) its UpdateMetadata: data waiting during the
    second request gets the bound from the second request's start."""
    clock = ManualClock()
    priority = ControlPriority(linger_s=0.02, max_hold_s=0.06, clock=clock)
    with priority.control():
        clock.advance(0.05)
    with priority.control():
        clock.advance(0.01)
        turn = asyncio.create_task(priority.data_turn())
        await turns()
        clock.advance(0.049)  # 110 ms after the first request began, 59 after the second
        await turns()
        assert not turn.done()
        clock.advance(0.001)
        await turns()
        assert turn.done()
    assert priority.overheld == 1


async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    """A fetcher stopped by the control request it waits behind just ends."""
    clock = ManualClock()
    priority = ControlPriority(linger_s=0.0, clock=clock)
    with priority.control():
        task = asyncio.create_task(priority.data_turn())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert clock.pending == 0  # its hold timer went with it
    await priority.data_turn()


class _SlowReplicas:
    """Applies every control request only once ``release`` is set."""

    def __init__(self) -> None:
        self.priority = ControlPriority(linger_s=0.0, clock=ManualClock())
        self.release = asyncio.Event()

    async def _apply(self, request) -> ControlResult:
        await self.release.wait()
        return ControlResult(Code.NONE)

    become_leader_or_follower = stop_replicas = update_metadata = _apply


_CONTROL = {
    "LeaderAndIsr": control_pb2.LeaderAndIsrRequest(
        controller_epoch=1,
        partition_states=[dict(topic="t", partition=0, leader=1, leader_epoch=1, replicas=[1])],
    ),
    "StopReplica": control_pb2.StopReplicaRequest(
        controller_epoch=1, partition_states=[dict(topic="t", partition=0)]
    ),
    "UpdateMetadata": control_pb2.UpdateMetadataRequest(controller_epoch=1),
}


@pytest.mark.parametrize("kind", sorted(_CONTROL))
async def test_a_metadata_call_is_answered_after_the_control_request(kind) -> None:
    replicas = _SlowReplicas()
    control = BrokerControlServicer(replicas)  # type: ignore[arg-type]
    data = BrokerServicer(replicas, None, None, MetadataCache(), "c")  # type: ignore[arg-type]
    order: list[str] = []

    async def call(name: str, coro) -> None:
        await coro
        order.append(name)

    applying = asyncio.create_task(call(kind, getattr(control, kind)(_CONTROL[kind], None)))
    await turns()
    asking = asyncio.create_task(
        call("Metadata", data.Metadata(broker_pb2.MetadataRequest(all_topics=True), None))
    )
    await turns()
    assert order == [] and replicas.priority.waits == 1
    replicas.release.set()
    await asyncio.wait_for(asyncio.gather(applying, asking), 1.0)
    assert order == [kind, "Metadata"]


@pytest.mark.parametrize("kind", sorted(_CONTROL))
@pytest.mark.parametrize("nothing_queued", [False, True])
async def test_the_linger_follows_the_controllers_nothing_queued(kind, nothing_queued) -> None:
    replicas = _SlowReplicas()
    replicas.priority = ControlPriority(linger_s=10.0, clock=ManualClock())
    replicas.release.set()
    control = BrokerControlServicer(replicas)  # type: ignore[arg-type]
    request = type(_CONTROL[kind])()
    request.CopyFrom(_CONTROL[kind])
    request.nothing_queued = nothing_queued
    await getattr(control, kind)(request, None)
    assert replicas.priority.busy is not nothing_queued


async def test_a_replica_fetcher_round_waits_its_turn() -> None:
    priority = ControlPriority(linger_s=0.0, clock=ManualClock())
    rounds: list[str] = []

    class _Fetcher(ReplicaFetcher):
        async def maybe_truncate(self) -> None:
            rounds.append("round")

        async def maybe_fetch(self) -> None:
            pass

    class _Ready:
        async def wait_ready(self, _timeout_s: float) -> bool:
            return True

    fetcher = _Fetcher(
        0,
        _Ready(),  # type: ignore[arg-type]
        None,
        FetcherSettings(),
        lambda: 0,
        data_turn=priority.data_turn,  # type: ignore[arg-type]
    )
    with priority.control():
        task = asyncio.create_task(fetcher.do_work())
        await turns()
        assert rounds == []
    await asyncio.wait_for(task, 1.0)
    assert rounds == ["round"]
