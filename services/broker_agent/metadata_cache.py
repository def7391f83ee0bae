"""The broker's metadata cache: what the controller last told it through UpdateMetadata.

Clients' Metadata calls are answered from here (topics, partitions, leaders, ISRs, live broker
endpoints, the active controller), and the replica manager uses it to find a new leader's
endpoint and to tell "topic unknown" from "not a replica here". Updates are incremental per
partition, as in Kafka's ZkMetadataCache: a request lists the partitions that changed, the full
set of live brokers, and topics that are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


# A topic's partitions are kept in blocks of this many consecutive indexes.
BLOCK_BITS = 6
_BLOCK_MASK = (1 << BLOCK_BITS) - 1


class TopicCache:
    """One topic as the cache holds it: its partition states and each one's digest hash, the
    hashes' sum, how many partitions there are, and its topic id. Never changed once built: an
    update builds the topic's next one (``apply_run``), so brokers whose caches received the
    same updates can share it (``SharedUpdates``).

    The partitions are kept in blocks of ``1 << BLOCK_BITS`` consecutive indexes (block number
    -> a list, None where a partition is not cached; hashes alike), so the next state copies
    the blocks an update touches, not the topic: a broker failure changes about three
    partitions in each topic of a thousand, and copying whole topics was most of a simulation
    process's CPU at a million partitions (and, as new objects, of its collector's)."""

    __slots__ = ("states", "hashes", "count", "digest", "topic_id")

    def __init__(
        self,
        states: dict[int, list[MetadataPartition | None]],
        hashes: dict[int, list[int]],
        count: int,
        digest: int,
        topic_id: str,
    ) -> None:
        self.states = states
        self.hashes = hashes
        self.count = count
        self.digest = digest  # the sum of ``hashes``, not reduced
        self.topic_id = topic_id

    def get(self, partition: int) -> MetadataPartition | None:
        block = self.states.get(partition >> BLOCK_BITS)
        if block is None:
            return None
        i = partition & _BLOCK_MASK
        return block[i] if i < len(block) else None

    def partitions(self) -> Iterator[MetadataPartition]:
        """Every partition's state, by index."""
        states = self.states
        for b in sorted(states):
            for state in states[b]:
                if state is not None:
                    yield state


class TopicRun(NamedTuple):
    """An UpdateMetadata's consecutive partition states of one topic, with their hashes."""

    topic: str
    states: tuple[MetadataPartition, ...]
    hashes: tuple[int, ...]


def topic_runs(
    states: tuple[MetadataPartition, ...], hashes: tuple[int, ...]
) -> tuple[TopicRun, ...]:
    """``states`` (and their hashes, in order) cut where the topic changes: a request lists a
    topic's partitions together."""
    runs: list[TopicRun] = []
    start = 0
    for i in range(1, len(states) + 1):
        if i == len(states) or states[i].topic != states[start].topic:
            runs.append(TopicRun(states[start].topic, states[start:i], hashes[start:i]))
            start = i
    return tuple(runs)


