"""Calls from the broker to the active controller (AlterPartition, ControlledShutdown).

The controller's endpoint is known two ways (contract 8): etcd's election prefix names the
current winner with its own address (and the name its TLS certificate carries), and the last
UpdateMetadata named it. The election's is tried first, the cached one after. A target that
answers NOT_CONTROLLER or cannot be reached has its channel closed and dialled afresh on the
next try, after the election is read again: an address shared by several controllers (a
Kubernetes ClusterIP Service) must not keep an HTTP/2 connection pinned to a controller that
lost office. Calls retry with backoff until the caller's deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc

from leasehold.channels import channel
from leasehold.config import TlsConfig
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.etcd import EtcdClient, EtcdError, Keyspace
from leasehold.etcd.election import leader_of
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.model import Code

log = logging.getLogger(__name__)


class ControllerUnavailableError(Exception):
    """No controller answered before the deadline."""


class ControllerClient:
    def __init__(
        self,
        etcd: EtcdClient,
        keyspace: Keyspace,
        cached_endpoint: Callable[[], tuple[str, int] | None],
        tls: TlsConfig | None = None,
        backoff_ms: int = 500,
    ) -> None:
        self._etcd = etcd
        self._keyspace = keyspace
        self._cached_endpoint = cached_endpoint
        self._tls = tls
        self._backoff = backoff_ms / 1000.0
        # One channel per controller endpoint seen; there are only ever a handful.
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._discovered: str | None = None
        self._server_names: dict[str, str] = {}  # target -> name its certificate carries
        self.redials = 0  # channels dropped after NOT_CONTROLLER or a failure

    async def _election_endpoint(self, timeout: float) -> str | None:
        try:
            async with asyncio.timeout(timeout):
                kv = await leader_of(self._etcd, self._keyspace.controller_election_prefix)
        except (EtcdError, TimeoutError) as exc:
            log.info("cannot read the controller election: %s", str(exc) or "timed out")
            return None
        if kv is None:
            return None
        reg = metadata_pb2.ControllerRegistration()
        reg.ParseFromString(kv.value)
        target = f"{reg.host}:{reg.port}"
        if reg.tls_server_name:
            self._server_names[target] = reg.tls_server_name
        return target

    async def _candidates(self, rediscover: bool, deadline: float) -> list[str]:
        """The endpoints to try, the election's first; its read ends by ``deadline`` (an etcd
        that does not answer must not hold a caller past its own deadline)."""
        targets: list[str] = []
        cached = self._cached_endpoint()
        if rediscover or self._discovered is None:
            self._discovered = await self._election_endpoint(
                max(deadline - time.monotonic(), 0.001)
            )
        if self._discovered is not None:
            targets.append(self._discovered)
        if cached is not None:
            targets.append(f"{cached[0]}:{cached[1]}")
        return list(dict.fromkeys(targets))

    def _stub_for(self, target: str) -> controller_pb2_grpc.ControllerServiceStub:
        ch = self._channels.get(target)
        if ch is None:
            name = self._server_names.get(target, "")
            ch = self._channels[target] = channel(target, self._tls, server_name=name)
        return controller_pb2_grpc.ControllerServiceStub(ch)

    async def _redial(self, target: str) -> None:
        """Close ``target``'s channel: the next call makes a new connection (which a shared
        address may route to another controller)."""
        ch = self._channels.pop(target, None)
        if ch is not None:
            self.redials += 1
            await ch.close()

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        """Call ``method`` on the active controller, retrying until ``deadline`` (monotonic)."""
        rediscover = False
        while True:
            for target in await self._candidates(rediscover, deadline):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                stub = self._stub_for(target)
                try:
                    response = await getattr(stub, method)(request, timeout=min(remaining, 10.0))
                except grpc.aio.AioRpcError as exc:
                    log.info("controller %s failed %s: %s", target, method, exc.code().name)
                    await self._redial(target)
                    continue
                if response.error_code == Code.NOT_CONTROLLER:
                    await self._redial(target)
                    continue
                return response
            if time.monotonic() + self._backoff >= deadline:
                raise ControllerUnavailableError(f"no controller answered {method}")
            await asyncio.sleep(self._backoff)
            rediscover = True

    async def alter_partition(
        self, request: controller_pb2.AlterPartitionRequest, timeout: float
    ) -> controller_pb2.AlterPartitionResponse:
        return await self.call("AlterPartition", request, time.monotonic() + timeout)

    async def controlled_shutdown(
        self, request: controller_pb2.ControlledShutdownRequest, timeout: float
    ) -> controller_pb2.ControlledShutdownResponse:
        return await self.call("ControlledShutdown", request, time.monotonic() + timeout)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            await ch.close()
