"""A controller channel manager whose brokers answer in process (controller_service tests).

The queues and per-broker senders are the real ``ControllerChannelManager``'s, with brokers
wired without gRPC as in ``bench.controller_micro.RecordingChannels``; only the call differs.
Each call serialises the request as gRPC would (``_Broker.serialize``, which also marks the
batch issued) in a task of its own, as grpc aio does, and hands the bytes to ``answer``: tests
see exactly what each broker was sent, in order, and choose the answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from google.protobuf.message import Message

from bench.controller_micro import RecordingChannels
from services.controller.delivery.channels import _RESPONSES, ChannelSettings, _Broker


class InstantChannels(RecordingChannels):
    """``answer`` is each broker's reply; by default every request succeeds."""

    def __init__(self, on_answer: Callable[..., None] = lambda *_: None) -> None:
        super().__init__()
        self.settings = ChannelSettings("ctl", 9190)
        self.on_response = on_answer

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        """The reply of broker ``broker_id`` to a ``kind`` request whose bytes are ``data``."""
        return _RESPONSES[kind]()

    def _method(self, broker: _Broker, kind: str):
        def call(request, timeout=None):
            async def invoke():
                return await self.answer(broker.info.id, kind, broker.serialize(request))

            return asyncio.get_running_loop().create_task(invoke())

        return call
