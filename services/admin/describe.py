"""ListTopics, DescribeTopics and DescribeCluster: read-only views of one etcd revision.

Everything a description shows comes from a single snapshot, so leaders, ISRs and epochs are
mutually consistent. The partition epoch is the state key's mod revision (what LeaderAndIsr and
AlterPartition carry); a partition the controller has not brought online yet shows leader -1.
The active controller is the oldest election candidate, the others stand by in succession order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from leasehold.common.v1 import common_pb2
from services.admin.snapshot import NO_LEADER, Broker, ControllerView, TopicView
from services.admin.store import AdminStore, Want
from services.admin.validate import check_topic_names, no_duplicates, require_topic


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    partition_epoch: int = 0
    controller_epoch: int = 0
    leader_recovery_state: int = common_pb2.LEADER_RECOVERY_STATE_UNSPECIFIED


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str
    partitions: tuple[PartitionInfo, ...]
    configs: Mapping[str, str]
    marked_for_deletion: bool


@dataclass(frozen=True)
class TopicListing:
    name: str
    topic_id: str
    partition_count: int
    replication_factor: int
    marked_for_deletion: bool


@dataclass(frozen=True)
class ClusterInfo:
    cluster_id: str
    controller: ControllerView | None
    brokers: tuple[Broker, ...]
    standby_controller_ids: tuple[int, ...]


def describe_partition(topic: TopicView, partition: int, live: Collection[int]) -> PartitionInfo:
    replicas = topic.partitions[partition]
    view = topic.states.get(partition)
    marked = set(view.state.offline_replicas) if view is not None else set()
    offline = tuple(r for r in replicas if r not in live or r in marked)
    if view is None:
        return PartitionInfo(partition, NO_LEADER, -1, replicas, (), offline_replicas=offline)
    state = view.state
    return PartitionInfo(
        partition=partition,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        replicas=replicas,
        isr=tuple(state.isr),
        adding_replicas=tuple(state.adding_replicas),
        removing_replicas=tuple(state.removing_replicas),
        offline_replicas=offline,
        partition_epoch=view.epoch,
        controller_epoch=state.controller_epoch,
        leader_recovery_state=state.leader_recovery_state,
    )


def describe_topic(topic: TopicView, live: Collection[int]) -> TopicInfo:
    return TopicInfo(
        name=topic.name,
        topic_id=topic.topic_id,
        partitions=tuple(describe_partition(topic, p, live) for p in topic.partitions),
        configs=MappingProxyType(dict(sorted(topic.configs.items()))),
        marked_for_deletion=topic.marked_for_deletion,
    )


def list_topic(topic: TopicView) -> TopicListing:
    return TopicListing(
        name=topic.name,
        topic_id=topic.topic_id,
        partition_count=len(topic.partitions),
        replication_factor=topic.replication_factor,
        marked_for_deletion=topic.marked_for_deletion,
    )


class Describer:
    def __init__(self, store: AdminStore) -> None:
        self.store = store

    async def list_topics(self) -> list[TopicListing]:
        snapshot = await self.store.snapshot(Want(topics=True, deletions=True))
        return [list_topic(t) for t in snapshot.topics.values()]

    async def describe_topics(self, names: Sequence[str]) -> list[TopicInfo]:
        """The named topics (every topic when ``names`` is empty), in the order asked."""
        no_duplicates(names, "Describe topics request contains duplicate topics")
        check_topic_names(names)
        want = Want(
            brokers=True,
            topics=not names,
            topic_names=tuple(names) if names else None,
            topic_configs=True,
            deletions=True,
        )
        snapshot = await self.store.snapshot(want)
        live = set(snapshot.brokers)
        chosen = [require_topic(snapshot, n) for n in names] or list(snapshot.topics.values())
        return [describe_topic(t, live) for t in chosen]

    async def describe_cluster(self) -> ClusterInfo:
        snapshot = await self.store.snapshot(Want(brokers=True, controllers=True))
        return ClusterInfo(
            cluster_id=self.store.keyspace.cluster_id,
            controller=snapshot.controller,
            brokers=tuple(snapshot.brokers.values()),
            standby_controller_ids=snapshot.standby_controller_ids,
        )
