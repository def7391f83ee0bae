"""The core's per-broker ``BrokerRequests`` as BrokerControlService protobuf messages (seed 001).

Pure translation. Each request is stamped with the controller id and epoch and the target's
broker epoch (contract 7); UpdateMetadata also names the controller's endpoint so brokers can
find it (contract 8).
"""

from __future__ import annotations

from collections.abc import Iterable

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.controller.codec import RECOVERED, RECOVERING
from services.controller.core import BrokerInfo, BrokerRequests


def endpoint(info: BrokerInfo) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(
        broker_id=info.id, host=info.host, port=info.port, rack=info.rack
    )


def leader_and_isr(req: BrokerRequests) -> control_pb2.LeaderAndIsrRequest | None:
    if not req.leader_and_isr:
        return None
    states = []
    for s in req.leader_and_isr:
        lai = s.leader_and_isr
        states.append(
            control_pb2.LeaderAndIsrPartitionState(
                topic=s.tp.topic,
                topic_id=s.topic_id,
                partition=s.tp.partition,
                controller_epoch=lai.controller_epoch,
                leader=lai.leader,
                leader_epoch=lai.leader_epoch,
                isr=list(lai.isr),
                partition_epoch=lai.partition_epoch,
                replicas=list(s.replicas),
                adding_replicas=list(s.adding_replicas),
                removing_replicas=list(s.removing_replicas),
                is_new=s.is_new,
                leader_recovery_state=RECOVERING if lai.recovering else RECOVERED,
            )
        )
    return control_pb2.LeaderAndIsrRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partition_states=states,
        live_leaders=[endpoint(b) for b in req.live_leaders],
    )


def stop_replica(req: BrokerRequests) -> control_pb2.StopReplicaRequest | None:
    if not req.stop_replica:
        return None
    return control_pb2.StopReplicaRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=s.tp.topic,
                partition=s.tp.partition,
                leader_epoch=s.leader_epoch,
                delete_partition=s.delete,
            )
            for s in req.stop_replica
        ],
    )


def update_metadata(
    req: BrokerRequests, controller_host: str, controller_port: int
) -> control_pb2.UpdateMetadataRequest | None:
    if req.update_metadata is None:
        return None
    return control_pb2.UpdateMetadataRequest(
        controller_id=req.controller_id,
        controller_epoch=req.controller_epoch,
        broker_epoch=req.broker_epoch,
        partition_states=[
            control_pb2.UpdateMetadataPartitionState(
                topic=s.tp.topic,
                topic_id=s.topic_id,
                partition=s.tp.partition,
                controller_epoch=s.controller_epoch,
                leader=s.leader,
                leader_epoch=s.leader_epoch,
                isr=list(s.isr),
                partition_epoch=s.partition_epoch,
                replicas=list(s.replicas),
                offline_replicas=list(s.offline_replicas),
            )
            for s in req.update_metadata
        ],
        live_brokers=[endpoint(b) for b in req.live_brokers],
        controller_host=controller_host,
        controller_port=controller_port,
    )


def deleted_topics_update(
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    live_brokers: Iterable[BrokerInfo],
    topics: Iterable[str],
    controller_host: str,
    controller_port: int,
) -> control_pb2.UpdateMetadataRequest:
    """UpdateMetadata telling a broker that ``topics`` are gone (after a completed deletion)."""
    return control_pb2.UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_brokers=[endpoint(b) for b in live_brokers],
        deleted_topics=sorted(topics),
        controller_host=controller_host,
        controller_port=controller_port,
    )
