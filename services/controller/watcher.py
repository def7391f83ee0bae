"""From the etcd watch to controller events (ARCHITECTURE §5, watches).

``ClusterWatcher`` runs ``load_then_watch`` over the whole cluster prefix and puts each batch
(and each full load) on the event loop as it comes, undecoded (``WatchDelivery``). When the loop
reaches it, it calls back (``expand``) to apply the batch to the mirror of every key (so a
reload after compaction can be turned into the changes it implies) and decode it into typed
controller events. So the mirror, like the controller, has seen exactly the batches the loop
has taken, in watch order, and the watch task only receives: it never decodes or decides.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from leasehold.etcd.client import KV, WatchEvent, WatchEvents
from leasehold.etcd.keys import Keyspace
from leasehold.etcd.watch import load_then_watch
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import BrokerInfo, TopicPartition
from services.controller.events import (
    BrokerChange,
    ConfigChange,
    ControllerEpochChange,
    ControllerEvent,
    DeletionIntentUpdate,
    ElectionIntentUpdate,
    ElectionRequest,
    PartitionStateChange,
    PartitionStateUpdate,
    ReassignmentIntentUpdate,
    ReassignmentRequest,
    Synced,
    TopicChange,
    TopicDeletion,
    TopicUpdate,
    WatchDelivery,
)

log = logging.getLogger(__name__)


class _BatchDecoder:
    """Collects one batch's changes per kind; the last change of a key in the batch wins."""

    def __init__(self, keyspace: Keyspace) -> None:
        self.ks = keyspace
        self.registered: dict[int, BrokerInfo] = {}
        self.deregistered: list[int] = []
        self.topics: dict[str, TopicUpdate] = {}
        self.states: dict[TopicPartition, PartitionStateUpdate] = {}
        self.topic_configs: dict[str, dict[str, str] | None] = {}
        self.cluster_config: dict[str, str] | None = None
        self.cluster_changed = False
        self.deletions: dict[str, DeletionIntentUpdate] = {}
        self.reassignments: dict[TopicPartition, ReassignmentIntentUpdate] = {}
        self.elections: dict[str, ElectionIntentUpdate] = {}
        self.epoch: ControllerEpochChange | None = None

    def add(self, deleted: bool, kv: KV) -> None:
        try:
            self._add(deleted, kv)
        except Exception as e:  # a hand-written bad value must not stop the watch
            log.error("cannot decode etcd key %r: %s", kv.key, e)

    def _add(self, deleted: bool, kv: KV) -> None:
        ks, key = self.ks, kv.key
        if ks.is_partition_state_key(key):  # first: nearly every key of a big batch is one
            parsed = ks.parse_topic_key(key)
            if parsed is None or parsed[1] is None:
                return
            tp = TopicPartition(parsed[0], parsed[1])
            state = None if deleted else codec.decode_partition_state(kv.value, kv.mod_revision)
            self.states[tp] = PartitionStateUpdate(tp, state, kv.mod_revision)
        elif key.startswith(ks.brokers_prefix):
            broker_id = ks.broker_id_of(key)
            if deleted:
                self.registered.pop(broker_id, None)
                self.deregistered.append(broker_id)
            else:
                self.registered[broker_id] = codec.broker_info(kv)
        elif key == ks.controller_epoch:
            if not deleted:
                pb = codec.decode_epoch(kv.value)
                self.epoch = ControllerEpochChange(pb.epoch, pb.controller_id, kv.mod_revision)
        elif key.startswith(ks.topics_prefix):
            parsed = ks.parse_topic_key(key)  # state keys were taken above: an assignment
            if parsed is None or parsed[1] is not None:
                return
            topic = parsed[0]
            value = None if deleted else codec.decode_topic(kv.value)
            self.topics[topic] = TopicUpdate(topic, value, kv.mod_revision)
        elif key.startswith(ks.topic_configs_prefix):
            topic = key[len(ks.topic_configs_prefix) :].decode()
            self.topic_configs[topic] = None if deleted else codec.decode_config(kv.value)
        elif key == ks.broker_config(None):
            self.cluster_config = None if deleted else codec.decode_config(kv.value)
            self.cluster_changed = True
        elif key.startswith(ks.delete_topics_prefix):
            topic = key[len(ks.delete_topics_prefix) :].decode()
            intent = None if deleted else metadata_pb2.TopicDeletion.FromString(kv.value)
            self.deletions[topic] = DeletionIntentUpdate(topic, intent, kv.mod_revision)
        elif key.startswith(ks.reassignments_prefix):
            topic, partition = ks.parse_reassignment_key(key)
            tp = TopicPartition(topic, partition)
            intent = None if deleted else metadata_pb2.ReassignmentIntent.FromString(kv.value)
            self.reassignments[tp] = ReassignmentIntentUpdate(tp, intent, kv.mod_revision)
        elif key.startswith(ks.elections_prefix):
            request_id = key[len(ks.elections_prefix) :].decode()
            intent = None if deleted else metadata_pb2.ElectionIntent.FromString(kv.value)
            self.elections[request_id] = ElectionIntentUpdate(request_id, intent, kv.mod_revision)

    def events(self, revision: int, received_ms: int = 0) -> list[ControllerEvent]:
        out: list[ControllerEvent] = []
        if self.epoch is not None:
            out.append(self.epoch)
        if self.topic_configs or self.cluster_changed:
            out.append(
                ConfigChange(
                    tuple(self.topic_configs.items()), self.cluster_config, self.cluster_changed
                )
            )
        if self.registered or self.deregistered:
            out.append(
                BrokerChange(
                    tuple(self.registered.values()),
                    tuple(dict.fromkeys(self.deregistered)),
                    received_ms=received_ms,
                )
            )
        if self.topics:
            out.append(TopicChange(tuple(self.topics.values())))
        if self.states:
            out.append(PartitionStateChange(tuple(self.states.values())))
        if self.deletions:
            out.append(TopicDeletion(tuple(self.deletions.values())))
        if self.reassignments:
            out.append(ReassignmentRequest(tuple(self.reassignments.values())))
        if self.elections:
            out.append(ElectionRequest(tuple(self.elections.values())))
        out.append(Synced(revision))
        return out


