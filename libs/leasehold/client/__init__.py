"""The Python SDK: admin operations, producing and consuming, over Leasehold's gRPC APIs.

- :class:`AdminClient` (async) and :class:`SyncAdminClient`: every AdminService call.
- :class:`Producer`: batching per partition, acks, retries on leadership changes.
- :class:`Consumer`: explicitly assigned partitions from chosen offsets, following leaders.
- :class:`GroupConsumer`: a consumer group member: partitions assigned by the coordinator,
  committed offsets (auto or manual), resumed after a restart; :class:`GroupClient` for the
  group calls themselves (commit, committed offsets, list, describe, delete).
- :class:`ClusterMetadata`: broker discovery and partition leaders, shared by both.
"""

from leasehold.client.admin import AdminClient, SyncAdminClient, default_admin_address
from leasehold.client.consumer import EARLIEST, LATEST, Consumer, ConsumerRecord
from leasehold.client.errors import error_from_code, error_from_rpc
from leasehold.client.group_consumer import GroupConsumer
from leasehold.client.groups import Committed, GroupClient
from leasehold.client.metadata import ClusterMetadata, PartitionLeader
from leasehold.client.partitioner import DefaultPartitioner, key_partition, murmur2
from leasehold.client.producer import Producer, RecordMetadata

__all__ = [
    "EARLIEST",
    "LATEST",
    "AdminClient",
    "ClusterMetadata",
    "Committed",
    "Consumer",
    "ConsumerRecord",
    "DefaultPartitioner",
    "GroupClient",
    "GroupConsumer",
    "PartitionLeader",
    "Producer",
    "RecordMetadata",
    "SyncAdminClient",
    "default_admin_address",
    "error_from_code",
    "error_from_rpc",
    "key_partition",
    "murmur2",
]
