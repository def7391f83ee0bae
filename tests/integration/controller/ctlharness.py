"""Harness for controller tests against a real etcd: in-process controllers with their real gRPC
server, and recording broker stand-ins (a real gRPC BrokerControlService per broker, registered
in etcd with a lease exactly as a broker agent registers).

A stand-in keeps the broker side of contract 7 that matters here: it rejects a request whose
controller epoch is older than the highest it has seen (STALE_CONTROLLER_EPOCH) and records every
call, in one global order across brokers, with whether it was applied. It keeps the agent's real
metadata cache, so a new controller's digest-only UpdateMetadata is taken or refused
(METADATA_DIGEST_MISMATCH) as an agent would.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc

from leasehold.broker.v1 import control_pb2, control_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.config import CommonConfig
from leasehold.controller.v1 import controller_pb2_grpc
from leasehold.etcd import EtcdClient, Keyspace, Session
from leasehold.etcd.client import cmp_create_revision, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.server import Service, ServiceRunner
from services.broker_agent import control_convert
from services.broker_agent.metadata_cache import MetadataCache
from services.controller.app import ControllerApp
from services.controller.codec import decode_partition_state
from services.controller.config import ControllerConfig
from services.controller.servicer import SERVICE_NAME

STALE = common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH


@dataclass
class Call:
    seq: int
    broker_id: int
    kind: str
    request: object
    applied: bool


class FakeBroker(control_pb2_grpc.BrokerControlServiceServicer):
    def __init__(self, broker_id: int, seq: itertools.count, log: list[Call]) -> None:
        self.broker_id = broker_id
        self._seq = seq
        self._log = log
        self.calls: list[Call] = []
        self.max_epoch = 0
        self.failing_topics: set[str] = set()  # StopReplica(delete) fails for these
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self.session: Session | None = None
        self.epoch = -1
        self.metadata = MetadataCache()

    def _record(self, kind: str, request, *, refused: bool = False) -> bool:
        applied = request.controller_epoch >= self.max_epoch and not refused
        if applied:
            self.max_epoch = request.controller_epoch
        call = Call(next(self._seq), self.broker_id, kind, request, applied)
        self.calls.append(call)
        self._log.append(call)
        return applied

    async def LeaderAndIsr(self, request, context):
        if not self._record("LeaderAndIsr", request):
            return control_pb2.LeaderAndIsrResponse(error_code=STALE)
        return control_pb2.LeaderAndIsrResponse()

    async def UpdateMetadata(self, request, context):
        update = control_convert.update_metadata_from_pb(request)
        current = request.controller_epoch >= self.max_epoch
        base = update.live_brokers_base
        if current and (
            (update.metadata_digest and update.metadata_digest != self.metadata.digest())
            or (base is not None and base != self.metadata.brokers_digest())
        ):
            self._record("UpdateMetadata", request, refused=True)
            return control_pb2.UpdateMetadataResponse(
                error_code=common_pb2.ERROR_CODE_METADATA_DIGEST_MISMATCH
            )
        if not self._record("UpdateMetadata", request):
            return control_pb2.UpdateMetadataResponse(error_code=STALE)
        self.metadata.update(update)
        return control_pb2.UpdateMetadataResponse()

    async def StopReplica(self, request, context):
        if not self._record("StopReplica", request):
            return control_pb2.StopReplicaResponse(error_code=STALE)
        errors = [
            common_pb2.PartitionError(
                topic=s.topic,
                partition=s.partition,
                error_code=common_pb2.ERROR_CODE_KAFKA_STORAGE_ERROR,
            )
            for s in request.partition_states
            if s.delete_partition and s.topic in self.failing_topics
        ]
        return control_pb2.StopReplicaResponse(partition_errors=errors)

    async def start(self) -> None:
        self.server = grpc.aio.server()
        control_pb2_grpc.add_BrokerControlServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()

    async def register(self, etcd: EtcdClient, ks: Keyspace, ttl: int = 2) -> int:
        self.session = await Session(etcd, ttl).start()
        reg = metadata_pb2.BrokerRegistration(
            broker_id=self.broker_id,
            host="127.0.0.1",
            port=self.port,
            incarnation_id=uuid.uuid4().hex,
        )
        key = ks.broker(self.broker_id)
        res = await etcd.txn(
            [cmp_create_revision(key, "=", 0)],
            [op_put(key, reg.SerializeToString(), lease=self.session.lease_id)],
        )
        assert res.succeeded, f"broker {self.broker_id} already registered"
        self.epoch = res.revision
        return self.epoch

    async def deregister(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    async def stop(self) -> None:
        await self.deregister()
        if self.server is not None:
            await self.server.stop(0)
            self.server = None

    def of_kind(self, kind: str, *, applied_only: bool = True) -> list[Call]:
        return [c for c in self.calls if c.kind == kind and (c.applied or not applied_only)]


class ControllerNode:
    """One controller in this process: its real gRPC server and ``ControllerApp``."""

    def __init__(self, endpoint: str, ks: Keyspace, controller_id: int, **overrides) -> None:
        common = CommonConfig(
            etcd_endpoints=(endpoint,), cluster_id=ks.cluster_id, port=0, grace_seconds=0.2
        )
        settings = dict(
            session_ttl=2,
            rebalance_initial_delay_s=3600.0,
            request_timeout_s=3.0,
            deletion_retry_s=0.5,
        )
        settings.update(overrides)
        self.config = ControllerConfig(common=common, controller_id=controller_id, **settings)
        self.app = ControllerApp(self.config)
        self.runner = ServiceRunner(
            common,
            Service(
                names=[SERVICE_NAME],
                register=lambda s: controller_pb2_grpc.add_ControllerServiceServicer_to_server(
                    self.app.servicer, s
                ),
            ),
        )
        self.stopped = False

    @property
    def controller(self):
        return self.app.controller

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.runner.port}"

    async def start(self) -> ControllerNode:
        await self.runner.start()
        await self.app.start(self.runner.port)
        return self

    async def stop(self) -> None:
        """Graceful: resign, then stop."""
        if self.stopped:
            return
        self.stopped = True
        await self.app.stop()
        await self.runner.stop()

    async def crash(self) -> None:
        """Like SIGKILL: no resignation; the lease is left to expire (TTL)."""
        if self.stopped:
            return
        self.stopped = True
        app = self.app
        tasks = [app.election._task, app._watch_task, app.events._task]
        for t in tasks:
            if t is not None:
                t.cancel()
        for t in tasks:
            if t is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
        if app.election.session is not None:
            await app.election.session.close(revoke=False)
        app.controller.flows.stop()
        if app.controller.channels is not None:
            await app.controller.channels.close()
        await self.runner.stop()
        await app.client.close()


@dataclass
class Cluster:
    etcd: EtcdClient
    ks: Keyspace
    endpoint: str
    brokers: dict[int, FakeBroker] = field(default_factory=dict)
    controllers: list[ControllerNode] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    seq: itertools.count = field(default_factory=itertools.count)

    async def add_broker(self, broker_id: int, *, register: bool = True) -> FakeBroker:
        b = FakeBroker(broker_id, self.seq, self.calls)
        await b.start()
        if register:
            await b.register(self.etcd, self.ks)
        self.brokers[broker_id] = b
        return b

    async def add_controller(self, controller_id: int = 1, **overrides) -> ControllerNode:
        node = ControllerNode(self.endpoint, self.ks, controller_id, **overrides)
        self.controllers.append(node)
        return await node.start()

    async def active(self, timeout: float = 15.0) -> ControllerNode:
        """The controller that has finished failover."""
        found: list[ControllerNode] = []

        def check() -> bool:
            found[:] = [n for n in self.controllers if not n.stopped and n.controller.active]
            return len(found) == 1

        await eventually(check, timeout, "one active controller")
        return found[0]

    async def create_topic(self, name: str, assignment: dict[int, list[int]]) -> str:
        topic_id = uuid.uuid4().hex
        value = metadata_pb2.TopicAssignment(
            topic_id=topic_id,
            partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in assignment.items()},
            created_at_ms=int(time.time() * 1000),
        )
        await self.etcd.put(self.ks.topic(name), value.SerializeToString())
        return topic_id

    async def state(self, topic: str, partition: int):
        kv = await self.etcd.get(self.ks.partition_state(topic, partition))
        return None if kv is None else decode_partition_state(kv.value, kv.mod_revision)

    async def replicas(self, topic: str) -> dict[int, list[int]]:
        kv = await self.etcd.get(self.ks.topic(topic))
        if kv is None:
            return {}
        pb = metadata_pb2.TopicAssignment.FromString(kv.value)
        return {p: list(rl.replicas) for p, rl in pb.partitions.items()}

    async def wait_states(
        self, topic: str, partitions: int, pred: Callable[[object], bool], timeout: float = 15.0
    ) -> dict[int, object]:
        out: dict[int, object] = {}

        async def check() -> bool:
            for p in range(partitions):
                out[p] = await self.state(topic, p)
            return all(s is not None and pred(s) for s in out.values())

        await eventually(check, timeout, f"partition states of {topic}")
        return out

    async def result(self, request_id: str):
        kv = await self.etcd.get(self.ks.result(request_id))
        return None if kv is None else metadata_pb2.AdminResult.FromString(kv.value)

    async def wait_result(self, request_id: str, timeout: float = 15.0):
        holder: list[object] = []

        async def check() -> bool:
            r = await self.result(request_id)
            holder[:] = [r]
            return r is not None

        await eventually(check, timeout, f"admin result {request_id}")
        return holder[0]


async def eventually(
    cond: Callable[[], bool | Awaitable[bool]], timeout: float = 15.0, what: str = "condition"
) -> None:
    """Poll ``cond`` until true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def alter_partition(
    node: ControllerNode,
    broker: FakeBroker,
    topic: str,
    partition: int,
    isr: list[int],
    *,
    leader_epoch: int,
    partition_epoch: int,
    isr_epochs: dict[int, int] | None = None,
    broker_epoch: int | None = None,
    recovering: bool = False,
):
    """Call the controller's AlterPartition as ``broker`` (the partition leader) would."""
    from leasehold.controller.v1 import controller_pb2

    epochs = isr_epochs or {}
    req = controller_pb2.AlterPartitionRequest(
        broker_id=broker.broker_id,
        broker_epoch=broker.epoch if broker_epoch is None else broker_epoch,
        topics=[
            controller_pb2.AlterPartitionTopic(
                topic=topic,
                partitions=[
                    controller_pb2.AlterPartitionPartition(
                        partition=partition,
                        leader_epoch=leader_epoch,
                        partition_epoch=partition_epoch,
                        leader_recovery_state=(
                            common_pb2.LEADER_RECOVERY_STATE_RECOVERING
                            if recovering
                            else common_pb2.LEADER_RECOVERY_STATE_RECOVERED
                        ),
                        new_isr_with_epochs=[
                            controller_pb2.BrokerState(broker_id=b, broker_epoch=epochs.get(b, -1))
                            for b in isr
                        ],
                    )
                ],
            )
        ],
    )
    async with grpc.aio.insecure_channel(node.address) as ch:
        return await controller_pb2_grpc.ControllerServiceStub(ch).AlterPartition(req)


async def catch_up(
    cluster: Cluster, node: ControllerNode, topic: str, partition: int, isr: list[int]
):
    """Act as the partition's leader: report ``isr`` with the current epochs."""
    s = await cluster.state(topic, partition)
    lai = s.leader_and_isr
    return await alter_partition(
        node,
        cluster.brokers[lai.leader],
        topic,
        partition,
        isr,
        leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch,
    )
