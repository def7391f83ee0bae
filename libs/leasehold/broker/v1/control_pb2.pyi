from leasehold.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ControlRequest(_message.Message):
    __slots__ = ("sequence", "leader_and_isr", "update_metadata", "stop_replica", "trace_context")
    class TraceContextEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LEADER_AND_ISR_FIELD_NUMBER: _ClassVar[int]
    UPDATE_METADATA_FIELD_NUMBER: _ClassVar[int]
    STOP_REPLICA_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    leader_and_isr: LeaderAndIsrRequest
    update_metadata: UpdateMetadataRequest
    stop_replica: StopReplicaRequest
    trace_context: _containers.ScalarMap[str, str]
    def __init__(self, sequence: _Optional[int] = ..., leader_and_isr: _Optional[_Union[LeaderAndIsrRequest, _Mapping]] = ..., update_metadata: _Optional[_Union[UpdateMetadataRequest, _Mapping]] = ..., stop_replica: _Optional[_Union[StopReplicaRequest, _Mapping]] = ..., trace_context: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ControlResponse(_message.Message):
    __slots__ = ("sequence", "leader_and_isr", "update_metadata", "stop_replica", "status_code", "status_message")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LEADER_AND_ISR_FIELD_NUMBER: _ClassVar[int]
    UPDATE_METADATA_FIELD_NUMBER: _ClassVar[int]
    STOP_REPLICA_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    leader_and_isr: LeaderAndIsrResponse
    update_metadata: UpdateMetadataResponse
    stop_replica: StopReplicaResponse
    status_code: int
    status_message: str
    def __init__(self, sequence: _Optional[int] = ..., leader_and_isr: _Optional[_Union[LeaderAndIsrResponse, _Mapping]] = ..., update_metadata: _Optional[_Union[UpdateMetadataResponse, _Mapping]] = ..., stop_replica: _Optional[_Union[StopReplicaResponse, _Mapping]] = ..., status_code: _Optional[int] = ..., status_message: _Optional[str] = ...) -> None: ...

class LeaderAndIsrPartitionState(_message.Message):
    __slots__ = ("topic", "topic_id", "partition", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "adding_replicas", "removing_replicas", "is_new", "leader_recovery_state")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    IS_NEW_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    topic_id: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    is_new: bool
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    def __init__(self, topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., is_new: _Optional[bool] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ...) -> None: ...

class LeaderAndIsrRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states", "live_leaders", "replication_throttle_bytes_per_sec", "nothing_queued")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_LEADERS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_THROTTLE_BYTES_PER_SEC_FIELD_NUMBER: _ClassVar[int]
    NOTHING_QUEUED_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrPartitionState]
    live_leaders: _containers.RepeatedCompositeFieldContainer[_common_pb2.BrokerEndpoint]
    replication_throttle_bytes_per_sec: int
    nothing_queued: bool
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[LeaderAndIsrPartitionState, _Mapping]]] = ..., live_leaders: _Optional[_Iterable[_Union[_common_pb2.BrokerEndpoint, _Mapping]]] = ..., replication_throttle_bytes_per_sec: _Optional[int] = ..., nothing_queued: _Optional[bool] = ...) -> None: ...

class LeaderAndIsrResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "partition_errors")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    partition_errors: _containers.RepeatedCompositeFieldContainer[_common_pb2.PartitionError]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., partition_errors: _Optional[_Iterable[_Union[_common_pb2.PartitionError, _Mapping]]] = ...) -> None: ...

class StopReplicaPartitionState(_message.Message):
    __slots__ = ("topic", "partition", "leader_epoch", "delete_partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DELETE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., delete_partition: _Optional[bool] = ...) -> None: ...

class StopReplicaRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states", "nothing_queued")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    NOTHING_QUEUED_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[StopReplicaPartitionState]
    nothing_queued: bool
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[StopReplicaPartitionState, _Mapping]]] = ..., nothing_queued: _Optional[bool] = ...) -> None: ...

class StopReplicaResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "partition_errors")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    partition_errors: _containers.RepeatedCompositeFieldContainer[_common_pb2.PartitionError]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., partition_errors: _Optional[_Iterable[_Union[_common_pb2.PartitionError, _Mapping]]] = ...) -> None: ...

class UpdateMetadataPartitionState(_message.Message):
    __slots__ = ("topic", "topic_id", "partition", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "offline_replicas")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    topic_id: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class UpdateMetadataRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states", "live_brokers", "deleted_topics", "controller_host", "controller_port", "metadata_digest", "live_brokers_base", "removed_brokers", "nothing_queued")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_FIELD_NUMBER: _ClassVar[int]
    DELETED_TOPICS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_HOST_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_PORT_FIELD_NUMBER: _ClassVar[int]
    METADATA_DIGEST_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_BASE_FIELD_NUMBER: _ClassVar[int]
    REMOVED_BROKERS_FIELD_NUMBER: _ClassVar[int]
    NOTHING_QUEUED_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[UpdateMetadataPartitionState]
    live_brokers: _containers.RepeatedCompositeFieldContainer[_common_pb2.BrokerEndpoint]
    deleted_topics: _containers.RepeatedScalarFieldContainer[str]
    controller_host: str
    controller_port: int
    metadata_digest: bytes
    live_brokers_base: bytes
    removed_brokers: _containers.RepeatedScalarFieldContainer[int]
    nothing_queued: bool
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[UpdateMetadataPartitionState, _Mapping]]] = ..., live_brokers: _Optional[_Iterable[_Union[_common_pb2.BrokerEndpoint, _Mapping]]] = ..., deleted_topics: _Optional[_Iterable[str]] = ..., controller_host: _Optional[str] = ..., controller_port: _Optional[int] = ..., metadata_digest: _Optional[bytes] = ..., live_brokers_base: _Optional[bytes] = ..., removed_brokers: _Optional[_Iterable[int]] = ..., nothing_queued: _Optional[bool] = ...) -> None: ...

class UpdateMetadataResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...
