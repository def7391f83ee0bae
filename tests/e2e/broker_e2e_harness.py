"""Broker agents as real processes, with the test acting as the controller.

``ControllerDouble`` does what the active controller does for the scenarios these tests build:
it stamps LeaderAndIsr / UpdateMetadata with its controller epoch and each broker's epoch (read
from the broker's etcd registration), elects leaders exactly when the test says so, and serves
ControllerService (AlterPartition with the partition-epoch check, ControlledShutdown moving
leadership to another ISR member). Like a real controller it writes what brokers check in etcd
before they obey: the controller epoch it holds, and each partition state before it is sent.
That lets a test construct the precise leader-change sequences of KIP-101 and KIP-279.
``BrokerCluster`` starts, kills and restarts broker processes through LocalCluster's process
handling.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc

from leasehold import channels
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc, control_pb2, control_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster, Proc
from services.broker_agent.log import Log, iter_batches
from services.broker_agent.model import Code

CONTROLLER_EPOCH = 1
RPC_TIMEOUT_S = 10.0
# The services' channel options (short reconnect backoff), each channel with its own
# subchannels: see ``ControllerDouble.control``.
CHANNEL_OPTIONS = [*channels.CHANNEL_OPTIONS, ("grpc.use_local_subchannel_pool", 1)]


async def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05, what: str = ""):
    """Poll an (async or plain) predicate until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(interval)


@dataclass
class PState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 1


