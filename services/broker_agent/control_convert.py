"""Control requests between protobuf and the broker's domain (LeaderAndIsr, StopReplica,
UpdateMetadata, their answers, and broker endpoints).

Apart from the data plane's conversions (``convert``) so that the control-plane handling
(``control``, ``metadata_cache`` and these) imports nothing of the logs, fetchers or client
services: a broker that keeps no log (a simulated one) reuses it as it is.
"""

from __future__ import annotations

from typing import Any

from leasehold import metadata_digest
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.broker_agent.metadata_cache import topic_runs
from services.broker_agent.model import (
    ControlResult,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    MetadataPartition,
    StopReplica,
    StopReplicaPartition,
    UpdateMetadata,
)


def endpoint_from_pb(endpoint: common_pb2.BrokerEndpoint) -> Endpoint:
    return Endpoint(endpoint.broker_id, endpoint.host, endpoint.port, endpoint.rack)


def endpoint_pb(endpoint: Endpoint) -> common_pb2.BrokerEndpoint:
    return common_pb2.BrokerEndpoint(
        broker_id=endpoint.broker_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack
    )


# -------------------------------------------------------------------- control plane
# Repeated fields are copied as ``tuple(field[:])``: slicing a protobuf repeated field makes a
# list in C, which is several times faster to turn into a tuple than iterating the field, and
# a 10,000-partition request has three or more of them per partition.


def leader_and_isr_from_pb(request: control_pb2.LeaderAndIsrRequest) -> LeaderAndIsr:
    """The domain request; each partition's value is built without the dataclass's ``__init__``.

    A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``: with 13
    fields that was 40% of decoding a 10,000-partition request. So a new instance gets its
    ``__dict__`` filled at once with the values the constructor would store, then runs its own
    ``__post_init__`` (which derives ``tp``). Only while the class has exactly these fields and
    no slots: should the model change, the constructor is used until this is updated
    (``tests/unit/broker/test_control_convert_leader_and_isr.py`` compares the two).
    """
    cls = LeaderAndIsrPartition
    fields = ("topic", "partition", "leader", "leader_epoch", "isr", "replicas")
    fields += ("partition_epoch", "controller_epoch", "topic_id", "adding_replicas")
    fields += ("removing_replicas", "is_new", "leader_recovery_state", "tp")
    direct = tuple(cls.__dataclass_fields__) == fields and "__slots__" not in cls.__dict__
    new, fill, post_init = object.__new__, object.__setattr__, cls.__post_init__
    # Equal replica lists and ISRs are shared: they outlive the request as the partitions'
    # state, and 10,000 partitions hold a handful of distinct ones (fewer objects for the
    # garbage collector to count and walk).
    lists: dict[tuple[int, ...], tuple[int, ...]] = {}
    shared = lists.setdefault

    def partition_of(s: control_pb2.LeaderAndIsrPartitionState) -> LeaderAndIsrPartition:
        values = {
            "topic": s.topic,
            "partition": s.partition,
            "leader": s.leader,
            "leader_epoch": s.leader_epoch,
            "isr": shared(isr := tuple(s.isr[:]), isr),
            "replicas": shared(replicas := tuple(s.replicas[:]), replicas),
            "partition_epoch": s.partition_epoch,
            "controller_epoch": s.controller_epoch,
            "topic_id": s.topic_id,
            "adding_replicas": tuple(s.adding_replicas[:]) if s.adding_replicas else (),
            "removing_replicas": tuple(s.removing_replicas[:]) if s.removing_replicas else (),
            "is_new": s.is_new,
            "leader_recovery_state": s.leader_recovery_state,
        }
        if not direct:
            return cls(**values)
        state = new(cls)
        fill(state, "__dict__", values)
        post_init(state)
        return state

    return LeaderAndIsr(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=tuple([partition_of(s) for s in request.partition_states]),
        live_leaders=tuple(endpoint_from_pb(e) for e in request.live_leaders),
    )


def stop_replica_from_pb(request: control_pb2.StopReplicaRequest) -> StopReplica:
    return StopReplica(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=tuple(
            StopReplicaPartition(s.topic, s.partition, s.leader_epoch, s.delete_partition)
            for s in request.partition_states
        ),
    )


def update_metadata_from_pb(request: control_pb2.UpdateMetadataRequest) -> UpdateMetadata:
    """The request as the domain sees it, with each partition state's digest hash taken from
    the encoding it arrived in (protobuf re-serialises a parsed message as the controller
    serialised it)."""
    state_hash = metadata_digest.state_hash
    # Built positionally, in the named tuple's field order (the keyword constructor costs as much
    # as reading the fields; test_control_convert_update_metadata checks the order), with equal
    # replica lists shared as in ``leader_and_isr_from_pb``, and equal topic names, topic ids,
    # partition numbers and leaders one object each: protobuf hands out a new object per read,
    # and a cache holding a million partitions kept them all (524 -> 317 B a cached partition).
    new = tuple.__new__
    lists: dict[tuple[int, ...], tuple[int, ...]] = {(): ()}
    shared = lists.setdefault
    values: dict[str | int, str | int] = {}
    same = values.setdefault

    def partition_of(s: control_pb2.UpdateMetadataPartitionState) -> MetadataPartition:
        return new(
            MetadataPartition,
            (
                same(topic := s.topic, topic),
                same(partition := s.partition, partition),
                same(leader := s.leader, leader),
                s.leader_epoch,
                shared(isr := tuple(s.isr[:]), isr),
                shared(replicas := tuple(s.replicas[:]), replicas),
                s.partition_epoch,
                s.controller_epoch,
                same(topic_id := s.topic_id, topic_id),
                shared(offline := tuple(s.offline_replicas[:]), offline),
            ),
        )

    partitions = tuple([partition_of(s) for s in request.partition_states])
    hashes = tuple(state_hash(s.SerializeToString()) for s in request.partition_states)
    return UpdateMetadata(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        partitions=partitions,
        live_brokers=tuple(endpoint_from_pb(e) for e in request.live_brokers),
        deleted_topics=tuple(request.deleted_topics),
        controller_host=request.controller_host,
        controller_port=request.controller_port,
        state_hashes=hashes,
        topic_runs=topic_runs(partitions, hashes),
        metadata_digest=request.metadata_digest,
        live_brokers_base=(
            request.live_brokers_base if request.HasField("live_brokers_base") else None
        ),
        removed_brokers=tuple(request.removed_brokers),
        endpoint_hashes=tuple(
            metadata_digest.endpoint_hash(e.SerializeToString()) for e in request.live_brokers
        ),
    )


def control_result_fields(result: ControlResult) -> dict[str, Any]:
    """Fields shared by the LeaderAndIsr and StopReplica responses."""
    return {
        "error_code": int(result.error),
        "error_message": result.message,
        "partition_errors": [
            common_pb2.PartitionError(topic=tp.topic, partition=tp.partition, error_code=int(code))
            for tp, code in sorted(result.partition_errors)
        ],
    }


# ------------------------------------------------------------------------ data plane
