"""The partition states the controller's requests name while brokers have not answered them are
bounded (``ChannelSettings.max_partitions_in_flight``): a creation step's UpdateMetadata written
to a thousand brokers at once held 1.3-1.6 GB in the controller while they read it."""

from __future__ import annotations

import asyncio

import pytest

from bench.controller_micro import RecordingChannels
from services.controller.core import BrokerInfo
from services.controller.delivery import wire
from services.controller.delivery.channels import (
    UPDATE_METADATA,
    ChannelSettings,
    InFlight,
    _Broker,
)


async def _holding(budget: InFlight, n: int, inside: list[int], release: asyncio.Event) -> None:
    async with budget.hold(n):
        inside.append(n)
        await release.wait()


async def test_a_hold_waits_while_it_would_go_past_the_limit_and_in_the_order_it_began() -> None:
    budget = InFlight(10)
    inside: list[int] = []
    gates = [asyncio.Event() for _ in range(4)]
    tasks = [
        asyncio.create_task(_holding(budget, n, inside, gate))
        for n, gate in zip((6, 6, 3, 1), gates, strict=True)
    ]
    await asyncio.sleep(0)
    # The second (6) waits; the third (3) and fourth (1) would fit but wait behind it.
    assert (inside, budget.used) == ([6], 6)
    gates[0].set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert (inside, budget.used) == ([6, 6, 3, 1], 10)
    for gate in gates:
        gate.set()
    await asyncio.gather(*tasks)
    assert budget.used == 0


async def test_a_request_naming_more_than_the_limit_goes_alone() -> None:
    budget = InFlight(10)
    inside: list[int] = []
    small, big = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(_holding(budget, 2, inside, small))
    second = asyncio.create_task(_holding(budget, 50, inside, big))
    await asyncio.sleep(0)
    assert inside == [2]
    small.set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert (inside, budget.used) == ([2, 50], 10)
    big.set()
    await asyncio.gather(first, second)
    assert budget.used == 0


async def test_a_wait_cancelled_takes_nothing_and_lets_the_next_in() -> None:
    budget = InFlight(10)
    inside: list[int] = []
    gate, never = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(_holding(budget, 8, inside, gate))
    waiting = asyncio.create_task(_holding(budget, 8, inside, never))
    after = asyncio.create_task(_holding(budget, 2, inside, gate))
    await asyncio.sleep(0)
    assert inside == [8]
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.sleep(0)
    assert (inside, budget.used) == ([8, 2], 10)
    gate.set()
    await asyncio.gather(first, after)
    assert budget.used == 0


async def test_a_wait_cancelled_as_it_was_admitted_gives_its_share_back() -> None:
    budget = InFlight(10)
    inside: list[int] = []
    held = budget.hold(8)
    await held.__aenter__()
    waiting = asyncio.create_task(_holding(budget, 8, inside, asyncio.Event()))
    await asyncio.sleep(0)
    await held.__aexit__(None, None, None)  # admits the waiting one, which has not run yet
    assert budget.used == 8
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert (inside, budget.used) == ([], 0)


class _Answering(RecordingChannels):
    """Each broker answers only when the test lets it (``answer[broker id]``)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.settings = ChannelSettings("127.0.0.1", 9999, max_partitions_in_flight=limit)
        self.in_flight = InFlight(limit)
        self.answer: dict[int, asyncio.Event] = {}
        self.written: list[int] = []

    def _method(self, broker: _Broker, kind: str):
        inner = super()._method(broker, kind)

        def call(request, timeout=None):
            async def invoke():
                broker.serialize(request)
                self.written.append(broker.info.id)
                await self.answer.setdefault(broker.info.id, asyncio.Event()).wait()
                return await inner(request, timeout=timeout)

            return asyncio.get_running_loop().create_task(invoke())

        return call


def _update_metadata(partitions: int) -> wire.EncodedRequest:
    return wire.EncodedRequest((b"x" * partitions,), 1, 1, 1, partitions)


async def test_brokers_past_the_limit_are_sent_their_requests_as_others_answer() -> None:
    """Four brokers, each sent 4,000 states, 10,000 at most in flight: two go at once, the
    others as those answer; ``wait_issued`` does not wait for the two held back."""
    ch = _Answering(10_000)
    for b in (1, 2, 3, 4):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
        ch.send(b, UPDATE_METADATA, _update_metadata(4_000))
    assert await ch.wait_issued(1.0, idle_only=True)
    await asyncio.sleep(0)
    assert (sorted(ch.written), ch.in_flight.used) == ([1, 2], 8_000)
    ch.answer.setdefault(1, asyncio.Event()).set()
    for _ in range(100):  # turns of the loop, not time: the answer, the release, the next send
        if len(ch.written) == 3:
            break
        await asyncio.sleep(0)
    assert sorted(ch.written) == [1, 2, 3]
    for b in (2, 3, 4):
        ch.answer.setdefault(b, asyncio.Event()).set()
    assert await ch.wait_answered(1.0)
    assert (sorted(ch.written), ch.in_flight.used) == ([1, 2, 3, 4], 0)
    await ch.close()