class ClusterWatcher:
    """Mirror of the cluster prefix, kept by ``load_then_watch``; emits events to ``sink``."""

    def __init__(self, client, keyspace: Keyspace, sink: Callable[[ControllerEvent], None]) -> None:
        self.client = client
        self.keyspace = keyspace
        self.sink = sink
        self.mirror: dict[bytes, KV] = {}
        self.revision = 0
        self.loads = 0

    @property
    def prefix(self) -> bytes:
        return self.keyspace.root + b"/"

    async def run(self) -> None:
        await load_then_watch(self.client, self.prefix, self._on_load, self._on_events)

    async def _on_load(self, kvs: list[KV], revision: int) -> None:
        """A full snapshot (first load, or reload after compaction)."""
        self.loads += 1
        self.sink(
            WatchDelivery(revision, len(kvs), False, partial(self._apply_load, kvs, revision))
        )

    async def _on_events(self, events: Sequence[WatchEvent], revision: int) -> None:
        """Queued as received: the events are converted and decoded when the loop expands them
        (``WatchEvents`` reads only the keys and revisions now)."""
        if not isinstance(events, WatchEvents):
            events = WatchEvents(events=events)
        # A watch response's header revision may run ahead of the events it carries while the
        # watcher catches up, so only the events' own revisions are known to be complete.
        last = events.last_revision
        is_state = self.keyspace.is_partition_state_key
        states_only = all(map(is_state, events.keys()))
        expand = partial(self._apply_events, events, last, int(time.time() * 1000))
        self.sink(WatchDelivery(last, len(events), states_only, expand))

    def _apply_load(self, kvs: list[KV], revision: int) -> list[ControllerEvent]:
        """The changes a snapshot implies against the mirror; the mirror becomes the snapshot."""
        fresh = {kv.key: kv for kv in kvs}
        changes: list[tuple[bool, KV]] = [
            (False, kv)
            for key, kv in fresh.items()
            if (old := self.mirror.get(key)) is None or old.mod_revision != kv.mod_revision
        ]
        changes += [
            (True, KV(key, b"", old.create_revision, revision, 0, 0))
            for key, old in self.mirror.items()
            if key not in fresh
        ]
        self.mirror.clear()  # in place: the store reads the same dict
        self.mirror.update(fresh)
        return self._decode(changes, revision)

    def _apply_events(
        self, events: Sequence[WatchEvent], revision: int, received_ms: int = 0
    ) -> list[ControllerEvent]:
        mirror = self.mirror
        changes: list[tuple[bool, KV]] = []
        for ev in events:
            if ev.deleted:
                mirror.pop(ev.kv.key, None)
            else:
                mirror[ev.kv.key] = ev.kv
            changes.append((ev.deleted, ev.kv))
        return self._decode(changes, revision, received_ms)

    def _decode(
        self, changes: Iterable[tuple[bool, KV]], revision: int, received_ms: int = 0
    ) -> list[ControllerEvent]:
        decoder = _BatchDecoder(self.keyspace)
        for deleted, kv in changes:
            decoder.add(deleted, kv)
        self.revision = max(self.revision, revision)
        return decoder.events(revision, received_ms)

    def snapshot_events(self) -> list[ControllerEvent]:
        """The whole mirror as events, to rebuild a context from scratch without reading etcd."""
        decoder = _BatchDecoder(self.keyspace)
        for kv in self.mirror.values():
            decoder.add(False, kv)
        return decoder.events(self.revision)
