"""What a chaos run asks of the cluster between faults: readiness, online partitions, ISR.

All answers come from etcd (the store of record) plus, for "online", the partition leader
itself: a partition counts as online only when its leader is a running broker that answers
ListOffsets for the partition at the leader epoch etcd holds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc, control_pb2, control_pb2_grpc
from leasehold.client import AdminClient
from leasehold.common.v1 import common_pb2
from leasehold.errors import LeaseholdError
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import LocalCluster


@dataclass(frozen=True)
class PartitionView:
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


class ClusterProbe:
    def __init__(self, cluster: LocalCluster, etcd: EtcdClient, topic: str) -> None:
        self.cluster = cluster
        self.etcd = etcd
        self.ks = Keyspace(cluster.spec.cluster_id)
        self.topic = topic

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Every broker registered and a controller has bumped its epoch."""
        deadline = time.monotonic() + timeout_s
        async with AdminClient(self.cluster.admin_address, timeout=5) as admin:
            while True:
                try:
                    d = await admin.describe_cluster()
                    if len(d.brokers) == len(self.cluster.brokers) and d.active_controller.epoch:
                        return
                except LeaseholdError:
                    pass  # admin still starting
                if time.monotonic() > deadline:
                    raise TimeoutError(f"cluster not ready after {timeout_s}s")
                await asyncio.sleep(0.2)

    def running_brokers(self) -> set[int]:
        """Brokers whose process runs. After the schedule every broker process runs again, so
        a running broker that does not register and serve counts against recovery."""
        return {b for b, proc in self.cluster.brokers.items() if proc.alive()}

    async def partitions(self) -> list[PartitionView]:
        topic = await self.etcd.get(self.ks.topic(self.topic))
        assignment = metadata_pb2.TopicAssignment.FromString(topic.value)
        out = []
        for p, replicas in sorted(assignment.partitions.items()):
            kv = await self.etcd.get(self.ks.partition_state(self.topic, p))
            s = metadata_pb2.PartitionState.FromString(kv.value) if kv else None
            out.append(
                PartitionView(
                    p,
                    s.leader if s else -1,
                    s.leader_epoch if s else -1,
                    tuple(s.isr) if s else (),
                    tuple(replicas.replicas),
                )
            )
        return out

    async def _serves(self, view: PartitionView) -> bool:
        address = self.cluster.brokers[view.leader].address
        request = broker_pb2.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=self.topic,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=view.partition,
                            current_leader_epoch=view.leader_epoch,
                            timestamp=-1,
                        )
                    ],
                )
            ],
        )
        async with grpc.aio.insecure_channel(address) as ch:
            try:
                resp = await broker_pb2_grpc.BrokerServiceStub(ch).ListOffsets(request, timeout=2)
            except grpc.aio.AioRpcError:
                return False
        return resp.topics[0].partitions[0].error_code == common_pb2.ERROR_CODE_NONE

    async def offline(self) -> list[str]:
        """Partitions with a running ISR replica whose leader does not serve them (yet)."""
        live = self.running_brokers()
        out = []
        for view in await self.partitions():
            if not set(view.isr) & live:
                continue  # no ISR replica runs: no clean leader possible, exempt
            if view.leader not in live:
                out.append(f"p{view.partition} (leader {view.leader}, isr {list(view.isr)})")
            elif not await self._serves(view):
                out.append(f"p{view.partition} (leader {view.leader} not serving)")
        return out

    async def wait_online(self, bound_s: float) -> tuple[float | None, list[str]]:
        """Seconds until nothing is offline (None if not within ``bound_s``), and what was
        offline at the last look."""
        start = time.monotonic()
        offline: list[str] = ["not checked"]
        while time.monotonic() - start <= bound_s:
            try:
                offline = await self.offline()
            except Exception as e:  # etcd reconnecting; counts as "not yet"
                offline = [f"probe failed: {e!r}"]
            if not offline:
                return time.monotonic() - start, []
            await asyncio.sleep(0.25)
        return None, offline

    async def wait_in_sync(self, bound_s: float) -> tuple[float | None, list[str]]:
        """Seconds until every partition has a leader and its full replica set in the ISR."""
        start = time.monotonic()
        lagging: list[str] = []
        while time.monotonic() - start <= bound_s:
            views = await self.partitions()
            lagging = [
                f"p{v.partition} (leader {v.leader}, isr {list(v.isr)} of {list(v.replicas)})"
                for v in views
                if v.leader < 0 or set(v.isr) != set(v.replicas)
            ]
            if not lagging:
                return time.monotonic() - start, []
            await asyncio.sleep(0.25)
        return None, lagging

    async def zombie_probe(self, deposed: int) -> tuple[list[str], list[int]]:
        """Send every broker the requests a controller one epoch behind *that broker's* known
        controller epoch might still send: an UpdateMetadata naming no live brokers and a
        LeaderAndIsr making the broker leader of partition 0 at an absurd leader epoch. Each
        must be rejected as a whole with STALE_CONTROLLER_EPOCH and leave the broker's Metadata
        answer unchanged. Returns the problems and the epoch each broker knew."""
        stale = common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH
        problems: list[str] = []
        known: list[int] = []
        for broker, proc in sorted(self.cluster.brokers.items()):
            async with grpc.aio.insecure_channel(proc.address) as ch:
                client = broker_pb2_grpc.BrokerServiceStub(ch)
                control = control_pb2_grpc.BrokerControlServiceStub(ch)
                ask = broker_pb2.MetadataRequest(topics=[self.topic])
                before = await client.Metadata(ask, timeout=5)
                epoch = before.controller_epoch - 1
                known.append(before.controller_epoch)
                um = await control.UpdateMetadata(
                    control_pb2.UpdateMetadataRequest(
                        controller_id=deposed, controller_epoch=epoch, broker_epoch=-1
                    ),
                    timeout=5,
                )
                state = control_pb2.LeaderAndIsrPartitionState(
                    topic=self.topic,
                    partition=0,
                    controller_epoch=epoch,
                    leader=broker,
                    leader_epoch=1_000_000,
                    isr=[broker],
                    replicas=[broker],
                )
                lai = await control.LeaderAndIsr(
                    control_pb2.LeaderAndIsrRequest(
                        controller_id=deposed,
                        controller_epoch=epoch,
                        broker_epoch=-1,
                        partition_states=[state],
                    ),
                    timeout=5,
                )
                after = await client.Metadata(ask, timeout=5)
            for name, code in (("UpdateMetadata", um.error_code), ("LeaderAndIsr", lai.error_code)):
                if code != stale:
                    problems.append(
                        f"broker {broker} (knows epoch {epoch + 1}) answered "
                        f"{common_pb2.ErrorCode.Name(code)} to a {name} from epoch {epoch}"
                    )
            if before != after:
                problems.append(f"broker {broker}'s Metadata changed after the stale requests")
        return problems, known
