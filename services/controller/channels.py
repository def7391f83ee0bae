"""ControllerChannelManager: one request queue and one sender task per broker (seed 000 section 1).

Requests to a broker are sent one at a time, in queue order, each retried with exponential
back-off until it gets an answer or the broker leaves (``remove_broker`` cancels its sender), as
Kafka's RequestSendThread does. A request batch becomes, per broker, LeaderAndIsr then
UpdateMetadata then StopReplica, queued together. Answers go to ``on_response`` on the sender
task; the callback must only log or put an event on the controller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import Message

from leasehold import channels, telemetry
from leasehold.broker.v1 import control_pb2_grpc
from leasehold.config import TlsConfig
from services.controller import wire
from services.controller.core import BrokerInfo, BrokerRequests

log = logging.getLogger(__name__)

LEADER_AND_ISR = "LeaderAndIsr"
UPDATE_METADATA = "UpdateMetadata"
STOP_REPLICA = "StopReplica"

ResponseCallback = Callable[[int, str, Message, Message], None]


@dataclass(frozen=True)
class ChannelSettings:
    controller_host: str
    controller_port: int
    tls: TlsConfig | None = None
    request_timeout_s: float = 10.0
    backoff_s: float = 0.1
    backoff_max_s: float = 2.0


@dataclass
class _Broker:
    info: BrokerInfo
    channel: grpc.aio.Channel
    stub: control_pb2_grpc.BrokerControlServiceStub
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    task: asyncio.Task | None = None


def _open_channel(target: str, tls: TlsConfig | None) -> grpc.aio.Channel:
    if tls is not None and tls.ca:
        return channels.channel(target, tls)
    return grpc.aio.insecure_channel(
        target,
        options=list(channels.CHANNEL_OPTIONS),
        interceptors=telemetry.client_interceptors(),
    )


class ControllerChannelManager:
    def __init__(self, settings: ChannelSettings, on_response: ResponseCallback) -> None:
        self.settings = settings
        self.on_response = on_response
        self._brokers: dict[int, _Broker] = {}
        self.sent: dict[str, int] = {}
        self.failures = 0

    @property
    def broker_ids(self) -> frozenset[int]:
        return frozenset(self._brokers)

    def add_broker(self, info: BrokerInfo) -> None:
        """Open a channel and start a sender; an existing one for the id is replaced."""
        self.remove_broker(info.id)
        channel = _open_channel(f"{info.host}:{info.port}", self.settings.tls)
        broker = _Broker(info, channel, control_pb2_grpc.BrokerControlServiceStub(channel))
        broker.task = asyncio.create_task(self._sender(broker), name=f"to-broker-{info.id}")
        self._brokers[info.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to a broker; queued requests are dropped (it left the cluster)."""
        broker = self._brokers.pop(broker_id, None)
        if broker is None:
            return
        if broker.task is not None:
            broker.task.cancel()
        asyncio.get_running_loop().create_task(broker.channel.close())

    def update_broker(self, info: BrokerInfo) -> None:
        """A changed endpoint (same broker epoch): reconnect, keeping nothing queued."""
        current = self._brokers.get(info.id)
        if current is None or (current.info.host, current.info.port) != (info.host, info.port):
            self.add_broker(info)
        else:
            current.info = info

    def send_batch(self, requests: dict[int, BrokerRequests]) -> None:
        """Queue one built request batch: per broker LeaderAndIsr, UpdateMetadata, StopReplica."""
        s = self.settings
        for broker_id, req in requests.items():
            self.send(broker_id, LEADER_AND_ISR, wire.leader_and_isr(req))
            self.send(
                broker_id,
                UPDATE_METADATA,
                wire.update_metadata(req, s.controller_host, s.controller_port),
            )
            self.send(broker_id, STOP_REPLICA, wire.stop_replica(req))

    def send(self, broker_id: int, kind: str, request: Message | None) -> bool:
        if request is None:
            return False
        broker = self._brokers.get(broker_id)
        if broker is None:
            log.debug("no channel to broker %d; dropping %s", broker_id, kind)
            return False
        broker.queue.put_nowait((kind, request))
        return True

    def queued(self, broker_id: int) -> int:
        broker = self._brokers.get(broker_id)
        return broker.queue.qsize() if broker is not None else 0

    async def _sender(self, broker: _Broker) -> None:
        while True:
            kind, request = await broker.queue.get()
            response = await self._send_until_answered(broker, kind, request)
            self.sent[kind] = self.sent.get(kind, 0) + 1
            try:
                self.on_response(broker.info.id, kind, request, response)
            except Exception:
                log.exception("error in %s response callback for broker %d", kind, broker.info.id)

    async def _send_until_answered(self, broker: _Broker, kind: str, request: Message) -> Message:
        method = getattr(broker.stub, kind)
        backoff = self.settings.backoff_s
        while True:
            try:
                return await method(request, timeout=self.settings.request_timeout_s)
            except grpc.aio.AioRpcError as e:
                self.failures += 1
                log.warning(
                    "%s to broker %d failed (%s); retrying in %.1fs",
                    kind,
                    broker.info.id,
                    e.code().name,
                    backoff,
                )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.settings.backoff_max_s)

    async def close(self) -> None:
        brokers, self._brokers = list(self._brokers.values()), {}
        for b in brokers:
            if b.task is not None:
                b.task.cancel()
        for b in brokers:
            if b.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await b.task
            await b.channel.close()