@dataclass
class BrokerCluster:
    """Broker processes on one etcd; ``env`` holds LEASEHOLD_* settings for every broker."""

    env: dict[str, str] = field(default_factory=dict)
    session_ttl: int = 2

    def __post_init__(self) -> None:
        self.local = LocalCluster(
            ClusterSpec(controllers=0, brokers=0, session_ttl=self.session_ttl, extra_env=self.env)
        )
        self.procs: dict[int, Proc] = {}
        self.paused: set[int] = set()
        self.etcd: EtcdClient | None = None
        self.keyspace = Keyspace(self.local.spec.cluster_id)

    async def start(self, broker_ids: list[int]) -> None:
        self.local.etcd.start()
        self.etcd = EtcdClient([self.local.etcd.endpoint])
        await self.etcd.connect()
        for broker_id in broker_ids:
            self.procs[broker_id] = self.local.add_broker(broker_id)
        await asyncio.gather(*(self.start_broker(b) for b in broker_ids))

    def data_dir(self, broker_id: int) -> Path:
        return self.local.workdir / f"broker-{broker_id}"

    async def registration_revision(self, broker_id: int) -> int:
        kv = await self.etcd.get(self.keyspace.broker(broker_id))
        return kv.create_revision if kv is not None else 0

    async def start_broker(self, broker_id: int) -> None:
        """Start (or restart) a broker once its previous registration has expired."""
        await wait_for(
            lambda: self._absent(broker_id), timeout=self.session_ttl + 10, what="old lease"
        )
        proc = self.procs[broker_id]
        proc.start()
        await asyncio.to_thread(proc.wait_ready, 30.0)
        await wait_for(
            lambda: self.registration_revision(broker_id), what=f"broker {broker_id} registration"
        )

    async def _absent(self, broker_id: int) -> bool:
        return await self.registration_revision(broker_id) == 0

    def kill(self, broker_id: int) -> None:
        self.procs[broker_id].kill()
        self.paused.discard(broker_id)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the broker keeps its sockets and lease but answers nothing."""
        self.procs[broker_id].pause()
        self.paused.add(broker_id)

    def is_up(self, broker_id: int) -> bool:
        return self.procs[broker_id].alive() and broker_id not in self.paused

    def terminate(self, broker_id: int) -> int | None:
        return self.procs[broker_id].terminate(timeout=30)

    async def close(self) -> None:
        for proc in self.procs.values():
            proc.kill()
        if self.etcd is not None:
            await self.etcd.close()
        self.local.etcd.stop()
        self.local.remove_workdir()

    def logs(self, broker_id: int) -> str:
        return self.local.logs(f"broker-{broker_id}", tail=40)


class ControllerDouble(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, cluster: BrokerCluster) -> None:
        self.cluster = cluster
        self.partitions: dict[tuple[str, int], PState] = {}
        self.alter_requests: list[tuple[int, str, int, tuple[int, ...]]] = []
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self._channels: dict[int, grpc.aio.Channel] = {}
        self._channel_pids: dict[int, int | None] = {}
        self._stale: list[grpc.aio.Channel] = []
        self._epoch_written = False

    async def _hold_epoch(self) -> None:
        """Win the election and the epoch as a controller does: its registration under the
        election prefix (where plaintext brokers look for the controller) and the epoch key
        naming it."""
        if not self._epoch_written:
            ks = self.cluster.keyspace
            registration = metadata_pb2.ControllerRegistration(
                controller_id=100, host="127.0.0.1", port=self.port
            )
            await self.cluster.etcd.put(
                ks.controller_election_prefix + b"double", registration.SerializeToString()
            )
            record = metadata_pb2.ControllerEpoch(epoch=CONTROLLER_EPOCH, controller_id=100)
            await self.cluster.etcd.put(ks.controller_epoch, record.SerializeToString())
            self._epoch_written = True

    async def _commit(self, topic: str, partition: int, s: PState) -> None:
        """The partition state in etcd, as the controller commits it before sending it."""
        state = metadata_pb2.PartitionState(
            leader=s.leader,
            leader_epoch=s.leader_epoch,
            isr=list(s.isr),
            controller_epoch=CONTROLLER_EPOCH,
        )
        key = self.cluster.keyspace.partition_state(topic, partition)
        await self.cluster.etcd.put(key, state.SerializeToString())

    async def start(self) -> None:
        self.server = grpc.aio.server()
        controller_pb2_grpc.add_ControllerServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()

    async def close(self) -> None:
        for ch in [*self._channels.values(), *self._stale]:
            await ch.close()
        if self.server is not None:
            await self.server.stop(0)

    # -------------------------------------------------------------- brokers

    def _address(self, broker_id: int) -> str:
        return self.cluster.procs[broker_id].address

    def control(self, broker_id: int) -> control_pb2_grpc.BrokerControlServiceStub:
        # A channel to a killed process sits in reconnect backoff, and an RPC on it fails with
        # UNAVAILABLE until the backoff ends even once the broker is back on the same port; so
        # a restarted process (a new pid) gets a new channel. gRPC shares subchannels between
        # channels to the same address by default, so a new channel would inherit the old one's
        # backoff; each has its own pool.
        pid = self.cluster.procs[broker_id].pid
        ch = self._channels.get(broker_id)
        if ch is not None and self._channel_pids.get(broker_id) != pid:
            self._stale.append(self._channels.pop(broker_id))
            ch = None
        if ch is None:
            ch = self._channels[broker_id] = grpc.aio.insecure_channel(
                self._address(broker_id), options=CHANNEL_OPTIONS
            )
            self._channel_pids[broker_id] = pid
        return control_pb2_grpc.BrokerControlServiceStub(ch)

    def client(self, broker_id: int) -> broker_pb2_grpc.BrokerServiceStub:
        self.control(broker_id)
        return broker_pb2_grpc.BrokerServiceStub(self._channels[broker_id])

    def endpoint(self, broker_id: int) -> common_pb2.BrokerEndpoint:
        proc = self.cluster.procs[broker_id]
        return common_pb2.BrokerEndpoint(broker_id=broker_id, host="127.0.0.1", port=proc.port)

    async def live_brokers(self) -> list[int]:
        """Registered brokers whose process runs (a killed one's lease lingers for its TTL;
        a real controller would learn of the death only then, the test knows at once)."""
        kvs, _ = await self.cluster.etcd.range_prefix(self.cluster.keyspace.brokers_prefix)
        registered = (self.cluster.keyspace.broker_id_of(kv.key) for kv in kvs)
        return sorted(b for b in registered if self.cluster.is_up(b))

    async def update_metadata(self) -> None:
        await self._hold_epoch()
        live = await self.live_brokers()
        states = [
            control_pb2.UpdateMetadataPartitionState(
                topic=t,
                partition=p,
                controller_epoch=CONTROLLER_EPOCH,
                leader=s.leader,
                leader_epoch=s.leader_epoch,
                isr=list(s.isr),
                partition_epoch=s.partition_epoch,
                replicas=list(s.replicas),
            )
            for (t, p), s in self.partitions.items()
        ]
        for broker_id in live:
            resp = await self.control(broker_id).UpdateMetadata(
                control_pb2.UpdateMetadataRequest(
                    controller_id=100,
                    controller_epoch=CONTROLLER_EPOCH,
                    broker_epoch=await self.cluster.registration_revision(broker_id),
                    partition_states=states,
                    live_brokers=[self.endpoint(b) for b in live],
                    controller_host="127.0.0.1",
                    controller_port=self.port,
                ),
                timeout=RPC_TIMEOUT_S,
            )
            assert resp.error_code == Code.NONE, resp

    async def send_state(self, topic: str, partition: int, to: list[int]) -> dict[int, int]:
        """LeaderAndIsr with the partition's current state to ``to``; broker -> error code."""
        s = self.partitions[(topic, partition)]
        await self._hold_epoch()
        await self._commit(topic, partition, s)
        codes = {}
        for broker_id in to:
            resp = await self.control(broker_id).LeaderAndIsr(
                control_pb2.LeaderAndIsrRequest(
                    controller_id=100,
                    controller_epoch=CONTROLLER_EPOCH,
                    broker_epoch=await self.cluster.registration_revision(broker_id),
                    partition_states=[
                        control_pb2.LeaderAndIsrPartitionState(
                            topic=topic,
                            partition=partition,
                            controller_epoch=CONTROLLER_EPOCH,
                            leader=s.leader,
                            leader_epoch=s.leader_epoch,
                            isr=list(s.isr),
                            partition_epoch=s.partition_epoch,
                            replicas=list(s.replicas),
                        )
                    ],
                    live_leaders=[self.endpoint(s.leader)],
                ),
                timeout=RPC_TIMEOUT_S,
            )
            assert resp.error_code == Code.NONE, resp
            codes[broker_id] = resp.partition_errors[0].error_code
        return codes

    async def elect(
        self,
        topic: str,
        partition: int,
        leader: int,
        isr: list[int],
        replicas: list[int] | None = None,
        to: list[int] | None = None,
    ) -> dict[int, int]:
        """A new leader epoch for the partition, told to ``to`` (default: live replicas)."""
        old = self.partitions.get((topic, partition))
        self.partitions[(topic, partition)] = PState(
            leader=leader,
            leader_epoch=(old.leader_epoch + 1) if old else 1,
            isr=tuple(isr),
            replicas=tuple(replicas if replicas is not None else old.replicas),
            partition_epoch=(old.partition_epoch + 1) if old else 1,
        )
        live = await self.live_brokers()
        targets = (
            to
            if to is not None
            else [r for r in self.partitions[(topic, partition)].replicas if r in live]
        )
        await self.update_metadata()
        return await self.send_state(topic, partition, targets)

    def state(self, topic: str, partition: int) -> PState:
        return self.partitions[(topic, partition)]

    # ------------------------------------------------------ ControllerService

    async def AlterPartition(self, request, context):
        out = controller_pb2.AlterPartitionResponse()
        for topic in request.topics:
            t_out = out.topics.add(topic=topic.topic, topic_id=topic.topic_id)
            for p in topic.partitions:
                key = (topic.topic, p.partition)
                s = self.partitions.get(key)
                new_isr = tuple(b.broker_id for b in p.new_isr_with_epochs)
                self.alter_requests.append((request.broker_id, topic.topic, p.partition, new_isr))
                if s is None:
                    code = Code.UNKNOWN_TOPIC_OR_PARTITION
                elif request.broker_id != s.leader or p.leader_epoch != s.leader_epoch:
                    code = Code.FENCED_LEADER_EPOCH
                elif p.partition_epoch != s.partition_epoch and new_isr != s.isr:
                    code = Code.INVALID_UPDATE_VERSION
                else:
                    code = Code.NONE
                    if new_isr != s.isr:
                        s = replace(s, isr=new_isr, partition_epoch=s.partition_epoch + 1)
                        self.partitions[key] = s
                t_out.partitions.add(
                    partition=p.partition,
                    error_code=code,
                    leader_id=s.leader if s else -1,
                    leader_epoch=s.leader_epoch if s else -1,
                    isr=list(s.isr) if s else [],
                    partition_epoch=s.partition_epoch if s else -1,
                )
        return out

    async def ControlledShutdown(self, request, context):
        remaining = []
        live = [b for b in await self.live_brokers() if b != request.broker_id]
        for (topic, partition), s in list(self.partitions.items()):
            if s.leader != request.broker_id:
                continue
            candidates = [r for r in s.isr if r != request.broker_id and r in live]
            if not candidates:
                remaining.append(common_pb2.TopicPartition(topic=topic, partition=partition))
                continue
            new_isr = [r for r in s.isr if r != request.broker_id]
            await self.elect(
                topic, partition, candidates[0], new_isr, to=[*candidates, request.broker_id]
            )
        return controller_pb2.ControlledShutdownResponse(remaining_partitions=remaining)


