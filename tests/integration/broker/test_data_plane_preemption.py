"""Long data-plane steps let a control request go first (``ControlPriority.pause`` every
``SLICE`` partitions): a leader's session fetch round, a follower's handling of the answer.
``SLICE`` is 1 here, so three partitions give two preemption points."""

from __future__ import annotations

import asyncio

from test_broker_fetch_session import (  # noqa: F401  (leader: a fixture)
    TPS,
    Clock,
    append,
    leader,
    request,
    served_with_follower,
)

from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.follower import fetcher as fetcher_module
from services.broker_agent.follower.fetch_state import FetcherSettings, PartitionFetchState, Phase
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.leader import fetch as fetch_module


async def _control_arrives_at_the_first_pause(priority: ControlPriority, step) -> list[str]:
    """Run ``step`` (a data-plane call); at its first preemption point a control request
    starts and is held 30 ms. The order in which the two finished."""
    order: list[str] = []
    first = asyncio.Event()
    real_pause = priority.pause

    async def pause() -> None:
        first.set()
        await real_pause()

    priority.pause = pause  # type: ignore[method-assign]

    async def data() -> None:
        await step()
        order.append("data")

    task = asyncio.create_task(data())
    await asyncio.wait_for(first.wait(), 5)
    with priority.control():
        await asyncio.sleep(0.03)
        order.append("control")
    await asyncio.wait_for(task, 5)
    return order


async def test_a_session_fetch_round_lets_a_control_request_go_first(leader, monkeypatch):  # noqa: F811
    servicer, replicas, _clock = leader
    monkeypatch.setattr(fetch_module, "SLICE", 1)
    replicas.priority = ControlPriority(linger_s=0.0)
    answers = []

    async def fetch() -> None:
        answers.append(await servicer.Fetch(request([(tp, 0) for tp in TPS], epoch=0), None))

    assert await _control_arrives_at_the_first_pause(replicas.priority, fetch) == [
        "control",
        "data",
    ]
    assert answers[0].error_code == 0 and answers[0].session_id != 0
    assert sorted(p.partition for t in answers[0].topics for p in t.partitions) == [0, 1, 2]


async def test_a_follower_handles_a_long_answer_in_slices(leader, tmp_path, monkeypatch):  # noqa: F811
    servicer, leader_replicas, _clock = leader
    monkeypatch.setattr(fetcher_module, "SLICE", 1)
    server, follower, endpoint = await served_with_follower(servicer, tmp_path)
    priority = ControlPriority(linger_s=0.0)
    fetcher = ReplicaFetcher(
        0,
        endpoint,
        follower,
        FetcherSettings(max_wait_ms=0, flush=False),
        Clock(),
        pause=lambda: priority.pause(),
    )
    fetcher.add_partitions({tp: PartitionFetchState(0, 1, Phase.FETCHING) for tp in TPS})
    try:
        for tp in TPS:
            append(leader_replicas, tp, b"x")
        order = await _control_arrives_at_the_first_pause(priority, fetcher.maybe_fetch)
        assert order == ["control", "data"]
        assert [follower.partition(tp).log.log_end_offset for tp in TPS] == [1, 1, 1]
    finally:
        await endpoint.close()
        await server.stop(0)
        follower.log_manager.close()
