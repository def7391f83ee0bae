"""GroupService calls from the SDK: find a group's coordinator and follow it when it moves.

A group's calls go to its coordinator, the leader of the group's ``__consumer_offsets``
partition, found with ``FindCoordinator`` on any broker. COORDINATOR_NOT_AVAILABLE (the topic
is being created, the partition has no leader), NOT_COORDINATOR (leadership moved) and
COORDINATOR_LOAD_IN_PROGRESS (the new coordinator is replaying the log), and an unreachable
coordinator, are retried against a freshly found coordinator until the retry time is spent.
Every other failure is raised as the ``LeaseholdError`` the error model gives it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import grpc

from leasehold.client.errors import error_from_code, error_from_rpc
from leasehold.client.metadata import ClusterMetadata
from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import LeaseholdError, UnavailableError
from leasehold.group.v1 import group_pb2 as g
from leasehold.group.v1 import group_pb2_grpc

log = logging.getLogger(__name__)

TP = tuple[str, int]
RETRY_CODES = frozenset(
    {
        c.ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
        c.ERROR_CODE_NOT_COORDINATOR,
        c.ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS,
    }
)


@dataclass(frozen=True)
class Committed:
    """A group's committed position of one partition; offset -1 when none."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1


def assignment_pb(partitions: Iterable[TP]) -> g.Assignment:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return g.Assignment(
        topic_partitions=[g.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
    )


def partitions_of(assignment: g.Assignment) -> frozenset[TP]:
    return frozenset((t.topic, p) for t in assignment.topic_partitions for p in t.partitions)


class GroupClient:
    """GroupService calls, each sent to the group's current coordinator."""

    def __init__(
        self,
        metadata: ClusterMetadata,
        *,
        request_timeout_ms: int = 30_000,
        retry_timeout_ms: int = 60_000,
        retry_backoff_ms: int = 100,
    ) -> None:
        self.metadata = metadata
        self.timeout = request_timeout_ms / 1000.0
        self.retry_timeout = retry_timeout_ms / 1000.0
        self.backoff = retry_backoff_ms / 1000.0
        self._coordinators: dict[str, str] = {}  # group id -> coordinator address

    def coordinator_address(self, group_id: str) -> str | None:
        """Where the last call of ``group_id`` went (None before any)."""
        return self._coordinators.get(group_id)

    def _stub(self, address: str) -> group_pb2_grpc.GroupServiceStub:
        return group_pb2_grpc.GroupServiceStub(self.metadata.channel_for(address))

    async def brokers(self) -> list[str]:
        """Addresses of every known broker (learning them first if none is known)."""
        if not self.metadata.endpoints:
            await self.metadata.refresh([])
        found = list(dict.fromkeys([*self.metadata.endpoints.values(), *self.metadata.bootstrap]))
        if not found:
            raise UnavailableError(c.ERROR_CODE_BROKER_NOT_AVAILABLE, "No broker is known.")
        return found

    async def _find(self, group_id: str) -> str:
        """One FindCoordinator round: the coordinator's address, or a retriable error."""
        last: LeaseholdError | None = None
        for address in await self.brokers():
            try:
                resp = await self._stub(address).FindCoordinator(
                    g.FindCoordinatorRequest(group_ids=[group_id]), timeout=self.timeout
                )
            except grpc.aio.AioRpcError as e:
                last = error_from_rpc(e, address)
                if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    continue
                raise last from None
            (answer,) = resp.coordinators
            if answer.error_code != c.ERROR_CODE_NONE:
                raise error_from_code(answer.error_code, answer.error_message)
            return f"{answer.host}:{answer.port}"
        assert last is not None
        raise last

    async def call(self, group_id: str, method: str, request):
        """``method`` on the group's coordinator, following it while it moves."""
        deadline = time.monotonic() + self.retry_timeout
        while True:
            address = self._coordinators.get(group_id)
            try:
                if address is None:
                    address = self._coordinators[group_id] = await self._find(group_id)
                rpc = getattr(self._stub(address), method)
                try:
                    return await rpc(request, timeout=self.timeout)
                except grpc.aio.AioRpcError as e:
                    raise error_from_rpc(e, address) from None
            except LeaseholdError as e:
                unreachable = e.grpc_status in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
                if e.code not in RETRY_CODES and not unreachable:
                    raise
                self._coordinators.pop(group_id, None)
                if time.monotonic() + self.backoff > deadline:
                    raise
                log.debug("%s of group %s: %s; finding the coordinator again", method, group_id, e)
                await asyncio.sleep(self.backoff)
                with_brokers = unreachable and e.code not in RETRY_CODES
                if with_brokers:
                    await self._refresh_brokers()

    async def _refresh_brokers(self) -> None:
        try:
            await self.metadata.refresh([])
        except LeaseholdError as e:
            log.debug("broker refresh failed: %s", e)

    # --- the calls ------------------------------------------------------------------------------

    async def heartbeat(
        self, request: g.ConsumerGroupHeartbeatRequest
    ) -> g.ConsumerGroupHeartbeatResponse:
        return await self.call(request.group_id, "ConsumerGroupHeartbeat", request)

    async def commit(
        self,
        group_id: str,
        offsets: Mapping[TP, Committed],
        member_id: str = "",
        member_epoch: int = -1,
    ) -> None:
        """Commit ``offsets``; the first partition's failure is raised (none is partial)."""
        topics: dict[str, list[g.OffsetCommitPartition]] = {}
        for (topic, partition), o in sorted(offsets.items()):
            p = g.OffsetCommitPartition(
                partition=partition, committed_offset=o.offset, committed_metadata=o.metadata
            )
            if o.leader_epoch >= 0:
                p.committed_leader_epoch = o.leader_epoch
            topics.setdefault(topic, []).append(p)
        request = g.OffsetCommitRequest(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            topics=[g.OffsetCommitTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        resp = await self.call(group_id, "OffsetCommit", request)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code != c.ERROR_CODE_NONE:
                    raise error_from_code(
                        p.error_code, f"{t.topic}-{p.partition}: {p.error_message}"
                    )

    async def committed(
        self, group_id: str, partitions: Iterable[TP] | None = None
    ) -> dict[TP, Committed]:
        """The group's committed offsets of ``partitions`` (None: all it has)."""
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions or ()):
            topics.setdefault(topic, []).append(partition)
        request = g.OffsetFetchRequest(
            group_id=group_id,
            topics=[g.OffsetFetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        if partitions is not None and not topics:
            return {}
        resp = await self.call(group_id, "OffsetFetch", request)
        out: dict[TP, Committed] = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code != c.ERROR_CODE_NONE:
                    raise error_from_code(p.error_code, p.error_message)
                out[(t.topic, p.partition)] = Committed(
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                    p.commit_timestamp_ms,
                )
        return out

    async def list_groups(self) -> list[g.ListedGroup]:
        """Every group of every broker (each lists the groups it coordinates)."""
        await self._refresh_brokers()
        found: dict[str, g.ListedGroup] = {}
        for address in await self.brokers():
            try:
                resp = await self._stub(address).ListGroups(
                    g.ListGroupsRequest(), timeout=self.timeout
                )
            except grpc.aio.AioRpcError as e:
                raise error_from_rpc(e, address) from None
            for listed in resp.groups:
                found.setdefault(listed.group_id, listed)
        return [found[k] for k in sorted(found)]

    async def _per_group(self, group_id: str, method: str, request, field: str):
        """A call answering one item per group: a retriable item error is retried as a failed
        call is (the coordinator moved between finding it and asking it)."""
        deadline = time.monotonic() + self.retry_timeout
        while True:
            (item,) = getattr(await self.call(group_id, method, request), field)
            if item.error_code not in RETRY_CODES or time.monotonic() > deadline:
                return item
            self._coordinators.pop(group_id, None)
            await asyncio.sleep(self.backoff)

    async def describe(self, group_id: str) -> g.DescribedGroup:
        """The group as its coordinator sees it (error_code GROUP_ID_NOT_FOUND if unknown)."""
        request = g.DescribeGroupsRequest(group_ids=[group_id])
        return await self._per_group(group_id, "DescribeGroups", request, "groups")

    async def delete(self, group_id: str) -> None:
        request = g.DeleteGroupsRequest(group_ids=[group_id])
        result = await self._per_group(group_id, "DeleteGroups", request, "results")
        if result.error_code != c.ERROR_CODE_NONE:
            raise error_from_code(result.error_code, result.error_message)
