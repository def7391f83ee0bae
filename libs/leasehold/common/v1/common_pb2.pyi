from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_NONE: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_SERVER_ERROR: _ClassVar[ErrorCode]
    ERROR_CODE_OFFSET_OUT_OF_RANGE: _ClassVar[ErrorCode]
    ERROR_CODE_CORRUPT_MESSAGE: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION: _ClassVar[ErrorCode]
    ERROR_CODE_LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_LEADER_OR_FOLLOWER: _ClassVar[ErrorCode]
    ERROR_CODE_REQUEST_TIMED_OUT: _ClassVar[ErrorCode]
    ERROR_CODE_BROKER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_REPLICA_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_MESSAGE_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_CONTROLLER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_OFFSET_METADATA_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_COORDINATOR_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_COORDINATOR: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TOPIC_EXCEPTION: _ClassVar[ErrorCode]
    ERROR_CODE_RECORD_LIST_TOO_LARGE: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_ENOUGH_REPLICAS: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REQUIRED_ACKS: _ClassVar[ErrorCode]
    ERROR_CODE_ILLEGAL_GENERATION: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_GROUP_ID: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_MEMBER_ID: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_TIMESTAMP: _ClassVar[ErrorCode]
    ERROR_CODE_TOPIC_ALREADY_EXISTS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_PARTITIONS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REPLICATION_FACTOR: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REPLICA_ASSIGNMENT: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_CONFIG: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_CONTROLLER: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_REQUEST: _ClassVar[ErrorCode]
    ERROR_CODE_POLICY_VIOLATION: _ClassVar[ErrorCode]
    ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_PRODUCER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_KAFKA_STORAGE_ERROR: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_PRODUCER_ID: _ClassVar[ErrorCode]
    ERROR_CODE_REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_NON_EMPTY_GROUP: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_ID_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_FETCH_SESSION_ID_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_FETCH_SESSION_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_TOPIC_DELETION_DISABLED: _ClassVar[ErrorCode]
    ERROR_CODE_FENCED_LEADER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_LEADER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_BROKER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_GROUP_MAX_SIZE_REACHED: _ClassVar[ErrorCode]
    ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_ELECTION_NOT_NEEDED: _ClassVar[ErrorCode]
    ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_RECORD: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_UPDATE_VERSION: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN_TOPIC_ID: _ClassVar[ErrorCode]
    ERROR_CODE_INCONSISTENT_TOPIC_ID: _ClassVar[ErrorCode]
    ERROR_CODE_INELIGIBLE_REPLICA: _ClassVar[ErrorCode]
    ERROR_CODE_NEW_LEADER_ELECTED: _ClassVar[ErrorCode]
    ERROR_CODE_FENCED_MEMBER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_UNRELEASED_INSTANCE_ID: _ClassVar[ErrorCode]
    ERROR_CODE_UNSUPPORTED_ASSIGNOR: _ClassVar[ErrorCode]
    ERROR_CODE_STALE_MEMBER_EPOCH: _ClassVar[ErrorCode]
    ERROR_CODE_TOPIC_DELETION_IN_PROGRESS: _ClassVar[ErrorCode]
    ERROR_CODE_BROKER_SHUTTING_DOWN: _ClassVar[ErrorCode]
    ERROR_CODE_METADATA_DIGEST_MISMATCH: _ClassVar[ErrorCode]
    ERROR_CODE_OPERATION_NOT_FOUND: _ClassVar[ErrorCode]

class LeaderRecoveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEADER_RECOVERY_STATE_UNSPECIFIED: _ClassVar[LeaderRecoveryState]
    LEADER_RECOVERY_STATE_RECOVERED: _ClassVar[LeaderRecoveryState]
    LEADER_RECOVERY_STATE_RECOVERING: _ClassVar[LeaderRecoveryState]

class ElectionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELECTION_TYPE_UNSPECIFIED: _ClassVar[ElectionType]
    ELECTION_TYPE_PREFERRED: _ClassVar[ElectionType]
    ELECTION_TYPE_UNCLEAN: _ClassVar[ElectionType]
