"""Where partitions are led and how to reach the brokers: the client's metadata cache.

Brokers are discovered through the admin service (DescribeCluster) or from bootstrap broker
addresses; leaders come from a broker's ``Metadata`` (its UpdateMetadata cache) and, when an admin
address is known, also from the admin service's view of etcd. Of two answers for one partition
the one with the higher leader epoch wins, so a broker whose cache lags never sends a client back
to a deposed leader. Producers and consumers refresh after NOT_LEADER_OR_FOLLOWER and similar
errors, and take the leader hints that Produce/Fetch responses carry.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.channels import channel
from leasehold.client.admin import AdminClient
from leasehold.client.errors import error_from_rpc
from leasehold.client_config import client_tls
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.errors import LeaseholdError, NotFoundError, UnavailableError

log = logging.getLogger(__name__)

NO_LEADER = -1


@dataclass(frozen=True)
class PartitionLeader:
    leader: int
    leader_epoch: int


class ClusterMetadata:
    """Broker endpoints, partition leaders, and one channel per broker."""

    def __init__(
        self,
        admin: AdminClient | str | None = None,
        *,
        bootstrap: Sequence[str] = (),
        tls: TlsConfig | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._own_admin = isinstance(admin, str) or (admin is None and not bootstrap)
        if isinstance(admin, str) or (admin is None and not bootstrap):
            admin = AdminClient(admin, tls=tls)
        self.admin: AdminClient | None = admin
        self.bootstrap = tuple(bootstrap)
        # The admin client's TLS (given or found: ``leasehold.client_config``) for the brokers too.
        self.tls = admin.tls if admin is not None and tls is None else client_tls(None, tls)
        self.timeout = timeout
        self.endpoints: dict[int, str] = {}
        self.topics: dict[str, dict[int, PartitionLeader]] = {}
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._lock = asyncio.Lock()

    def channel_for(self, address: str) -> grpc.aio.Channel:
        """The one channel to a broker's address (shared by every service the broker serves)."""
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = channel(address, self.tls)
        return ch

    def stub_for(self, address: str) -> broker_pb2_grpc.BrokerServiceStub:
        return broker_pb2_grpc.BrokerServiceStub(self.channel_for(address))

    def stub(self, broker_id: int) -> broker_pb2_grpc.BrokerServiceStub:
        address = self.endpoints.get(broker_id)
        if address is None:
            raise UnavailableError(
                common_pb2.ERROR_CODE_BROKER_NOT_AVAILABLE, f"Broker {broker_id} is not known."
            )
        return self.stub_for(address)

    def leader(self, topic: str, partition: int) -> PartitionLeader | None:
        found = self.topics.get(topic, {}).get(partition)
        return found if found is not None and found.leader != NO_LEADER else None

    def partition_count(self, topic: str) -> int | None:
        parts = self.topics.get(topic)
        return len(parts) if parts else None

    def note_leader(
        self,
        topic: str,
        partition: int,
        hint: common_pb2.LeaderIdAndEpoch,
        endpoints: Iterable[common_pb2.BrokerEndpoint] = (),
    ) -> None:
        """Take a leader hint from a Produce/Fetch response if it is newer than what we know."""
        for e in endpoints:
            self.endpoints[e.broker_id] = f"{e.host}:{e.port}"
        known = self.topics.get(topic, {}).get(partition)
        if hint.leader_id >= 0 and (known is None or hint.leader_epoch > known.leader_epoch):
            self.topics.setdefault(topic, {})[partition] = PartitionLeader(
                hint.leader_id, hint.leader_epoch
            )

    def _merge(self, topic: str, partition: int, found: PartitionLeader) -> None:
        parts = self.topics.setdefault(topic, {})
        known = parts.get(partition)
        if known is None or known.leader == NO_LEADER or found.leader_epoch >= known.leader_epoch:
            if found.leader != NO_LEADER or known is None:
                parts[partition] = found

    async def _from_admin(self, topics: Sequence[str]) -> None:
        assert self.admin is not None
        cluster = await self.admin.describe_cluster()
        for b in cluster.brokers:
            self.endpoints[b.broker_id] = f"{b.host}:{b.port}"
        for name in topics:
            try:
                (desc,) = await self.admin.describe_topics([name])
            except NotFoundError:
                continue
            for p in desc.partitions:
                self._merge(name, p.partition, PartitionLeader(p.leader, p.leader_epoch))

    async def _from_brokers(self, topics: Sequence[str]) -> bool:
        addresses = list(dict.fromkeys([*self.endpoints.values(), *self.bootstrap]))
        random.shuffle(addresses)
        request = broker_pb2.MetadataRequest(topics=list(topics))
        for address in addresses:
            try:
                resp = await self.stub_for(address).Metadata(request, timeout=self.timeout)
            except grpc.aio.AioRpcError as e:
                log.debug("metadata from %s failed: %s", address, error_from_rpc(e))
                continue
            for b in resp.brokers:
                self.endpoints[b.broker_id] = f"{b.host}:{b.port}"
            for t in resp.topics:
                if t.error_code != common_pb2.ERROR_CODE_NONE:
                    continue
                for p in t.partitions:
                    self._merge(t.name, p.partition, PartitionLeader(p.leader, p.leader_epoch))
            return True
        return False

    async def refresh(self, topics: Iterable[str]) -> None:
        """Re-learn brokers and the leaders of ``topics`` from every source available."""
        names = sorted(set(topics))
        async with self._lock:
            errors: list[LeaseholdError] = []
            if self.admin is not None:
                try:
                    await self._from_admin(names)
                except LeaseholdError as e:
                    errors.append(e)
            brokers_answered = await self._from_brokers(names)
            if not brokers_answered and errors:
                raise errors[0]

    async def partitions(self, topic: str) -> int:
        """The topic's partition count, refreshing once if unknown; NOT_FOUND if it has none."""
        count = self.partition_count(topic)
        if count is None:
            await self.refresh([topic])
            count = self.partition_count(topic)
        if count is None:
            raise NotFoundError(
                common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
                f"Topic '{topic}' is not known to the cluster.",
            )
        return count

    async def close(self) -> None:
        for ch in self._channels.values():
            await ch.close()
        self._channels.clear()
        if self._own_admin and self.admin is not None:
            await self.admin.close()