def apply_run(old: TopicCache | None, run: TopicRun) -> tuple[TopicCache | None, tuple[int, ...]]:
    """``old`` with ``run`` applied: the topic's next state (None once it holds no partition)
    and the partitions the run deleted (leader -2, LeaderDuringDelete). The blocks the run
    touches are copied (a block grows to the highest index it holds); the others are
    ``old``'s."""
    if old is None:
        states: dict[int, list[MetadataPartition | None]] = {}
        hashes: dict[int, list[int]] = {}
        count, digest, topic_id = 0, 0, ""
    else:
        states, hashes = dict(old.states), dict(old.hashes)
        count, digest, topic_id = old.count, old.digest, old.topic_id
    copied: set[int] = set()
    deleted: list[int] = []
    for state, new_hash in zip(run.states, run.hashes, strict=True):
        p = state.partition
        b, i = p >> BLOCK_BITS, p & _BLOCK_MASK
        block = states.get(b)
        deleting = state.leader == LEADER_DURING_DELETE
        if deleting and (block is None or i >= len(block) or block[i] is None):
            continue  # not cached
        if b not in copied:
            copied.add(b)
            block = states[b] = list(block or ())
            hashes[b] = list(hashes.get(b, ()))
        block_hashes = hashes[b]
        if deleting:
            digest -= block_hashes[i]
            block[i], block_hashes[i] = None, 0
            count -= 1
            deleted.append(p)
            if not count:
                topic_id = ""  # emptied: a later partition of it starts the topic afresh
            continue
        if i >= len(block):
            block.extend([None] * (i + 1 - len(block)))
            block_hashes.extend([0] * (i + 1 - len(block_hashes)))
        if block[i] is None:
            count += 1
        digest += new_hash - block_hashes[i]
        block[i], block_hashes[i] = state, new_hash
        if state.topic_id:
            topic_id = state.topic_id
    if not count:
        return None, tuple(deleted)
    if deleted:
        for b in copied:
            if not any(s is not None for s in states[b]):
                del states[b], hashes[b]
    return TopicCache(states, hashes, count, digest, topic_id), tuple(deleted)