ERROR_CODE_NONE: ErrorCode
ERROR_CODE_UNKNOWN_SERVER_ERROR: ErrorCode
ERROR_CODE_OFFSET_OUT_OF_RANGE: ErrorCode
ERROR_CODE_CORRUPT_MESSAGE: ErrorCode
ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION: ErrorCode
ERROR_CODE_LEADER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_NOT_LEADER_OR_FOLLOWER: ErrorCode
ERROR_CODE_REQUEST_TIMED_OUT: ErrorCode
ERROR_CODE_BROKER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_REPLICA_NOT_AVAILABLE: ErrorCode
ERROR_CODE_MESSAGE_TOO_LARGE: ErrorCode
ERROR_CODE_STALE_CONTROLLER_EPOCH: ErrorCode
ERROR_CODE_OFFSET_METADATA_TOO_LARGE: ErrorCode
ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS: ErrorCode
ERROR_CODE_COORDINATOR_NOT_AVAILABLE: ErrorCode
ERROR_CODE_NOT_COORDINATOR: ErrorCode
ERROR_CODE_INVALID_TOPIC_EXCEPTION: ErrorCode
ERROR_CODE_RECORD_LIST_TOO_LARGE: ErrorCode
ERROR_CODE_NOT_ENOUGH_REPLICAS: ErrorCode
ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode
ERROR_CODE_INVALID_REQUIRED_ACKS: ErrorCode
ERROR_CODE_ILLEGAL_GENERATION: ErrorCode
ERROR_CODE_INVALID_GROUP_ID: ErrorCode
ERROR_CODE_UNKNOWN_MEMBER_ID: ErrorCode
ERROR_CODE_INVALID_TIMESTAMP: ErrorCode
ERROR_CODE_TOPIC_ALREADY_EXISTS: ErrorCode
ERROR_CODE_INVALID_PARTITIONS: ErrorCode
ERROR_CODE_INVALID_REPLICATION_FACTOR: ErrorCode
ERROR_CODE_INVALID_REPLICA_ASSIGNMENT: ErrorCode
ERROR_CODE_INVALID_CONFIG: ErrorCode
ERROR_CODE_NOT_CONTROLLER: ErrorCode
ERROR_CODE_INVALID_REQUEST: ErrorCode
ERROR_CODE_POLICY_VIOLATION: ErrorCode
ERROR_CODE_OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode
ERROR_CODE_INVALID_PRODUCER_EPOCH: ErrorCode
ERROR_CODE_KAFKA_STORAGE_ERROR: ErrorCode
ERROR_CODE_UNKNOWN_PRODUCER_ID: ErrorCode
ERROR_CODE_REASSIGNMENT_IN_PROGRESS: ErrorCode
ERROR_CODE_NON_EMPTY_GROUP: ErrorCode
ERROR_CODE_GROUP_ID_NOT_FOUND: ErrorCode
ERROR_CODE_FETCH_SESSION_ID_NOT_FOUND: ErrorCode
ERROR_CODE_INVALID_FETCH_SESSION_EPOCH: ErrorCode
ERROR_CODE_TOPIC_DELETION_DISABLED: ErrorCode
ERROR_CODE_FENCED_LEADER_EPOCH: ErrorCode
ERROR_CODE_UNKNOWN_LEADER_EPOCH: ErrorCode
ERROR_CODE_STALE_BROKER_EPOCH: ErrorCode
ERROR_CODE_PREFERRED_LEADER_NOT_AVAILABLE: ErrorCode
ERROR_CODE_GROUP_MAX_SIZE_REACHED: ErrorCode
ERROR_CODE_ELIGIBLE_LEADERS_NOT_AVAILABLE: ErrorCode
ERROR_CODE_ELECTION_NOT_NEEDED: ErrorCode
ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS: ErrorCode
ERROR_CODE_INVALID_RECORD: ErrorCode
ERROR_CODE_INVALID_UPDATE_VERSION: ErrorCode
ERROR_CODE_UNKNOWN_TOPIC_ID: ErrorCode
ERROR_CODE_INCONSISTENT_TOPIC_ID: ErrorCode
ERROR_CODE_INELIGIBLE_REPLICA: ErrorCode
ERROR_CODE_NEW_LEADER_ELECTED: ErrorCode
ERROR_CODE_FENCED_MEMBER_EPOCH: ErrorCode
ERROR_CODE_UNRELEASED_INSTANCE_ID: ErrorCode
ERROR_CODE_UNSUPPORTED_ASSIGNOR: ErrorCode
ERROR_CODE_STALE_MEMBER_EPOCH: ErrorCode
ERROR_CODE_TOPIC_DELETION_IN_PROGRESS: ErrorCode
ERROR_CODE_BROKER_SHUTTING_DOWN: ErrorCode
ERROR_CODE_METADATA_DIGEST_MISMATCH: ErrorCode
ERROR_CODE_OPERATION_NOT_FOUND: ErrorCode
LEADER_RECOVERY_STATE_UNSPECIFIED: LeaderRecoveryState
LEADER_RECOVERY_STATE_RECOVERED: LeaderRecoveryState
LEADER_RECOVERY_STATE_RECOVERING: LeaderRecoveryState
ELECTION_TYPE_UNSPECIFIED: ElectionType
ELECTION_TYPE_PREFERRED: ElectionType
ELECTION_TYPE_UNCLEAN: ElectionType

class TopicPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class PartitionError(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[_Union[ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class BrokerEndpoint(_message.Message):
    __slots__ = ("broker_id", "host", "port", "rack")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    host: str
    port: int
    rack: str
    def __init__(self, broker_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...

class LeaderIdAndEpoch(_message.Message):
    __slots__ = ("leader_id", "leader_epoch")
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    leader_id: int
    leader_epoch: int
    def __init__(self, leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
