"""A controller channel manager whose brokers answer in process (controller_service tests).

The queues and per-broker senders are the real ``ControllerChannelManager``'s; only gRPC's
unary call is replaced. Each call serialises the request as gRPC would (``_Broker.serialize``,
which also marks the batch issued) in a task of its own, as grpc aio does, and hands the bytes
to ``answer``: tests see exactly what each broker was sent, in order, and choose the answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from google.protobuf.message import Message

from services.controller.channels import (
    _RESPONSES,
    ChannelSettings,
    ControllerChannelManager,
    _Broker,
)
from services.controller.core import BrokerInfo


class InstantChannels(ControllerChannelManager):
    """``answer`` is each broker's reply; by default every request succeeds."""

    def __init__(self, on_answer: Callable[..., None] = lambda *_: None) -> None:
        super().__init__(ChannelSettings("ctl", 9190), on_answer)

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        """The reply of broker ``broker_id`` to a ``kind`` request whose bytes are ``data``."""
        return _RESPONSES[kind]()

    def add_broker(self, info: BrokerInfo) -> None:
        self.remove_broker(info.id)
        broker = _Broker(info, channel=None)  # type: ignore[arg-type]
        broker.methods = {kind: self._method(broker, kind) for kind in _RESPONSES}
        broker.task = asyncio.create_task(self._sender(broker))
        self._brokers[info.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        broker = self._brokers.pop(broker_id, None)
        if broker is not None:
            broker.task.cancel()

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                return await self.answer(broker.info.id, kind, broker.serialize(request))

            return asyncio.get_running_loop().create_task(invoke())

        return call

    async def close(self) -> None:
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)
