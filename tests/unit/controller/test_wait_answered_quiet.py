"""``ControllerChannelManager.wait_answered`` with ``quiet_s``: it waits as long as brokers keep
answering (``timeout_s`` at most) and gives up once none has answered for ``quiet_s``, on the
manager's clock. A broker failure's replica step waits so (``flows.brokers``)."""

from __future__ import annotations

import asyncio

from leasehold.broker.v1 import control_pb2
from leasehold.clock import ManualClock
from services.controller.core import BrokerInfo
from services.controller.delivery.channels import (
    _RESPONSES,
    UPDATE_METADATA,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)


class _NoChannel:
    async def close(self) -> None:
        pass


class _Answering(ControllerChannelManager):
    """Senders whose calls are answered when the test answers their broker (``answer``)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(ChannelSettings("ctl", 9190), lambda *a: None, clock=clock)
        self.gates: dict[int, asyncio.Event] = {}

    def add_broker(self, info: BrokerInfo) -> None:
        broker = self._broker(info, _NoChannel())  # type: ignore[arg-type]
        self.gates[info.id] = asyncio.Event()
        broker.methods = {kind: self._method(broker, kind) for kind in _RESPONSES}
        broker.task = asyncio.create_task(self._sender(broker))
        self._brokers[info.id] = broker

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                broker.serialize(request)
                await self.gates[broker.info.id].wait()
                return _RESPONSES[kind]()

            return asyncio.get_running_loop().create_task(invoke())

        return call

    async def answer(self, broker_id: int) -> None:
        self.gates[broker_id].set()
        while self._brokers[broker_id].finished < self._brokers[broker_id].queued:
            await asyncio.sleep(0)

    async def close(self) -> None:
        for b in self._brokers.values():
            b.task.cancel()


async def _manager(brokers: int) -> tuple[_Answering, ManualClock]:
    clock = ManualClock()
    ch = _Answering(clock)
    for b in range(1, brokers + 1):
        ch.add_broker(BrokerInfo(b, f"h{b}", 9000 + b))
        ch.send(b, UPDATE_METADATA, control_pb2.UpdateMetadataRequest())
    return ch, clock


async def _turns() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_it_waits_while_brokers_keep_answering_and_ends_when_all_have() -> None:
    ch, clock = await _manager(3)
    waiting = asyncio.create_task(ch.wait_answered(10.0, quiet_s=1.0))
    await _turns()
    for broker in (1, 2):  # each answer comes 0.9 s after the last: past 1 s in all
        clock.advance(0.9)
        await ch.answer(broker)
        await _turns()
        assert not waiting.done()
    clock.advance(0.9)
    await ch.answer(3)
    assert await asyncio.wait_for(waiting, 1.0) is True
    assert ch._waiters == []
    await ch.close()


async def test_it_gives_up_once_no_broker_has_answered_for_quiet_s() -> None:
    ch, clock = await _manager(3)
    waiting = asyncio.create_task(ch.wait_answered(10.0, quiet_s=1.0))
    await _turns()
    clock.advance(0.5)
    await ch.answer(1)
    await _turns()
    clock.advance(0.9)  # 0.9 s since broker 1's answer: still waiting
    await _turns()
    assert not waiting.done()
    clock.advance(0.2)  # brokers 2 and 3 never answer
    assert await asyncio.wait_for(waiting, 1.0) is False
    assert ch._waiters == []
    await ch.close()


async def test_answers_that_keep_coming_are_waited_for_timeout_s_at_most() -> None:
    ch, clock = await _manager(4)
    waiting = asyncio.create_task(ch.wait_answered(2.0, quiet_s=1.0))
    await _turns()
    for broker in (1, 2):
        clock.advance(0.8)
        await ch.answer(broker)
        await _turns()
        assert not waiting.done()
    clock.advance(0.5)  # 2.1 s in, 0.5 s since the last answer
    assert await asyncio.wait_for(waiting, 1.0) is False
    await ch.close()


async def test_without_quiet_s_a_silent_fleet_is_waited_for_timeout_s() -> None:
    ch, clock = await _manager(2)
    waiting = asyncio.create_task(ch.wait_answered(3.0))
    await _turns()
    clock.advance(2.9)
    await _turns()
    assert not waiting.done()
    clock.advance(0.2)
    assert await asyncio.wait_for(waiting, 1.0) is False
    await ch.close()