class SharedUpdates:
    """The topics brokers of one process built from the same updates, shared between them.

    Simulated brokers (``services.broker_agent.simulation``), a hundred to a process, receive
    the same UpdateMetadata from the controller, decoded once for all of them: each would
    otherwise build the same next state of every topic it names, and hold a copy of the whole
    cluster. With a ``SharedUpdates`` a broker's cache applies a topic run to a topic state by
    taking what another broker of the process built from the same two objects, so the process
    holds one copy of each topic state however many brokers cache it. Brokers holding the same
    partition states (the same digest) take the whole request's result, map and all
    (``apply_request``): a change naming a hundred topics was ~130 us a broker topic by topic,
    ~5 us so. Keyed by the digest, not by the map: brokers whose maps were built apart (a body
    decoded twice, once the first decoding had left ``SharedDecodes``) hold the same map again
    after their next request, where by the map's identity each would build every topic a
    request names, for good (at a million partitions in topics of 1,000, a request naming a
    broker's 3,000 partitions takes ~16 ms to build, in process). A real broker has none.
    """

    def __init__(self, size: int = 4096, requests: int = 16) -> None:
        self._size = size
        # (id(old), id(run)) -> (old, run, result): the objects are kept, so the ids stay theirs.
        self._built: dict[tuple[int, int], tuple[object, TopicRun, tuple]] = {}
        self.hits = 0
        self.misses = 0
        # Whole requests: (digest, id(runs), id(deleted)) -> (runs, deleted, the result).
        self._requests = requests
        self._applied: dict[tuple[int, int, int], tuple[tuple, RequestResult]] = {}
        self.request_hits = 0
        self.request_misses = 0
        # Every cache of the process starts from this one, so brokers sent the same bodies in
        # the same order hold one topics map (never changed in place: ``apply_request``).
        self.empty_topics: dict[str, TopicCache] = {}

    def apply(
        self, old: TopicCache | None, run: TopicRun
    ) -> tuple[TopicCache | None, tuple[int, ...]]:
        key = (id(old), id(run))
        found = self._built.get(key)
        if found is not None and found[0] is old and found[1] is run:
            self.hits += 1
            return found[2]  # type: ignore[return-value]
        self.misses += 1
        result = apply_run(old, run)
        built = self._built
        if len(built) >= self._size:
            for stale in list(built)[: self._size // 4]:  # the oldest quarter
                del built[stale]
        built[key] = (old, run, result)
        return result

    def apply_request(
        self,
        topics: dict[str, TopicCache],
        digest: int,
        runs: tuple[TopicRun, ...],
        deleted_topics: tuple[str, ...],
    ) -> RequestResult:
        """A decoded UpdateMetadata body applied to a cache's topics map, whose partition
        states have ``digest``: the next map (a new one, or ``topics`` itself if the body names
        no topic), the digest's change and the partitions deleted; built once for the brokers
        holding the same states and sent the same body, each topic through ``apply``. Equal
        digests are taken as equal states, as the controller's digest-first UpdateMetadata
        takes them. The maps are shared: never changed in place."""
        if not runs and not deleted_topics:
            return RequestResult(topics, 0, ())
        key = (digest, id(runs), id(deleted_topics))
        found = self._applied.get(key)
        if found is not None:
            kept, result = found
            if kept[0] is runs and kept[1] is deleted_topics:
                self.request_hits += 1
                return result
        self.request_misses += 1
        result = apply_request(topics, runs, deleted_topics, self.apply)
        applied = self._applied
        if len(applied) >= self._requests:
            del applied[next(iter(applied))]
        applied[key] = ((runs, deleted_topics), result)
        return result


class RequestResult(NamedTuple):
    topics: dict[str, TopicCache]
    digest_change: int  # not reduced
    deleted: tuple[TopicPartition, ...]


def apply_request(
    old_topics: dict[str, TopicCache],
    runs: tuple[TopicRun, ...],
    deleted_topics: tuple[str, ...],
    apply: Callable[[TopicCache | None, TopicRun], tuple[TopicCache | None, tuple[int, ...]]],
    *,
    in_place: bool = False,
) -> RequestResult:
    """An UpdateMetadata's topic runs and deleted topics applied to a topics map, each run
    through ``apply``: the next map (``old_topics`` itself, changed, with ``in_place``; else a
    copy, or ``old_topics`` unchanged when the request names no topic), the digest's change
    (not reduced) and the partitions deleted."""
    if not runs and not deleted_topics:
        return RequestResult(old_topics, 0, ())
    topics = old_topics if in_place else dict(old_topics)
    change = 0
    deleted: list[TopicPartition] = []
    for run in runs:
        topic = run.topic
        old = topics.get(topic)
        new, gone = apply(old, run)
        change += (new.digest if new is not None else 0) - (old.digest if old is not None else 0)
        if new is None:
            topics.pop(topic, None)
        else:
            topics[topic] = new
        deleted.extend(TopicPartition(topic, p) for p in gone)
    for topic in deleted_topics:
        old = topics.pop(topic, None)
        if old is not None:
            change -= old.digest
            deleted.extend(TopicPartition(topic, s.partition) for s in old.partitions())
    return RequestResult(topics, change, tuple(deleted))


class MetadataCache:
    """The cluster as the controller last described it.

    Clients poll Metadata far more often than the controller changes it, and a 10,000-partition
    answer is tens of milliseconds of the event loop to build even from pieces
    (``metadata_wire``), so each topic's answer is kept until an update touches that topic or
    changes the set of live brokers (leader availability and offline replicas depend on it).

    Each topic is an immutable ``TopicCache``; an update replaces the topics it names. Brokers
    sharing a process may share them (``shared``).
    """

    def __init__(self, shared: SharedUpdates | None = None) -> None:
        self._brokers: dict[int, Endpoint] = {}
        # Per live broker its ``metadata_digest.endpoint_hash``, and their sum: the digest an
        # UpdateMetadata naming the live brokers as a change is checked against.
        self._broker_hashes: dict[int, int] = {}
        self._brokers_sum = 0  # of ``_broker_hashes``, not reduced
        self._brokers_digest = 0
        self._topics: dict[str, TopicCache] = {} if shared is None else shared.empty_topics
        # The sum of every cached partition's ``metadata_digest.state_hash``: the digest a new
        # controller's digest-only UpdateMetadata is checked against.
        self._digest = 0
        self._views: dict[str, TopicView] = {}
        self._shared = shared
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
        has checked ``brokers_digest()`` against its base), in place: a thousand brokers
        registering send each of them a thousand changes."""
        hashes = request.endpoint_hashes
        if len(hashes) != len(request.live_brokers):
            hashes = tuple(endpoint_hash(b) for b in request.live_brokers)
        if request.live_brokers_base is None:
            brokers = {b.broker_id: b for b in request.live_brokers}
            if brokers != self._brokers:
                self._views.clear()
            self._brokers = brokers
            self._broker_hashes = {
                b.broker_id: h for b, h in zip(request.live_brokers, hashes, strict=True)
            }
            self._brokers_sum = sum(self._broker_hashes.values())
        else:
            brokers, broker_hashes = self._brokers, self._broker_hashes
            total, changed = self._brokers_sum, False
            for broker_id in request.removed_brokers:
                if brokers.pop(broker_id, None) is not None:
                    total -= broker_hashes.pop(broker_id)
                    changed = True
            for b, h in zip(request.live_brokers, hashes, strict=True):
                if brokers.get(b.broker_id) != b:
                    changed = True
                total += h - broker_hashes.get(b.broker_id, 0)
                brokers[b.broker_id] = b
                broker_hashes[b.broker_id] = h
            if changed:
                self._views.clear()
            self._brokers_sum = total
        self._brokers_digest = metadata_digest.combine(self._brokers_sum)

    def update(self, request: UpdateMetadata) -> list[TopicPartition]:
        """Apply an accepted UpdateMetadata; returns the partitions it deleted.

        A digest-only request is applied only by the caller that has checked ``digest()``
        against it: it then changes the controller and the live brokers, nothing else."""
        self._update_brokers(request)
        self.controller_id = request.controller_id
        self.controller_epoch = request.controller_epoch
        if request.controller_host and request.controller_port:
            self.controller_endpoint = (request.controller_host, request.controller_port)
        runs = request.topic_runs
        if runs is None:
            hashes = request.state_hashes
            if len(hashes) != len(request.partitions):
                hashes = tuple(state_hash(s) for s in request.partitions)
            runs = topic_runs(request.partitions, hashes)
        if self._shared is not None:
            applied = self._shared.apply_request(
                self._topics, self._digest, runs, request.deleted_topics
            )
        else:  # a broker of its own: its map changed in place
            applied = apply_request(
                self._topics, runs, request.deleted_topics, apply_run, in_place=True
            )
        self._topics = applied.topics
        if self._views:
            for run in runs:
                self._views.pop(run.topic, None)
            for topic in request.deleted_topics:
                self._views.pop(topic, None)
        self._digest = metadata_digest.combine(self._digest + applied.digest_change)
        return list(applied.deleted)

    # ------------------------------------------------------------------ queries

    def alive_broker(self, broker_id: int) -> Endpoint | None:
        return self._brokers.get(broker_id)

    def alive_broker_count(self) -> int:
        return len(self._brokers)

    def alive_brokers(self) -> list[Endpoint]:
        return [self._brokers[b] for b in sorted(self._brokers)]

    def partition(self, tp: TopicPartition) -> MetadataPartition | None:
        found = self._topics.get(tp.topic)
        return found.get(tp.partition) if found is not None else None

    def cached_partitions(self) -> int:
        """How many partitions the cache holds, of every topic."""
        return sum(t.count for t in self._topics.values())

    def contains(self, tp: TopicPartition) -> bool:
        return self.partition(tp) is not None

    def has_topic(self, topic: str) -> bool:
        return topic in self._topics

    def topics(self) -> list[str]:
        return sorted(self._topics)

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` has, None when it is not known."""
        found = self._topics.get(topic)
        return found.count if found is not None else None

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
        found = self._topics.get(name)
        if found is None:
            return TopicView(name, Code.UNKNOWN_TOPIC_OR_PARTITION, "", ())
        # What liveness makes of a partition depends only on its leader, replicas and offline
        # replicas: worked out once per distinct triple (a topic has a handful), and the views
        # built positionally (``PartitionView``'s keyword constructor was half their cost).
        shown: dict[tuple, tuple[Code, int, tuple[int, ...]]] = {}
        new = tuple.__new__
        parts = []
        for state in found.partitions():
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
        view = TopicView(name, Code.NONE, found.topic_id, tuple(parts))
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
