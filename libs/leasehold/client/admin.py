"""AdminClient: the Python face of ``leasehold.admin.v1.AdminService``.

Each method builds a request from plain arguments, calls the admin service with a deadline and
returns the response message (the API's own types, shared with every other language). A failed
call raises the matching :class:`~leasehold.errors.LeaseholdError`; per-item error codes inside a
successful response are left for the caller to read. :class:`SyncAdminClient` runs the same
methods on a private event loop for synchronous callers such as the CLI.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc

from leasehold import client_config
from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.channels import channel
from leasehold.client.errors import error_from_rpc
from leasehold.client_config import client_tls
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig

DEFAULT_ADMIN = "127.0.0.1:9093"

TOPIC = admin_pb2.RESOURCE_TYPE_TOPIC
BROKER = admin_pb2.RESOURCE_TYPE_BROKER
OPERATIONS = {
    "set": admin_pb2.CONFIG_OPERATION_SET,
    "delete": admin_pb2.CONFIG_OPERATION_DELETE,
    "append": admin_pb2.CONFIG_OPERATION_APPEND,
    "subtract": admin_pb2.CONFIG_OPERATION_SUBTRACT,
}


def default_admin_address() -> str:
    """``$LEASEHOLD_ADMIN``, the client config file's, or 127.0.0.1:9093 (``make run``'s)."""
    return client_config.resolve(required=False).admin


def _assignments(assignment: Mapping[int, Sequence[int]] | None):
    return [
        admin_pb2.ReplicaAssignment(partition=p, broker_ids=list(r))
        for p, r in sorted((assignment or {}).items())
    ]


def _partitions(partitions: Iterable[tuple[str, int]]) -> list[common_pb2.TopicPartition]:
    return [common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions]


class AdminClient:
    """Async admin client; use ``async with AdminClient(addr) as admin:`` or call ``close()``."""

    def __init__(
        self, address: str | None = None, *, tls: TlsConfig | None = None, timeout: float = 30.0
    ) -> None:
        self.address = address or default_admin_address()
        self.timeout = timeout
        # Given, or found in the environment or the client config file (``client_config``).
        self.tls = client_tls(self.address, tls)
        self._channel = channel(self.address, self.tls)
        self._stub = admin_pb2_grpc.AdminServiceStub(self._channel)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def call(self, method: str, request: Any, wait_ms: int = 0) -> Any:
        """Call ``method`` with a deadline covering the server-side wait; map failures."""
        try:
            return await getattr(self._stub, method)(
                request, timeout=self.timeout + wait_ms / 1000.0
            )
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e, f"admin at {self.address}") from None

    # --- topics ---------------------------------------------------------------------------------

    async def create_topics(
        self, topics: Sequence[admin_pb2.CreatableTopic], *, validate_only=False, timeout_ms=0
    ) -> admin_pb2.CreateTopicsResponse:
        req = admin_pb2.CreateTopicsRequest(
            topics=topics, validate_only=validate_only, timeout_ms=timeout_ms
        )
        return await self.call("CreateTopics", req, timeout_ms)

    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        *,
        assignment: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str] | None = None,
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> admin_pb2.CreatableTopicResult:
        topic = admin_pb2.CreatableTopic(
            name=name,
            num_partitions=-1 if assignment else partitions,
            replication_factor=-1 if assignment else replication_factor,
            assignments=_assignments(assignment),
            configs=dict(configs or {}),
        )
        resp = await self.create_topics([topic], validate_only=validate_only, timeout_ms=timeout_ms)
        return resp.topics[0]

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 0
    ) -> admin_pb2.DeleteTopicsResponse:
        req = admin_pb2.DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)
        return await self.call("DeleteTopics", req, timeout_ms)

    async def create_partitions(
        self,
        name: str,
        count: int,
        *,
        assignments: Sequence[Sequence[int]] = (),
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> admin_pb2.CreatePartitionsTopicResult:
        topic = admin_pb2.CreatePartitionsTopic(
            name=name,
            count=count,
            assignments=[
                admin_pb2.ReplicaAssignment(partition=i, broker_ids=list(r))
                for i, r in enumerate(assignments)
            ],
        )
        req = admin_pb2.CreatePartitionsRequest(
            topics=[topic], validate_only=validate_only, timeout_ms=timeout_ms
        )
        return (await self.call("CreatePartitions", req, timeout_ms)).topics[0]

    async def list_topics(self) -> list[admin_pb2.TopicListing]:
        return list((await self.call("ListTopics", admin_pb2.ListTopicsRequest())).topics)

    async def describe_topics(self, names: Sequence[str] = ()) -> list[admin_pb2.TopicDescription]:
        req = admin_pb2.DescribeTopicsRequest(topics=list(names))
        return list((await self.call("DescribeTopics", req)).topics)

    async def describe_cluster(self) -> admin_pb2.DescribeClusterResponse:
        return await self.call("DescribeCluster", admin_pb2.DescribeClusterRequest())

    # --- configs --------------------------------------------------------------------------------

    async def describe_configs(
        self, resources: Sequence[tuple[int, str]]
    ) -> list[admin_pb2.DescribeConfigsResult]:
        req = admin_pb2.DescribeConfigsRequest(
            resources=[admin_pb2.ConfigResource(type=t, name=n) for t, n in resources]
        )
        return list((await self.call("DescribeConfigs", req)).results)

    async def alter_configs(
        self,
        resource: tuple[int, str],
        ops: Sequence[tuple[str, str, str]],
        *,
        validate_only: bool = False,
    ) -> admin_pb2.AlterConfigsResponse:
        """``ops`` are (name, "set"|"delete"|"append"|"subtract", value)."""
        req = admin_pb2.AlterConfigsRequest(
            resources=[
                admin_pb2.AlterConfigsResource(
                    resource=admin_pb2.ConfigResource(type=resource[0], name=resource[1]),
                    configs=[
                        admin_pb2.AlterableConfig(name=n, value=v, operation=OPERATIONS[op])
                        for n, op, v in ops
                    ],
                )
            ],
            validate_only=validate_only,
        )
        return await self.call("AlterConfigs", req)

    # --- reassignments and elections ------------------------------------------------------------

    async def generate_reassignment(
        self, topics: Sequence[str], broker_ids: Sequence[int], *, disable_rack_aware=False
    ) -> admin_pb2.GenerateReassignmentResponse:
        req = admin_pb2.GenerateReassignmentRequest(
            topics=list(topics), broker_ids=list(broker_ids), disable_rack_aware=disable_rack_aware
        )
        return await self.call("GenerateReassignment", req)

    async def alter_partition_reassignments(
        self,
        targets: Mapping[tuple[str, int], Sequence[int] | None],
        *,
        throttle_bytes_per_sec: int = 0,
        timeout_ms: int = 0,
    ) -> admin_pb2.AlterPartitionReassignmentsResponse:
        """``targets`` maps (topic, partition) to target replicas, or None to cancel."""
        req = admin_pb2.AlterPartitionReassignmentsRequest(
            reassignments=[
                admin_pb2.ReassignableReplicas(
                    topic=t, partition=p, replicas=list(r or ()), cancel=r is None
                )
                for (t, p), r in targets.items()
            ],
            throttle_bytes_per_sec=throttle_bytes_per_sec,
            timeout_ms=timeout_ms,
        )
        return await self.call("AlterPartitionReassignments", req, timeout_ms)

    async def list_partition_reassignments(
        self, partitions: Iterable[tuple[str, int]] = ()
    ) -> list[admin_pb2.OngoingReassignment]:
        req = admin_pb2.ListPartitionReassignmentsRequest(partitions=_partitions(partitions))
        return list((await self.call("ListPartitionReassignments", req)).reassignments)

    async def elect_leaders(
        self,
        election_type: int,
        partitions: Iterable[tuple[str, int]] = (),
        *,
        timeout_ms: int = 0,
    ) -> admin_pb2.ElectLeadersResponse:
        req = admin_pb2.ElectLeadersRequest(
            election_type=election_type, partitions=_partitions(partitions), timeout_ms=timeout_ms
        )
        return await self.call("ElectLeaders", req, timeout_ms)

    async def get_operation(self, request_id: str) -> admin_pb2.GetOperationResponse:
        return await self.call("GetOperation", admin_pb2.GetOperationRequest(request_id=request_id))

    async def wait_operation(
        self, request_id: str, timeout: float, interval: float = 0.2
    ) -> admin_pb2.GetOperationResponse:
        """Poll GetOperation until the operation completes or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            op = await self.get_operation(request_id)
            if op.completed or time.monotonic() >= deadline:
                return op
            await asyncio.sleep(interval)


class SyncAdminClient:
    """Every AdminClient method, run to completion on a private event loop.

    ``SyncAdminClient(addr).describe_cluster()`` blocks and returns what the async method returns.
    """

    def __init__(
        self, address: str | None = None, *, tls: TlsConfig | None = None, timeout: float = 30.0
    ) -> None:
        self._loop = asyncio.new_event_loop()

        async def make() -> AdminClient:
            return AdminClient(address, tls=tls, timeout=timeout)

        self._client = self._loop.run_until_complete(make())
        self.address = self._client.address

    def run(self, coro: Any) -> Any:
        """Run any coroutine (e.g. one using ``self.aio``) on this client's loop."""
        return self._loop.run_until_complete(coro)

    @property
    def aio(self) -> AdminClient:
        return self._client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not asyncio.iscoroutinefunction(method):
            return method

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(method(*args, **kwargs))

        return blocking

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._client.close())
            self._loop.close()

    def __enter__(self) -> SyncAdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