# ------------------------------------------------------------------ client helpers


async def produce(
    stub, topic: str, partition: int, values: list[bytes], acks: int = -1, timeout_ms: int = 5000
) -> broker_pb2.PartitionProduceResponse:
    resp = await stub.Produce(
        broker_pb2.ProduceRequest(
            acks=acks,
            timeout_ms=timeout_ms,
            topics=[
                broker_pb2.TopicProduceData(
                    topic=topic,
                    partitions=[
                        broker_pb2.PartitionProduceData(
                            partition=partition,
                            current_leader_epoch=-1,
                            records=[broker_pb2.Record(value=v) for v in values],
                        )
                    ],
                )
            ],
        ),
        timeout=timeout_ms / 1000 + 5,
    )
    return resp.topics[0].partitions[0]


async def consume_all(stub, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """Every committed record of the partition from its log start, read from its leader."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    while True:
        resp = await stub.Fetch(
            broker_pb2.FetchRequest(
                replica_id=-1,
                max_wait_ms=0,
                max_bytes=1 << 20,
                record_format=broker_pb2.RECORD_FORMAT_RECORDS,
                topics=[
                    broker_pb2.FetchTopic(
                        topic=topic,
                        partitions=[
                            broker_pb2.FetchPartition(
                                partition=partition,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                partition_max_bytes=1 << 20,
                            )
                        ],
                    )
                ],
            )
        )
        p = resp.topics[0].partitions[0]
        if p.error_code == Code.OFFSET_OUT_OF_RANGE and offset == 0 and p.log_start_offset > 0:
            offset = p.log_start_offset
            continue
        assert p.error_code == Code.NONE, p
        if not p.decoded_records:
            return out
        out.extend((r.offset, r.value) for r in p.decoded_records)
        offset = out[-1][0] + 1


def read_log(data_dir: Path, topic: str, partition: int) -> tuple[int, list[bytes]]:
    """(log start offset, raw batches) of a stopped broker's replica, straight from disk."""
    log = Log.open(data_dir / f"{topic}-{partition}")
    try:
        start, end = log.log_start_offset, log.log_end_offset
        batches: list[bytes] = []
        offset = start
        while offset < end:
            data = log.read(offset, 1 << 20).records
            views = list(iter_batches(data))
            batches.extend(bytes(v.buffer) for v in views)
            offset = views[-1].last_offset + 1
        return start, batches
    finally:
        log.close()


async def set_topic_config(cluster: BrokerCluster, topic: str, entries: dict[str, str]) -> None:
    await cluster.etcd.put(
        cluster.keyspace.topic_config(topic),
        metadata_pb2.ConfigEntries(entries=entries).SerializeToString(),
    )
