"""One simulated broker: its own gRPC server (BrokerControlService only), etcd session and
registration, control fence and metadata cache, as the real agent wires them (``app``). Its
session's lease is its own; what renews it is the process's (``RenewalProcess``), shared by
every broker there, as are the decoding of each UpdateMetadata body and the topic states its
metadata cache builds from it (``sharing``).

What it leaves out is the data plane: no logs, no fetchers, no BrokerService, no ISR proposals.
It records what the scale benchmark reads (``Observation``): when each controller epoch was
first accepted, when the last UpdateMetadata applied, and the bytes of every UpdateMetadata.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import grpc

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.session import LeaseRenewer
from leasehold.grpc_errors import ErrorInterceptor
from leasehold.peer_auth import SERVICE_ROLES
from leasehold.request_bounds import Counter, RequestBoundsInterceptor
from leasehold.server import server_options
from services.broker_agent.bounds import counters
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.control_servicer import BrokerControlServicer, control_handlers
from services.broker_agent.controller_client import ControllerClient
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import Code, Endpoint, TopicPartition
from services.broker_agent.registration import Registration
from services.broker_agent.shutdown import controlled_shutdown
from services.broker_agent.simulation.replicas import SimulatedReplicas
from services.broker_agent.simulation.sharing import ByDigest, Sharing


@dataclass(frozen=True)
class SimSettings:
    """The real agent's defaults for what a simulated broker does (``BrokerConfig``)."""

    session_ttl: int
    max_receive_bytes: int
    max_partitions_per_request: int
    max_control_partitions_per_request: int
    controlled_shutdown_timeout_ms: int
    controlled_shutdown_retry_backoff_ms: int
    controller_retry_backoff_ms: int


@dataclass
class Observation:
    """What the benchmark reads of one simulated broker (wall-clock seconds)."""

    epoch_seen_at: dict[int, float] = field(default_factory=dict)
    last_update_metadata_at: float = 0.0
    update_metadata_bytes: int = 0
    update_metadata_requests: int = 0
    digest_mismatches: int = 0
    leader_and_isr_requests: int = 0
    leader_and_isr_states: int = 0
    last_leader_and_isr_at: float = 0.0
    stop_replica_requests: int = 0
    # A watch (``SimulatedBroker.watch``): how many of its partitions this broker's cache still
    # shows led by its leader, counted again as UpdateMetadata arrives, and the instant none was
    # left (0.0: not yet). Read by a poll, the cache says when the benchmark asked; this says
    # when it happened, however late a busy process answers the poll.
    watch: Watch | None = None
    still_led: int = 0
    cleared_at: float = 0.0
    # When the request that cleared the watch reached this broker's servicer (its control
    # stream's envelope read by the process's event loop, or its unary call begun):
    # ``cleared_at`` minus this is decoding it (or waiting for the process's shared decoding)
    # and applying it; before it come the controller, the transport and the wait for the
    # process's loop to read it.
    cleared_arrived_at: float = 0.0


class ObservedControlServicer(BrokerControlServicer):
    """The real control servicer, with each call's outcome noted for the benchmark."""

    def __init__(
        self,
        replicas: SimulatedReplicas,
        seen: Observation,
        sharing: Sharing | None = None,
        bounds: Mapping[str, Counter] | None = None,
    ) -> None:
        if sharing is None:
            super().__init__(replicas, bounds=bounds)
            self._received_bytes = lambda request: request.ByteSize()
        else:
            super().__init__(
                replicas,
                sharing.heap,
                decode_update_metadata=sharing.decodes.update_metadata,
                bounds=bounds,
            )
            self._received_bytes = sharing.decodes.received_bytes
        self._state = replicas
        self._seen = seen
        self._arrived: float | None = None  # the control stream's request being handled

    async def LeaderAndIsr(self, request, context):
        response = await super().LeaderAndIsr(request, context)
        self._seen.leader_and_isr_requests += 1
        self._seen.leader_and_isr_states += len(request.partition_states)
        self._seen.last_leader_and_isr_at = time.time()
        return response

    async def StopReplica(self, request, context):
        response = await super().StopReplica(request, context)
        self._seen.stop_replica_requests += 1
        return response

    async def _streamed(self, envelope, deserialize, context):
        self._arrived = time.time()
        try:
            return await super()._streamed(envelope, deserialize, context)
        finally:
            self._arrived = None

    async def UpdateMetadata(self, request, context):
        arrived = self._arrived if self._arrived is not None else time.time()
        size = self._received_bytes(request)
        response = await super().UpdateMetadata(request, context)
        seen = self._seen
        seen.update_metadata_bytes += size
        seen.update_metadata_requests += 1
        if response.error_code == Code.METADATA_DIGEST_MISMATCH:
            seen.digest_mismatches += 1
        elif response.error_code == Code.NONE:
            now = time.time()
            seen.last_update_metadata_at = now
            seen.epoch_seen_at.setdefault(request.controller_epoch, now)
            prune_watch(seen, self._state.metadata, now, arrived)
        return response


