"""What the admin service knows about the cluster: one consistent read of etcd, parsed.

Every admin decision is made against a :class:`Snapshot` taken at a single etcd revision, and every
write it then makes compares the revisions recorded here (the topic's assignment, the config key,
the intent key), so a decision can never be applied to a cluster that changed under it. Parsing is
pure: :func:`build_snapshot` turns the key-values of one revision into frozen values, which is what
the unit tests exercise without etcd.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2

NO_LEADER = -1


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Broker:
    """A registered (live) broker; ``epoch`` is its registration key's create revision (KIP-380)."""

    id: int
    host: str
    port: int
    rack: str
    epoch: int


@dataclass(frozen=True)
class PartitionStateView:
    """A partition's state as the controller wrote it; ``epoch`` is the key's mod revision."""

    state: metadata_pb2.PartitionState
    epoch: int

    @property
    def leader(self) -> int:
        return self.state.leader


@dataclass(frozen=True)
class Stored:
    """A stored protobuf value with the mod revision a compare-and-set must name."""

    value: object
    revision: int


@dataclass(frozen=True)
class TopicView:
    """One topic: assignment, partition states, config overrides and pending intents."""

    name: str
    topic_id: str
    partitions: Mapping[int, tuple[int, ...]]
    revision: int  # mod revision of /topics/<name>
    created_at_ms: int = 0
    states: Mapping[int, PartitionStateView] = field(default_factory=lambda: _frozen({}))
    configs: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    config_revision: int = 0
    deletion: metadata_pb2.TopicDeletion | None = None
    deletion_revision: int = 0
    reassignments: Mapping[int, Stored] = field(default_factory=lambda: _frozen({}))

    @property
    def marked_for_deletion(self) -> bool:
        return self.deletion is not None

    @property
    def replication_factor(self) -> int:
        """Partition 0's replica count (its target during a reassignment), as Kafka reports it."""
        if not self.partitions:
            return 0
        first = min(self.partitions)
        state = self.states.get(first)
        removing = set(state.state.removing_replicas) if state else set()
        return len([r for r in self.partitions[first] if r not in removing])

    def leader_of(self, partition: int) -> int:
        state = self.states.get(partition)
        return state.leader if state is not None else NO_LEADER

    def reassigning(self, partition: int) -> bool:
        """A reassignment is in progress: a pending intent, or adding/removing replicas in state."""
        intent = self.reassignments.get(partition)
        if intent is not None and not intent.value.cancel:  # type: ignore[attr-defined]
            return True
        state = self.states.get(partition)
        return state is not None and bool(
            state.state.adding_replicas or state.state.removing_replicas
        )


@dataclass(frozen=True)
class ControllerView:
    """The active controller; ``epoch`` is 0 until it has bumped ``/controller_epoch``."""

    id: int
    host: str
    port: int
    epoch: int


@dataclass(frozen=True)
class Snapshot:
    """The parts of the cluster one admin request read, all at ``revision``."""

    revision: int
    brokers: Mapping[int, Broker] = field(default_factory=lambda: _frozen({}))
    topics: Mapping[str, TopicView] = field(default_factory=lambda: _frozen({}))
    # Broker id -> (entries, mod revision); None is the cluster-wide default.
    broker_configs: Mapping[int | None, tuple[Mapping[str, str], int]] = field(
        default_factory=lambda: _frozen({})
    )
    controller: ControllerView | None = None
    standby_controller_ids: tuple[int, ...] = ()
    # Names of every topic (from a keys-only read, or of ``topics`` when fully read).
    names: frozenset[str] = frozenset()
    # Topics with a pending deletion intent (read with the index or with ``topics``).
    deleting: frozenset[str] = frozenset()
    # Partitions with a state key in etcd (counted from the keys-only index).
    partition_count: int = 0

    def cluster_configs(self) -> Mapping[str, str]:
        return self.broker_configs.get(None, ({}, 0))[0]

    def broker_configs_of(self, broker_id: int) -> Mapping[str, str]:
        return self.broker_configs.get(broker_id, ({}, 0))[0]


@dataclass(frozen=True)
class RawRead:
    """The key-values of each prefix that was read, all at ``revision``."""

    revision: int
    brokers: tuple[KV, ...] = ()
    topics: tuple[KV, ...] = ()
    topic_configs: tuple[KV, ...] = ()
    broker_configs: tuple[KV, ...] = ()
    deletions: tuple[KV, ...] = ()
    reassignments: tuple[KV, ...] = ()
    controllers: tuple[KV, ...] = ()
    controller_epoch: KV | None = None
    topic_keys: tuple[KV, ...] = ()  # keys only


def _parse_brokers(ks: Keyspace, kvs: Iterable[KV]) -> dict[int, Broker]:
    out: dict[int, Broker] = {}
    for kv in kvs:
        reg = metadata_pb2.BrokerRegistration.FromString(kv.value)
        bid = ks.broker_id_of(kv.key)
        out[bid] = Broker(bid, reg.host, reg.port, reg.rack, kv.create_revision)
    return dict(sorted(out.items()))


