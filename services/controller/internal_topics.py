"""Internal topics the controller creates when a broker first needs one (``__consumer_offsets``).

Kafka's brokers auto-create ``__consumer_offsets`` on the first FindCoordinator; here the broker
asks the active controller (``CreateInternalTopic``), which writes the topic as admin's
CreateTopics does — the assignment over the live brokers (Kafka's placement, rack aware) and the
topic's configs, in one transaction that requires the topic key not to exist — and brings its
partitions online through the usual topic flow when its own watch sees the key. The replication
factor is ``--offsets-topic-replication-factor`` (3), or the number of live brokers if fewer.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping

from leasehold.assignment import BrokerMetadata, assign_replicas_to_brokers
from leasehold.common.v1 import common_pb2
from leasehold.etcd.client import EtcdClient, cmp_create_revision, op_put
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's offsets.topic.segment.bytes and the compaction the topic needs.
OFFSETS_TOPIC_CONFIGS: Mapping[str, str] = {
    "cleanup.policy": "compact",
    "segment.bytes": str(100 * 1024 * 1024),
}


class InternalTopics:
    """Creates internal topics; ``live_brokers()`` gives (id, rack) of the brokers that may
    hold replicas (the active controller's context)."""

    def __init__(
        self,
        client: EtcdClient,
        keyspace: Keyspace,
        live_brokers: Callable[[], list[BrokerMetadata]],
        num_partitions: int,
        replication_factor: int,
    ) -> None:
        self._client = client
        self._keyspace = keyspace
        self._live_brokers = live_brokers
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor

    async def create(self, topic: str) -> tuple[int, str, bool]:
        """(error code, message, created) for a request to create ``topic``."""
        if topic != OFFSETS_TOPIC:
            return common_pb2.ERROR_CODE_INVALID_REQUEST, "not an internal topic", False
        ks = self._keyspace
        if await self._client.get(ks.topic(topic)) is not None:
            return common_pb2.ERROR_CODE_NONE, "", False
        brokers = sorted(self._live_brokers(), key=lambda b: b.id)
        if not brokers:
            return common_pb2.ERROR_CODE_COORDINATOR_NOT_AVAILABLE, "no live brokers", False
        rf = min(self.replication_factor, len(brokers))
        assignment = assign_replicas_to_brokers(brokers, self.num_partitions, rf)
        value = metadata_pb2.TopicAssignment(
            topic_id=str(uuid.uuid4()), created_at_ms=time.time_ns() // 1_000_000
        )
        for partition, replicas in assignment.items():
            value.partitions[partition].replicas.extend(replicas)
        configs = metadata_pb2.ConfigEntries(entries=OFFSETS_TOPIC_CONFIGS)
        result = await self._client.txn(
            [
                cmp_create_revision(ks.topic(topic), "=", 0),
                cmp_create_revision(ks.delete_topic(topic), "=", 0),
            ],
            [
                op_put(ks.topic_config(topic), configs.SerializeToString()),
                op_put(ks.topic(topic), value.SerializeToString()),
            ],
        )
        if result.succeeded:
            log.info("created %s: %d partitions, replication factor %d", topic, len(assignment), rf)
        return common_pb2.ERROR_CODE_NONE, "", result.succeeded