def control_server(
    replicas: SimulatedReplicas,
    seen: Observation,
    settings: SimSettings,
    sharing: Sharing | None = None,
) -> grpc.aio.Server:
    """A simulated broker's gRPC server (no port yet): BrokerControlService alone, behind the
    agent's request bounds and error mapping, with the agent's message size limit."""
    s = settings
    bounds = counters(s.max_partitions_per_request, s.max_control_partitions_per_request)
    server = grpc.aio.server(
        interceptors=[
            RequestBoundsInterceptor(bounds),
            ErrorInterceptor(unchecked_services=SERVICE_ROLES),
        ],
        options=server_options(s.max_receive_bytes),
    )
    servicer = ObservedControlServicer(replicas, seen, sharing, bounds)
    if sharing is None:
        server.add_generic_rpc_handlers((control_handlers(servicer),))
    else:
        # UpdateMetadata's deserializer is the process's, which parses only the header of a
        # body it decoded already (``sharing.SharedDecodes.deserialize``).
        handlers = control_handlers(servicer, sharing.decodes.deserialize)
        server.add_generic_rpc_handlers((handlers,))
    return server


class Watch:
    """A failed broker's partitions, watched by every broker of a process until its cache
    shows none of them led by that broker (``SimulatedBroker.watch``). Counted once per cache
    digest (``ByDigest``): counting them for each broker after each UpdateMetadata was most of
    a simulation process's CPU in a broker failure at a million partitions."""

    def __init__(self, leader: int, partitions: Iterable[TopicPartition]) -> None:
        self.leader = leader
        self.partitions = tuple(partitions)
        self.still_led = ByDigest(self._count)

    def _count(self, cache: MetadataCache) -> int:
        leader, n = self.leader, 0
        for tp in self.partitions:
            state = cache.partition(tp)
            if state is not None and state.leader == leader:
                n += 1
        return n


def prune_watch(
    seen: Observation, cache: MetadataCache, now: float, arrived: float | None = None
) -> None:
    """Count the watched partitions ``cache`` still shows led by the watched leader; the
    first count of none sets ``cleared_at`` to ``now`` and ``cleared_arrived_at`` to when the
    request that did it arrived (``arrived``; ``now`` without a request)."""
    if seen.watch is None or not seen.still_led:
        return
    seen.still_led = seen.watch.still_led(cache)
    if not seen.still_led:
        seen.cleared_at = now
        seen.cleared_arrived_at = now if arrived is None else arrived


def start_watch(seen: Observation, watch: Watch, cache: MetadataCache, now: float) -> None:
    """``seen`` counts ``watch``'s partitions from now on, none cleared yet, as ``cache``
    shows them (``prune_watch``)."""
    seen.watch = watch
    seen.still_led = len(watch.partitions)
    seen.cleared_at = 0.0
    seen.cleared_arrived_at = 0.0
    prune_watch(seen, cache, now)