def _suffix(key: bytes, prefix: bytes) -> str:
    return key[len(prefix) :].decode()


def _parse_topics(ks: Keyspace, raw: RawRead) -> dict[str, TopicView]:
    assignments: dict[str, tuple[metadata_pb2.TopicAssignment, int]] = {}
    states: dict[str, dict[int, PartitionStateView]] = {}
    for kv in raw.topics:
        parsed = ks.parse_topic_key(kv.key)
        if parsed is None:
            continue
        topic, partition = parsed
        if partition is None:
            assignments[topic] = (
                metadata_pb2.TopicAssignment.FromString(kv.value),
                kv.mod_revision,
            )
        else:
            state = metadata_pb2.PartitionState.FromString(kv.value)
            states.setdefault(topic, {})[partition] = PartitionStateView(state, kv.mod_revision)
    configs = {
        _suffix(kv.key, ks.topic_configs_prefix): (
            dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries),
            kv.mod_revision,
        )
        for kv in raw.topic_configs
    }
    deletions = {
        _suffix(kv.key, ks.delete_topics_prefix): (
            metadata_pb2.TopicDeletion.FromString(kv.value),
            kv.mod_revision,
        )
        for kv in raw.deletions
    }
    reassignments: dict[str, dict[int, Stored]] = {}
    for kv in raw.reassignments:
        topic, partition = ks.parse_reassignment_key(kv.key)
        intent = metadata_pb2.ReassignmentIntent.FromString(kv.value)
        reassignments.setdefault(topic, {})[partition] = Stored(intent, kv.mod_revision)
    topics: dict[str, TopicView] = {}
    for name in sorted(assignments):
        assignment, revision = assignments[name]
        entries, config_revision = configs.get(name, ({}, 0))
        deletion, deletion_revision = deletions.get(name, (None, 0))
        topics[name] = TopicView(
            name=name,
            topic_id=assignment.topic_id,
            partitions=_frozen(
                {p: tuple(r.replicas) for p, r in sorted(assignment.partitions.items())}
            ),
            revision=revision,
            created_at_ms=assignment.created_at_ms,
            states=_frozen(dict(sorted(states.get(name, {}).items()))),
            configs=_frozen(entries),
            config_revision=config_revision,
            deletion=deletion,
            deletion_revision=deletion_revision,
            reassignments=_frozen(dict(sorted(reassignments.get(name, {}).items()))),
        )
    return topics


def _parse_broker_configs(
    ks: Keyspace, kvs: Iterable[KV]
) -> dict[int | None, tuple[Mapping[str, str], int]]:
    default_key = ks.broker_config(None)
    out: dict[int | None, tuple[Mapping[str, str], int]] = {}
    for kv in kvs:
        entries = _frozen(dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries))
        if kv.key == default_key:
            out[None] = (entries, kv.mod_revision)
            continue
        suffix = _suffix(kv.key, ks.broker_configs_prefix)
        if suffix.lstrip("-").isdigit():
            out[int(suffix)] = (entries, kv.mod_revision)
    return out


def _parse_controllers(
    controllers: Iterable[KV], epoch_kv: KV | None
) -> tuple[ControllerView | None, tuple[int, ...]]:
    """The election candidates in create-revision order: the first leads, the rest stand by."""
    ordered = sorted(controllers, key=lambda kv: kv.create_revision)
    regs = [metadata_pb2.ControllerRegistration.FromString(kv.value) for kv in ordered]
    if not regs:
        return None, ()
    leader = regs[0]
    epoch = 0
    if epoch_kv is not None:
        stored = metadata_pb2.ControllerEpoch.FromString(epoch_kv.value)
        if stored.controller_id == leader.controller_id:
            epoch = stored.epoch
    view = ControllerView(leader.controller_id, leader.host, leader.port, epoch)
    return view, tuple(r.controller_id for r in regs[1:])


def build_snapshot(ks: Keyspace, raw: RawRead) -> Snapshot:
    """Parse one revision's key-values into a :class:`Snapshot`."""
    controller, standbys = _parse_controllers(raw.controllers, raw.controller_epoch)
    topics = _parse_topics(ks, raw)
    indexed = [p for kv in raw.topic_keys if (p := ks.parse_topic_key(kv.key)) is not None]
    names = {p[0] for p in indexed if p[1] is None} | set(topics)
    deleting = {_suffix(kv.key, ks.delete_topics_prefix) for kv in raw.deletions}
    return Snapshot(
        revision=raw.revision,
        brokers=_frozen(_parse_brokers(ks, raw.brokers)),
        topics=_frozen(topics),
        broker_configs=_frozen(_parse_broker_configs(ks, raw.broker_configs)),
        controller=controller,
        standby_controller_ids=standbys,
        names=frozenset(names),
        deleting=frozenset(deleting),
        partition_count=sum(1 for p in indexed if p[1] is not None),
    )
