"""The broker's metadata cache: what the controller last told it through UpdateMetadata.

Clients' Metadata calls are answered from here (topics, partitions, leaders, ISRs, live broker
endpoints, the active controller), and the replica manager uses it to find a new leader's
endpoint and to tell "topic unknown" from "not a replica here". Updates are incremental per
partition, as in Kafka's ZkMetadataCache: a request lists the partitions that changed, the full
set of live brokers, and topics that are gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from leasehold import metadata_digest
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.broker_agent.model import (
    LEADER_DURING_DELETE,
    NO_LEADER,
    Code,
    Endpoint,
    MetadataPartition,
    TopicPartition,
    UpdateMetadata,
)


class PartitionView(NamedTuple):
    """One partition as a Metadata answer lists it (a named tuple: an answer after a
    failure builds thousands at once)."""

    partition: int
    error: Code
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicView:
    name: str
    error: Code
    topic_id: str
    partitions: tuple[PartitionView, ...]


@dataclass(frozen=True)
class MetadataView:
    """A Metadata answer, before translation to protobuf."""

    brokers: tuple[Endpoint, ...]
    controller_id: int
    controller_epoch: int
    topics: tuple[TopicView, ...]


class MetadataCache:
    """The cluster as the controller last described it.

    Clients poll Metadata far more often than the controller changes it, and a 10,000-partition
    answer is tens of milliseconds of the event loop to build even from pieces
    (``metadata_wire``), so each topic's answer is kept until an update touches that topic or
    changes the set of live brokers (leader availability and offline replicas depend on it).
    """

    def __init__(self) -> None:
        self._brokers: dict[int, Endpoint] = {}
        # Per live broker its ``metadata_digest.endpoint_hash``, and their sum: the digest an
        # UpdateMetadata naming the live brokers as a change is checked against.
        self._broker_hashes: dict[int, int] = {}
        self._brokers_digest = 0
        self._partitions: dict[str, dict[int, MetadataPartition]] = {}
        # Per cached partition its ``metadata_digest.state_hash``, and their sum: the digest a
        # new controller's digest-only UpdateMetadata is checked against.
        self._hashes: dict[str, dict[int, int]] = {}
        self._digest = 0
        self._topic_ids: dict[str, str] = {}
        self._views: dict[str, TopicView] = {}
        self.controller_id = -1
        self.controller_epoch = -1
        self.controller_endpoint: tuple[str, int] | None = None

    # ------------------------------------------------------------------ updates

    def digest(self) -> bytes:
        """The digest of the cached partition states (``leasehold.metadata_digest``)."""
        return metadata_digest.to_bytes(self._digest)

    def brokers_digest(self) -> bytes:
        """The digest of the live brokers (``UpdateMetadataRequest.live_brokers_base``)."""
        return metadata_digest.to_bytes(self._brokers_digest)

    def _update_brokers(self, request: UpdateMetadata) -> None:
        """The live brokers: the request's whole set, or its change applied to ours (the caller
        has checked ``brokers_digest()`` against its base)."""
        hashes = request.endpoint_hashes
        if len(hashes) != len(request.live_brokers):
            hashes = tuple(endpoint_hash(b) for b in request.live_brokers)
        if request.live_brokers_base is None:
            brokers = {b.broker_id: b for b in request.live_brokers}
            broker_hashes = {
                b.broker_id: h for b, h in zip(request.live_brokers, hashes, strict=True)
            }
        elif request.live_brokers or request.removed_brokers:
            brokers, broker_hashes = dict(self._brokers), dict(self._broker_hashes)
            for broker_id in request.removed_brokers:
                brokers.pop(broker_id, None)
                broker_hashes.pop(broker_id, None)
            for b, h in zip(request.live_brokers, hashes, strict=True):
                brokers[b.broker_id] = b
                broker_hashes[b.broker_id] = h
        else:
            return  # unchanged
        if brokers != self._brokers:
            self._views.clear()
        self._brokers, self._broker_hashes = brokers, broker_hashes
        self._brokers_digest = metadata_digest.combine(sum(broker_hashes.values()))

    def update(self, request: UpdateMetadata) -> list[TopicPartition]:
        """Apply an accepted UpdateMetadata; returns the partitions it deleted.

        A digest-only request is applied only by the caller that has checked ``digest()``
        against it: it then changes the controller and the live brokers, nothing else."""
        self._update_brokers(request)
        self.controller_id = request.controller_id
        self.controller_epoch = request.controller_epoch
        if request.controller_host and request.controller_port:
            self.controller_endpoint = (request.controller_host, request.controller_port)
        deleted: list[TopicPartition] = []
        hashes = request.state_hashes
        if len(hashes) != len(request.partitions):
            hashes = tuple(state_hash(s) for s in request.partitions)
        digest = self._digest
        # A request lists a topic's partitions together: look the topic up once per run.
        topic: str | None = None
        by_index: dict[int, MetadataPartition] = {}
        hash_of: dict[int, int] = {}
        for state, new_hash in zip(request.partitions, hashes, strict=True):
            if state.topic != topic:
                topic = state.topic
                self._views.pop(topic, None)
                by_index = self._partitions.setdefault(topic, {})
                hash_of = self._hashes.setdefault(topic, {})
            old_hash = hash_of.pop(state.partition, 0)
            if state.leader == LEADER_DURING_DELETE:
                digest -= old_hash
                if by_index.pop(state.partition, None) is not None:
                    deleted.append(state.tp)
                if not by_index:
                    self._digest = digest
                    self._forget(topic)
                    digest = self._digest
                    topic = None  # a later partition of it starts the topic afresh
                continue
            by_index[state.partition] = state
            hash_of[state.partition] = new_hash
            digest += new_hash - old_hash
            if state.topic_id:
                self._topic_ids[topic] = state.topic_id
        self._digest = metadata_digest.combine(digest)
        for topic in request.deleted_topics:
            gone = sorted(self._partitions.get(topic, {}))
            deleted.extend(TopicPartition(topic, p) for p in gone)
            self._forget(topic)
        return deleted

    def _forget(self, topic: str) -> None:
        gone = self._hashes.pop(topic, {})
        self._digest = metadata_digest.combine(self._digest, removed=sum(gone.values()))
        self._partitions.pop(topic, None)
        self._topic_ids.pop(topic, None)
        self._views.pop(topic, None)

    # ------------------------------------------------------------------ queries

    def alive_broker(self, broker_id: int) -> Endpoint | None:
        return self._brokers.get(broker_id)

    def alive_brokers(self) -> list[Endpoint]:
        return [self._brokers[b] for b in sorted(self._brokers)]

    def partition(self, tp: TopicPartition) -> MetadataPartition | None:
        return self._partitions.get(tp.topic, {}).get(tp.partition)

    def cached_partitions(self) -> int:
        """How many partitions the cache holds, of every topic."""
        return sum(len(by_index) for by_index in self._partitions.values())

    def contains(self, tp: TopicPartition) -> bool:
        return self.partition(tp) is not None

    def has_topic(self, topic: str) -> bool:
        return topic in self._partitions

    def topics(self) -> list[str]:
        return sorted(self._partitions)

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` has, None when it is not known."""
        found = self._partitions.get(topic)
        return len(found) if found else None

    def describe(self, topics: list[str] | None) -> MetadataView:
        """Answer a Metadata request: every topic when ``topics`` is None."""
        names = self.topics() if topics is None else list(dict.fromkeys(topics))
        views = []
        for name in names:
            view = self._views.get(name)
            if view is None:
                view = self._topic_view(name)
            views.append(view)
        return MetadataView(
            brokers=tuple(self.alive_brokers()),
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            topics=tuple(views),
        )

    def _topic_view(self, name: str) -> TopicView:
        by_index = self._partitions.get(name)
        if by_index is None:
            return TopicView(name, Code.UNKNOWN_TOPIC_OR_PARTITION, "", ())
        # What liveness makes of a partition depends only on its leader, replicas and offline
        # replicas: worked out once per distinct triple (a topic has a handful), and the views
        # built positionally (``PartitionView``'s keyword constructor was half their cost).
        shown: dict[tuple, tuple[Code, int, tuple[int, ...]]] = {}
        new = tuple.__new__
        parts = []
        for p in sorted(by_index):
            state = by_index[p]
            key = (state.leader, state.replicas, state.offline_replicas)
            seen = shown.get(key)
            if seen is None:
                seen = shown[key] = self._liveness(state)
            error, leader, offline = seen
            parts.append(
                new(
                    PartitionView,
                    (
                        state.partition,
                        error,
                        leader,
                        state.leader_epoch,
                        state.replicas,
                        state.isr,
                        offline,
                    ),
                )
            )
        view = TopicView(name, Code.NONE, self._topic_ids.get(name, ""), tuple(parts))
        self._views[name] = view
        return view

    def _liveness(self, state: MetadataPartition) -> tuple[Code, int, tuple[int, ...]]:
        """Error code, leader and offline replicas a Metadata answer shows for ``state``: no
        leader unless it is alive, and the dead replicas among the offline ones."""
        brokers = self._brokers
        leader_alive = state.leader != NO_LEADER and state.leader in brokers
        offline = state.offline_replicas
        down = [r for r in state.replicas if r not in brokers]
        if len(offline) > 1 or any(r not in offline for r in down):  # else already sorted
            offline = tuple(sorted(set(offline).union(down)))
        if leader_alive:
            return Code.NONE, state.leader, offline
        return Code.LEADER_NOT_AVAILABLE, NO_LEADER, offline


def endpoint_hash(endpoint: Endpoint) -> int:
    """``metadata_digest.endpoint_hash`` of an endpoint built in code, encoded as the controller
    encodes it."""
    encoded = common_pb2.BrokerEndpoint(
        broker_id=endpoint.broker_id, host=endpoint.host, port=endpoint.port, rack=endpoint.rack
    ).SerializeToString()
    return metadata_digest.endpoint_hash(encoded)


def state_hash(state: MetadataPartition) -> int:
    """``metadata_digest.state_hash`` of a state built in code, encoded as the controller
    encodes it (the decoder hashes the received encoding instead: ``convert``)."""
    encoded = control_pb2.UpdateMetadataPartitionState(
        topic=state.topic,
        topic_id=state.topic_id,
        partition=state.partition,
        controller_epoch=state.controller_epoch,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        isr=state.isr,
        partition_epoch=state.partition_epoch,
        replicas=state.replicas,
        offline_replicas=state.offline_replicas,
    ).SerializeToString()
    return metadata_digest.state_hash(encoded)