class SimulatedBroker:
    def __init__(
        self,
        broker_id: int,
        host: str,
        etcd: EtcdClient,
        keyspace: Keyspace,
        settings: SimSettings,
        confirm_in_etcd: bool,
        renewer: LeaseRenewer | None = None,
        sharing: Sharing | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.renewer = renewer
        self.sharing = sharing
        self.host = host
        self.etcd = etcd
        self.keyspace = keyspace
        self.settings = settings
        self.metadata = MetadataCache(sharing.updates if sharing is not None else None)
        self.replicas = SimulatedReplicas(broker_id, self.metadata)
        # Every request checked against etcd's controller epoch; leader changes and deletions
        # also confirmed in etcd when asked (what a broker without TLS does: ``control_fence``).
        self.fence = ControlFence(etcd, keyspace, broker_id, confirm_in_etcd=confirm_in_etcd)
        self.replicas.fence = self.fence
        self.seen = Observation()
        # How many partitions the cache holds, for the figures: the process's count per digest.
        self._cached = (
            sharing.cached if sharing is not None else ByDigest(MetadataCache.cached_partitions)
        )
        self.server: grpc.aio.Server | None = None
        self.registration: Registration | None = None
        self.port = 0

    async def start(self) -> None:
        """Serve BrokerControlService, then register (the agent's order: serve, then register)."""
        s = self.settings
        server = control_server(self.replicas, self.seen, s, self.sharing)
        self.port = server.add_insecure_port(f"{self.host}:0")
        await server.start()
        self.server = server
        endpoint = Endpoint(self.broker_id, self.host, self.port, "")
        self.registration = Registration(
            self.etcd, self.keyspace, endpoint, s.session_ttl, self._on_epoch, self.renewer
        )
        await self.registration.register()

    def _on_epoch(self, epoch: int) -> None:
        self.replicas.broker_epoch = epoch

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move leadership away, as the agent does on SIGTERM."""
        self.replicas.shutting_down = True
        s = self.settings
        client = ControllerClient(
            self.etcd, self.keyspace, lambda: None, None, s.controller_retry_backoff_ms
        )
        try:
            return await controlled_shutdown(
                client,
                self.broker_id,
                lambda: self.replicas.broker_epoch,
                timeout_s=s.controlled_shutdown_timeout_ms / 1000.0,
                backoff_s=s.controlled_shutdown_retry_backoff_ms / 1000.0,
            )
        finally:
            await client.close()

    async def stop(self) -> None:
        """Revoke the session (the controller sees the broker leave), then stop serving."""
        if self.registration is not None:
            await self.registration.close()
            self.registration = None
        if self.server is not None:
            await self.server.stop(0.5)
            self.server = None

    def watch(self, watch: Watch) -> None:
        """From now on count the watch's partitions whose cached leader is its leader (a
        failed broker's partitions not yet re-led here), and note when none is left."""
        start_watch(self.seen, watch, self.metadata, time.time())

    def stats(self) -> dict:
        """This broker's figures; ``still_led`` and ``cleared_at`` are the watch's
        (``watch``)."""
        seen, cache = self.seen, self.metadata
        prune_watch(seen, cache, time.time())  # the cache only changes by UpdateMetadata
        return {
            "broker_id": self.broker_id,
            "broker_epoch": self.replicas.broker_epoch,
            "controller_epoch": self.replicas.controller_epoch,
            "hosted": len(self.replicas.partitions),
            "leading": self.replicas.leading,
            "cached": self._cached(cache),
            "live_brokers": cache.alive_broker_count(),
            "epoch_seen_at": {str(k): v for k, v in seen.epoch_seen_at.items()},
            "last_update_metadata_at": seen.last_update_metadata_at,
            "update_metadata_bytes": seen.update_metadata_bytes,
            "update_metadata_requests": seen.update_metadata_requests,
            "digest_mismatches": seen.digest_mismatches,
            "leader_and_isr_requests": seen.leader_and_isr_requests,
            "leader_and_isr_states": seen.leader_and_isr_states,
            "last_leader_and_isr_at": seen.last_leader_and_isr_at,
            "stop_replica_requests": seen.stop_replica_requests,
            "still_led": seen.still_led,
            "cleared_at": seen.cleared_at,
            "cleared_arrived_at": seen.cleared_arrived_at,
        }
