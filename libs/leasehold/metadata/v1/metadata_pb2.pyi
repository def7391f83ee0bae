from leasehold.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AdminOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ADMIN_OPERATION_UNSPECIFIED: _ClassVar[AdminOperation]
    ADMIN_OPERATION_DELETE_TOPIC: _ClassVar[AdminOperation]
    ADMIN_OPERATION_REASSIGNMENT: _ClassVar[AdminOperation]
    ADMIN_OPERATION_ELECTION: _ClassVar[AdminOperation]
    ADMIN_OPERATION_CREATE_TOPIC: _ClassVar[AdminOperation]
ADMIN_OPERATION_UNSPECIFIED: AdminOperation
ADMIN_OPERATION_DELETE_TOPIC: AdminOperation
ADMIN_OPERATION_REASSIGNMENT: AdminOperation
ADMIN_OPERATION_ELECTION: AdminOperation
ADMIN_OPERATION_CREATE_TOPIC: AdminOperation

class TraceContext(_message.Message):
    __slots__ = ("carrier",)
    class CarrierEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CARRIER_FIELD_NUMBER: _ClassVar[int]
    carrier: _containers.ScalarMap[str, str]
    def __init__(self, carrier: _Optional[_Mapping[str, str]] = ...) -> None: ...

class BrokerRegistration(_message.Message):
    __slots__ = ("broker_id", "host", "port", "rack", "incarnation_id", "registered_at_ms", "session_ttl_ms")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    host: str
    port: int
    rack: str
    incarnation_id: str
    registered_at_ms: int
    session_ttl_ms: int
    def __init__(self, broker_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ..., incarnation_id: _Optional[str] = ..., registered_at_ms: _Optional[int] = ..., session_ttl_ms: _Optional[int] = ...) -> None: ...

class ControllerRegistration(_message.Message):
    __slots__ = ("controller_id", "host", "port", "incarnation_id", "session_ttl_ms", "tls_server_name")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    TLS_SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    host: str
    port: int
    incarnation_id: str
    session_ttl_ms: int
    tls_server_name: str
    def __init__(self, controller_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., incarnation_id: _Optional[str] = ..., session_ttl_ms: _Optional[int] = ..., tls_server_name: _Optional[str] = ...) -> None: ...

class ControllerEpoch(_message.Message):
    __slots__ = ("epoch", "controller_id")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    controller_id: int
    def __init__(self, epoch: _Optional[int] = ..., controller_id: _Optional[int] = ...) -> None: ...

class ReplicaList(_message.Message):
    __slots__ = ("replicas",)
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class TopicAssignment(_message.Message):
    __slots__ = ("topic_id", "partitions", "created_at_ms", "trace_context")
    class PartitionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: ReplicaList
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[ReplicaList, _Mapping]] = ...) -> None: ...
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partitions: _containers.MessageMap[int, ReplicaList]
    created_at_ms: int
    trace_context: TraceContext
    def __init__(self, topic_id: _Optional[str] = ..., partitions: _Optional[_Mapping[int, ReplicaList]] = ..., created_at_ms: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ...) -> None: ...

class PartitionState(_message.Message):
    __slots__ = ("leader", "leader_epoch", "isr", "controller_epoch", "adding_replicas", "removing_replicas", "leader_recovery_state", "offline_replicas")
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    controller_epoch: int
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., controller_epoch: _Optional[int] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class TopicDeletion(_message.Message):
    __slots__ = ("topic_id", "request_id", "requested_at_ms", "trace_context")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    request_id: str
    requested_at_ms: int
    trace_context: TraceContext
    def __init__(self, topic_id: _Optional[str] = ..., request_id: _Optional[str] = ..., requested_at_ms: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ...) -> None: ...

class ReassignmentIntent(_message.Message):
    __slots__ = ("target_replicas", "cancel", "request_id", "requested_at_ms", "trace_context")
    TARGET_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    target_replicas: _containers.RepeatedScalarFieldContainer[int]
    cancel: bool
    request_id: str
    requested_at_ms: int
    trace_context: TraceContext
    def __init__(self, target_replicas: _Optional[_Iterable[int]] = ..., cancel: _Optional[bool] = ..., request_id: _Optional[str] = ..., requested_at_ms: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ...) -> None: ...

class ElectionIntent(_message.Message):
    __slots__ = ("election_type", "partitions", "request_id", "requested_at_ms", "trace_context")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    election_type: _common_pb2.ElectionType
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    request_id: str
    requested_at_ms: int
    trace_context: TraceContext
    def __init__(self, election_type: _Optional[_Union[_common_pb2.ElectionType, str]] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ..., request_id: _Optional[str] = ..., requested_at_ms: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ...) -> None: ...

class AdminResult(_message.Message):
    __slots__ = ("request_id", "operation", "results", "completed_at_ms", "controller_epoch")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    operation: AdminOperation
    results: _containers.RepeatedCompositeFieldContainer[_common_pb2.PartitionError]
    completed_at_ms: int
    controller_epoch: int
    def __init__(self, request_id: _Optional[str] = ..., operation: _Optional[_Union[AdminOperation, str]] = ..., results: _Optional[_Iterable[_Union[_common_pb2.PartitionError, _Mapping]]] = ..., completed_at_ms: _Optional[int] = ..., controller_epoch: _Optional[int] = ...) -> None: ...

class ConfigEntries(_message.Message):
    __slots__ = ("entries",)
    class EntriesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.ScalarMap[str, str]
    def __init__(self, entries: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ProducerIdBlock(_message.Message):
    __slots__ = ("broker_id", "first_producer_id", "size")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    first_producer_id: int
    size: int
    def __init__(self, broker_id: _Optional[int] = ..., first_producer_id: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...
