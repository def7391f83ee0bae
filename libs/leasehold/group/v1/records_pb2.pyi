from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OffsetCommitKey(_message.Message):
    __slots__ = ("group_id", "topic", "partition")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    topic: str
    partition: int
    def __init__(self, group_id: _Optional[str] = ..., topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class OffsetCommitValue(_message.Message):
    __slots__ = ("offset", "leader_epoch", "metadata", "commit_timestamp_ms")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    def __init__(self, offset: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ..., commit_timestamp_ms: _Optional[int] = ...) -> None: ...

class ConsumerGroupMetadataKey(_message.Message):
    __slots__ = ("group_id",)
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    def __init__(self, group_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupMetadataValue(_message.Message):
    __slots__ = ("epoch",)
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    def __init__(self, epoch: _Optional[int] = ...) -> None: ...

class ConsumerGroupPartitionMetadataKey(_message.Message):
    __slots__ = ("group_id",)
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    def __init__(self, group_id: _Optional[str] = ...) -> None: ...

class TopicMetadata(_message.Message):
    __slots__ = ("topic_name", "topic_id", "num_partitions")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    num_partitions: int
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., num_partitions: _Optional[int] = ...) -> None: ...

class ConsumerGroupPartitionMetadataValue(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ...) -> None: ...

class ConsumerGroupMemberMetadataKey(_message.Message):
    __slots__ = ("group_id", "member_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupMemberMetadataValue(_message.Message):
    __slots__ = ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names", "rebalance_timeout_ms", "server_assignor")
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SERVER_ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    rack_id: str
    client_id: str
    client_host: str
    subscribed_topic_names: _containers.RepeatedScalarFieldContainer[str]
    rebalance_timeout_ms: int
    server_assignor: str
    def __init__(self, instance_id: _Optional[str] = ..., rack_id: _Optional[str] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., subscribed_topic_names: _Optional[_Iterable[str]] = ..., rebalance_timeout_ms: _Optional[int] = ..., server_assignor: _Optional[str] = ...) -> None: ...

class ConsumerGroupTargetAssignmentMetadataKey(_message.Message):
    __slots__ = ("group_id",)
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    def __init__(self, group_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupTargetAssignmentMetadataValue(_message.Message):
    __slots__ = ("assignment_epoch",)
    ASSIGNMENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    assignment_epoch: int
    def __init__(self, assignment_epoch: _Optional[int] = ...) -> None: ...

class RecordPartitions(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class ConsumerGroupTargetAssignmentMemberKey(_message.Message):
    __slots__ = ("group_id", "member_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupTargetAssignmentMemberValue(_message.Message):
    __slots__ = ("topic_partitions",)
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_partitions: _containers.RepeatedCompositeFieldContainer[RecordPartitions]
    def __init__(self, topic_partitions: _Optional[_Iterable[_Union[RecordPartitions, _Mapping]]] = ...) -> None: ...

class ConsumerGroupCurrentMemberAssignmentKey(_message.Message):
    __slots__ = ("group_id", "member_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupCurrentMemberAssignmentValue(_message.Message):
    __slots__ = ("member_epoch", "previous_member_epoch", "state", "assigned_partitions", "partitions_pending_revocation")
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_PENDING_REVOCATION_FIELD_NUMBER: _ClassVar[int]
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: _containers.RepeatedCompositeFieldContainer[RecordPartitions]
    partitions_pending_revocation: _containers.RepeatedCompositeFieldContainer[RecordPartitions]
    def __init__(self, member_epoch: _Optional[int] = ..., previous_member_epoch: _Optional[int] = ..., state: _Optional[int] = ..., assigned_partitions: _Optional[_Iterable[_Union[RecordPartitions, _Mapping]]] = ..., partitions_pending_revocation: _Optional[_Iterable[_Union[RecordPartitions, _Mapping]]] = ...) -> None: ...
