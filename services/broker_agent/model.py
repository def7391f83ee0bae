"""Domain values the broker agent passes between its layers.

The servicer turns protobuf requests into these frozen values and back, so everything below it
(replica manager, partitions, fetchers) is written and tested without protobuf messages. The error
codes are Kafka's (the numbers of ``leasehold.common.v1.ErrorCode``), named without the
``ERROR_CODE_`` prefix so code and tests read like Kafka's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from leasehold.common.v1 import common_pb2

Code = IntEnum(  # type: ignore[misc]
    "Code",
    {name.removeprefix("ERROR_CODE_"): value for name, value in common_pb2.ErrorCode.items()},
)
Code.__doc__ = "Kafka protocol error codes (leasehold.common.v1.ErrorCode without the prefix)."

# Sentinels of the control protocol (Kafka's values).
UNKNOWN_BROKER_EPOCH = -1
NO_LEADER = -1
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
CONSUMER_REPLICA_ID = -1
# ListOffsets special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


class TopicPartition(NamedTuple):
    """One partition of one topic, ordered by (topic, partition).

    A named tuple rather than a dataclass: a 10,000-partition LeaderAndIsr hashes and compares
    these hundreds of thousands of times (dicts of partitions, fetch states, specs), and tuple
    hashing and equality run in C where a dataclass's generated methods run Python per call.
    It equals the plain ``(topic, partition)`` tuple the log manager keys its maps by.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Endpoint:
    """Where a broker agent listens (BrokerEndpoint in the protos)."""

    broker_id: int
    host: str
    port: int
    rack: str = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class LeaderAndIsrPartition:
    """One partition's state as the controller decided it (seed 001 §2)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 0
    controller_epoch: int = 0
    topic_id: str = ""
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False
    leader_recovery_state: int = 0
    # Derived once here: the replica manager looks it up several times per partition.
    tp: TopicPartition = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tp", TopicPartition(self.topic, self.partition))


@dataclass(frozen=True)
class LeaderAndIsr:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]
    live_leaders: tuple[Endpoint, ...] = ()


@dataclass(frozen=True)
class StopReplicaPartition:
    topic: str
    partition: int
    leader_epoch: int = NO_EPOCH
    delete: bool = False

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class StopReplica:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]


class MetadataPartition(NamedTuple):
    """One partition as UpdateMetadata describes it; what clients' Metadata calls see.

    A named tuple: an UpdateMetadata at failover carries every partition of the cluster, and
    building 100,000 frozen dataclasses cost twice as much as these."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 0
    controller_epoch: int = 0
    topic_id: str = ""
    offline_replicas: tuple[int, ...] = ()

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class UpdateMetadata:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[MetadataPartition, ...]
    live_brokers: tuple[Endpoint, ...]
    deleted_topics: tuple[str, ...] = ()
    controller_host: str = ""
    controller_port: int = 0
    # ``leasehold.metadata_digest.state_hash`` of each partition's encoding, in order (the
    # decoder has the bytes at hand); empty when built in code, then the cache computes them.
    state_hashes: tuple[int, ...] = field(default=(), compare=False, repr=False)
    # A digest-only request (no partitions, no deleted topics): the cache must already hold
    # exactly the states with this digest (``leasehold.metadata_digest``); empty otherwise.
    metadata_digest: bytes = b""
    # Set: ``live_brokers`` joined or changed and ``removed_brokers`` left since the live set
    # with this digest, which the cache must hold; None: ``live_brokers`` is the whole set.
    live_brokers_base: bytes | None = None
    removed_brokers: tuple[int, ...] = ()
    # ``leasehold.metadata_digest.endpoint_hash`` of each of ``live_brokers``, in order (empty
    # when built in code: the cache computes them).
    endpoint_hashes: tuple[int, ...] = field(default=(), compare=False, repr=False)
    # ``partitions`` with their hashes cut by topic (``metadata_cache.topic_runs``), as the
    # decoder makes them; None when built in code, then the cache cuts them.
    topic_runs: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ControlResult:
    """A control request's answer: a whole-request error, or per-partition errors."""

    error: Code = Code.NONE
    message: str = ""
    partition_errors: tuple[tuple[TopicPartition, Code], ...] = ()

    def errors_by_partition(self) -> dict[TopicPartition, Code]:
        return dict(self.partition_errors)
