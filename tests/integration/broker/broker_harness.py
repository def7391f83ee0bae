"""Broker agents running in this process against the real etcd, reached over gRPC.

The test plays the controller: it stamps requests with controller and broker epochs and drives
``BrokerControlService`` directly, as the active controller would. Shared by the tests in this
directory (imported by module name; pytest puts this directory on ``sys.path``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import grpc

from leasehold.broker.v1 import broker_pb2_grpc, control_pb2, control_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.config import CommonConfig
from leasehold.controller.v1 import controller_pb2, controller_pb2_grpc
from leasehold.server import Service, ServiceRunner
from services.broker_agent.app import SERVICE_NAMES, BrokerAgent
from services.broker_agent.config import BrokerConfig


@dataclass
class RunningBroker:
    agent: BrokerAgent
    runner: ServiceRunner
    channel: grpc.aio.Channel
    data_dir: Path
    broker: broker_pb2_grpc.BrokerServiceStub = field(init=False)
    control: control_pb2_grpc.BrokerControlServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.broker = broker_pb2_grpc.BrokerServiceStub(self.channel)
        self.control = control_pb2_grpc.BrokerControlServiceStub(self.channel)

    @property
    def broker_id(self) -> int:
        return self.agent.config.broker_id

    @property
    def epoch(self) -> int:
        return self.agent.replicas.broker_epoch

    @property
    def endpoint(self) -> common_pb2.BrokerEndpoint:
        return common_pb2.BrokerEndpoint(
            broker_id=self.broker_id, host="127.0.0.1", port=self.runner.port
        )

    async def stop(self) -> None:
        await self.channel.close()
        await self.runner.stop()


async def start_broker(
    etcd_endpoint: str, cluster_id: str, broker_id: int, data_dir: Path, **overrides
) -> RunningBroker:
    settings = dict(
        session_ttl=2,
        controlled_shutdown_enable=False,
        replica_fetch_backoff_ms=100,
        replica_fetch_wait_max_ms=200,
    )
    settings.update(overrides)
    config = BrokerConfig(
        broker_id=broker_id,
        data_dir=str(data_dir),
        common=CommonConfig(
            etcd_endpoints=(etcd_endpoint,), cluster_id=cluster_id, port=0, grace_seconds=0.5
        ),
        **settings,
    )
    agent = BrokerAgent(config)
    # The test plays a controller that writes nothing to etcd: no etcd fence for its requests
    # (``control_fence`` has its own tests, with a real controller epoch in etcd).
    agent.replicas.fence = None

    async def on_start() -> None:
        await agent.start(runner.port)

    runner = ServiceRunner(
        config.common,
        Service(
            names=SERVICE_NAMES, register=agent.register, on_start=on_start, on_stop=agent.stop
        ),
    )
    try:
        await runner.start()
    except BaseException:
        if runner.server is not None:
            await runner.server.stop(0)
        raise
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{runner.port}")
    return RunningBroker(agent, runner, channel, data_dir)


def leader_and_isr(
    target: RunningBroker,
    partitions: list[control_pb2.LeaderAndIsrPartitionState],
    *,
    controller_epoch: int = 1,
    broker_epoch: int | None = None,
    live_leaders: list[common_pb2.BrokerEndpoint] = (),
) -> control_pb2.LeaderAndIsrRequest:
    return control_pb2.LeaderAndIsrRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=target.epoch if broker_epoch is None else broker_epoch,
        partition_states=partitions,
        live_leaders=list(live_leaders),
    )


def partition_state(
    topic: str,
    partition: int,
    *,
    leader: int,
    leader_epoch: int,
    replicas: list[int],
    isr: list[int] | None = None,
    partition_epoch: int = 1,
) -> control_pb2.LeaderAndIsrPartitionState:
    return control_pb2.LeaderAndIsrPartitionState(
        topic=topic,
        partition=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=leader_epoch,
        isr=list(replicas if isr is None else isr),
        partition_epoch=partition_epoch,
        replicas=replicas,
    )


class AcceptingController(controller_pb2_grpc.ControllerServiceServicer):
    """A ControllerService that commits every AlterPartition as asked (and records it)."""

    def __init__(self) -> None:
        self.requests: list[controller_pb2.AlterPartitionRequest] = []
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self) -> AcceptingController:
        self.server = grpc.aio.server()
        controller_pb2_grpc.add_ControllerServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        return self

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(0)

    async def AlterPartition(self, request, context):
        self.requests.append(request)
        out = controller_pb2.AlterPartitionResponse()
        for topic in request.topics:
            t = out.topics.add(topic=topic.topic)
            for p in topic.partitions:
                t.partitions.add(
                    partition=p.partition,
                    leader_id=request.broker_id,
                    leader_epoch=p.leader_epoch,
                    isr=[b.broker_id for b in p.new_isr_with_epochs],
                    partition_epoch=p.partition_epoch + 1,
                )
        return out

    async def ControlledShutdown(self, request, context):
        return controller_pb2.ControlledShutdownResponse()


def update_metadata(
    target: RunningBroker,
    brokers: list[common_pb2.BrokerEndpoint],
    controller_port: int = 0,
    controller_epoch: int = 1,
) -> control_pb2.UpdateMetadataRequest:
    return control_pb2.UpdateMetadataRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=target.epoch,
        live_brokers=brokers,
        controller_host="127.0.0.1" if controller_port else "",
        controller_port=controller_port,
    )
