"""Long data-plane steps let a control request go first (``ControlPriority.pause`` every
``SLICE`` partitions): a session fetch round and a Metadata answer of topics an update touched.
``SLICE`` is 1 here, so three partitions (or topics) give two preemption points."""

from __future__ import annotations

import asyncio

import pytest
from test_broker_fetch_session import TPS, leader, request  # noqa: F401  (fixture)

from leasehold.broker.v1 import broker_pb2
from services.broker_agent import fetch as fetch_module
from services.broker_agent import servicer as servicer_module
from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Endpoint, MetadataPartition, UpdateMetadata


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


def _update(topics: list[str]) -> UpdateMetadata:
    states = tuple(MetadataPartition(t, 0, 1, 1, (1, 2), (1, 2), 1, 1, f"id-{t}") for t in topics)
    return UpdateMetadata(100, 3, -1, states, (Endpoint(1, "h", 1), Endpoint(2, "h", 2)), ())


@pytest.mark.parametrize("all_topics", [True, False])
async def test_a_metadata_answer_lets_a_control_request_go_first(leader, monkeypatch, all_topics):  # noqa: F811
    servicer, replicas, _clock = leader
    monkeypatch.setattr(servicer_module, "SLICE", 1)
    replicas.priority = ControlPriority(linger_s=0.0)
    cache = MetadataCache()
    cache.update(_update(["a", "b", "c"]))
    servicer._metadata = cache
    call = broker_pb2.MetadataRequest(
        all_topics=all_topics, topics=[] if all_topics else ["c", "a", "b"]
    )
    answers = []

    async def metadata() -> None:
        answers.append(await servicer.Metadata(call, None))

    order = await _control_arrives_at_the_first_pause(replicas.priority, metadata)
    assert order == ["control", "data"]
    want = ["a", "b", "c"] if all_topics else ["c", "a", "b"]
    assert [t.name for t in answers[0].topics] == want
    # Built once: a second call finds every answer built and pauses nowhere.
    replicas.priority.pause = None  # type: ignore[assignment]
    again = await servicer.Metadata(call, None)
    assert again == answers[0]
