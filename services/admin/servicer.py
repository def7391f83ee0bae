"""AdminService: translates ``leasehold.admin.v1`` messages to domain calls and back, nothing else.

Validation, reads and writes live in the domain modules; errors they raise become gRPC status
codes in the shared error interceptor, and per-item outcomes become the results' ``error_code``
and ``error_message``. The only thing taken from the call itself is the caller's
W3C trace context (``traceparent``/``tracestate`` metadata), stored with intents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grpc

from leasehold.admin.v1 import admin_pb2, admin_pb2_grpc
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from services.admin.domain import AdminDomain
from services.admin.dynamic_configs import AlterOpRequest, Resource
from services.admin.model import (
    CallContext,
    NewPartitions,
    NewTopic,
    OperationStatus,
    PartitionOutcome,
    ReassignmentRequest,
    TopicResult,
    frozen_assignment,
)


def _call(context: grpc.aio.ServicerContext, timeout_ms: int = 0) -> CallContext:
    metadata = context.invocation_metadata() or ()
    carrier = {k: v for k, v in metadata if isinstance(v, str)}
    return CallContext(trace_carrier=carrier, timeout_ms=timeout_ms)


def _assignment(
    entries: Iterable[admin_pb2.ReplicaAssignment], field: str
) -> dict[int, tuple[int, ...]]:
    """Partition -> replicas; a partition listed twice makes the request ambiguous (the call
    fails, naming ``field``)."""
    out: dict[int, tuple[int, ...]] = {}
    for e in entries:
        if e.partition in out:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT,
                f"Partition {e.partition} appears more than once in the replica assignment.",
                field=field,
            )
        out[e.partition] = tuple(e.broker_ids)
    return out


def _assignments_pb(assignment: Mapping[int, Iterable[int]]) -> list[admin_pb2.ReplicaAssignment]:
    return [admin_pb2.ReplicaAssignment(partition=p, broker_ids=r) for p, r in assignment.items()]


def _partition_errors(results: Iterable[PartitionOutcome]) -> list[common_pb2.PartitionError]:
    return [
        common_pb2.PartitionError(
            topic=r.topic,
            partition=r.partition,
            error_code=r.outcome.code,
            error_message=r.outcome.message,
        )
        for r in results
    ]


def _topic_result(r: TopicResult, cls):
    fields = dict(
        name=r.name,
        error_code=r.outcome.code,
        error_message=r.outcome.message,
        assignments=_assignments_pb(r.assignments),
    )
    if cls is admin_pb2.CreatableTopicResult:
        fields |= dict(
            topic_id=r.topic_id,
            num_partitions=r.num_partitions,
            replication_factor=r.replication_factor,
        )
    return cls(**fields)


def _status(op: OperationStatus, cls):
    return cls(
        request_id=op.request_id, results=_partition_errors(op.results), completed=op.completed
    )


def _replicas(assignment) -> list[admin_pb2.PartitionReplicas]:
    return [
        admin_pb2.PartitionReplicas(topic=tp.topic, partition=tp.partition, replicas=r)
        for tp, r in sorted(assignment.items())
    ]


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, domain: AdminDomain) -> None:
        self.d = domain

    async def CreateTopics(self, request, context):
        topics = [
            NewTopic(
                name=t.name,
                num_partitions=t.num_partitions if t.HasField("num_partitions") else -1,
                replication_factor=(
                    t.replication_factor if t.HasField("replication_factor") else -1
                ),
                assignments=frozen_assignment(
                    _assignment(t.assignments, f"topics[{i}].assignments")
                ),
                configs=dict(t.configs),
            )
            for i, t in enumerate(request.topics)
        ]
        call = _call(context, request.timeout_ms)
        results = await self.d.topics.create(topics, request.validate_only, call)
        return admin_pb2.CreateTopicsResponse(
            topics=[_topic_result(r, admin_pb2.CreatableTopicResult) for r in results]
        )

    async def CreatePartitions(self, request, context):
        asks = [
            NewPartitions(t.name, t.count, tuple(tuple(a.broker_ids) for a in t.assignments))
            for t in request.topics
        ]
        call = _call(context, request.timeout_ms)
        results = await self.d.topics.create_partitions(asks, request.validate_only, call)
        return admin_pb2.CreatePartitionsResponse(
            topics=[_topic_result(r, admin_pb2.CreatePartitionsTopicResult) for r in results]
        )

    async def DeleteTopics(self, request, context):
        status = await self.d.deletions.delete(
            list(request.topic_names), _call(context, request.timeout_ms)
        )
        return admin_pb2.DeleteTopicsResponse(
            request_id=status.request_id,
            topics=[
                admin_pb2.DeletableTopicResult(
                    name=t.name,
                    topic_id=t.topic_id,
                    error_code=t.outcome.code,
                    error_message=t.outcome.message,
                )
                for t in status.topics
            ],
        )

    async def ListTopics(self, request, context):
        listings = await self.d.describer.list_topics()
        return admin_pb2.ListTopicsResponse(
            topics=[
                admin_pb2.TopicListing(
                    name=t.name,
                    topic_id=t.topic_id,
                    partition_count=t.partition_count,
                    replication_factor=t.replication_factor,
                    marked_for_deletion=t.marked_for_deletion,
                )
                for t in listings
            ]
        )

    async def DescribeTopics(self, request, context):
        infos = await self.d.describer.describe_topics(list(request.topics))
        return admin_pb2.DescribeTopicsResponse(
            topics=[
                admin_pb2.TopicDescription(
                    name=t.name,
                    topic_id=t.topic_id,
                    configs=dict(t.configs),
                    marked_for_deletion=t.marked_for_deletion,
                    partitions=[
                        admin_pb2.PartitionDescription(
                            partition=p.partition,
                            leader=p.leader,
                            leader_epoch=p.leader_epoch,
                            replicas=p.replicas,
                            isr=p.isr,
                            adding_replicas=p.adding_replicas,
                            removing_replicas=p.removing_replicas,
                            offline_replicas=p.offline_replicas,
                            partition_epoch=p.partition_epoch,
                            controller_epoch=p.controller_epoch,
                            leader_recovery_state=p.leader_recovery_state,
                        )
                        for p in t.partitions
                    ],
                )
                for t in infos
            ]
        )

    async def DescribeCluster(self, request, context):
        info = await self.d.describer.describe_cluster()
        response = admin_pb2.DescribeClusterResponse(
            cluster_id=info.cluster_id,
            brokers=[
                admin_pb2.BrokerDescription(
                    broker_id=b.id, host=b.host, port=b.port, rack=b.rack, broker_epoch=b.epoch
                )
                for b in info.brokers
            ],
            standby_controller_ids=info.standby_controller_ids,
        )
        if info.controller is not None:
            c = info.controller
            response.active_controller.CopyFrom(
                admin_pb2.ControllerDescription(
                    controller_id=c.id, host=c.host, port=c.port, epoch=c.epoch
                )
            )
        return response

    async def DescribeConfigs(self, request, context):
        resources = [Resource(r.type, r.name) for r in request.resources]
        described = await self.d.configs.describe(resources)
        return admin_pb2.DescribeConfigsResponse(
            results=[
                admin_pb2.DescribeConfigsResult(
                    resource=admin_pb2.ConfigResource(type=res.type, name=res.name),
                    entries=[
                        admin_pb2.ConfigEntry(
                            name=v.name,
                            value=v.value,
                            source=v.source,
                            is_default=v.is_default,
                            documentation=v.doc,
                        )
                        for v in values
                    ],
                )
                for res, values in described
            ]
        )

    async def AlterConfigs(self, request, context):
        asks = [
            (
                Resource(r.resource.type, r.resource.name),
                [AlterOpRequest(c.name, c.operation, c.value) for c in r.configs],
            )
            for r in request.resources
        ]
        altered = await self.d.configs.alter(asks, request.validate_only)
        return admin_pb2.AlterConfigsResponse(
            results=[
                admin_pb2.AlterConfigsResult(
                    resource=admin_pb2.ConfigResource(type=r.type, name=r.name),
                    error_code=outcome.code,
                    error_message=outcome.message,
                )
                for r, outcome in altered
            ]
        )

    async def GenerateReassignment(self, request, context):
        current, proposed = await self.d.reassignments.generate(
            list(request.topics), list(request.broker_ids), request.disable_rack_aware
        )
        return admin_pb2.GenerateReassignmentResponse(
            current=_replicas(current), proposed=_replicas(proposed)
        )

    async def AlterPartitionReassignments(self, request, context):
        asks = [
            ReassignmentRequest(r.topic, r.partition, tuple(r.replicas), r.cancel)
            for r in request.reassignments
        ]
        status = await self.d.reassignments.alter(
            asks, request.throttle_bytes_per_sec, _call(context, request.timeout_ms)
        )
        return _status(status, admin_pb2.AlterPartitionReassignmentsResponse)

    async def ListPartitionReassignments(self, request, context):
        ongoing = await self.d.reassignments.list(
            [(tp.topic, tp.partition) for tp in request.partitions]
        )
        return admin_pb2.ListPartitionReassignmentsResponse(
            reassignments=[
                admin_pb2.OngoingReassignment(
                    topic=o.topic,
                    partition=o.partition,
                    replicas=o.replicas,
                    adding_replicas=o.adding,
                    removing_replicas=o.removing,
                    target_replicas=o.target,
                    isr=o.isr,
                )
                for o in ongoing
            ]
        )

    async def ElectLeaders(self, request, context):
        status = await self.d.elections.elect(
            request.election_type,
            [(tp.topic, tp.partition) for tp in request.partitions],
            _call(context, request.timeout_ms),
        )
        return _status(status, admin_pb2.ElectLeadersResponse)

    async def GetOperation(self, request, context):
        op = await self.d.operations.get_operation(request.request_id)
        return admin_pb2.GetOperationResponse(
            request_id=op.request_id,
            completed=op.completed,
            results=_partition_errors(op.results),
            completed_at_ms=op.completed_at_ms,
        )
