"""What the controller knows from etcd besides the core context, and how standbys stay warm.

``ClusterView`` holds the etcd-derived data the core's ``ControllerContext`` has no place for:
raw topic keys (to rewrite them during reassignment), the adding/removing sets of partition-state
keys (to compose assignments, see :mod:`codec`), configs, admin intents and the controller epoch.
Every controller (active or standby) updates it from every metadata event.

``apply_warm`` is how a standby keeps its context current from the same watch (ARCHITECTURE §5,
hot standby): it copies brokers, topics, partition states and configs into the context as they
change, so taking over costs an epoch bump and a metadata push, not a reload. The active
controller does not call it: its flows change the context themselves (decide, commit, apply).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from leasehold import configs
from leasehold.config_schema import ResourceType
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import (
    UNCLEAN_LEADER_ELECTION_ENABLE,
    ControllerContext,
    TopicPartition,
)
from services.controller.events import (
    BrokerChange,
    ConfigChange,
    ControllerEpochChange,
    ControllerEvent,
    ElectionRequest,
    PartitionStateChange,
    ReassignmentRequest,
    TopicChange,
    TopicDeletion,
)

log = logging.getLogger(__name__)

DELETE_TOPIC_ENABLE = "delete.topic.enable"
AUTO_LEADER_REBALANCE_ENABLE = "auto.leader.rebalance.enable"
LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = "leader.imbalance.per.broker.percentage"
LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds"


@dataclass
class ClusterView:
    topics: dict[str, metadata_pb2.TopicAssignment] = field(default_factory=dict)
    topic_revisions: dict[str, int] = field(default_factory=dict)
    state_sets: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict
    )
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    cluster_config: dict[str, str] = field(default_factory=dict)
    deletions: dict[str, tuple[metadata_pb2.TopicDeletion, int]] = field(default_factory=dict)
    reassignments: dict[TopicPartition, tuple[metadata_pb2.ReassignmentIntent, int]] = field(
        default_factory=dict
    )
    elections: dict[str, tuple[metadata_pb2.ElectionIntent, int]] = field(default_factory=dict)
    epoch: ControllerEpochChange | None = None

    # ---- cluster config (Kafka's defaults from leasehold.configs) ---------------------------
    def _broker_config(self) -> configs.EffectiveConfig:
        return configs.effective(ResourceType.BROKER, cluster_entries=self.cluster_config)

    @property
    def delete_topic_enable(self) -> bool:
        return self._broker_config().get_bool(DELETE_TOPIC_ENABLE)

    @property
    def auto_leader_rebalance_enable(self) -> bool:
        return self._broker_config().get_bool(AUTO_LEADER_REBALANCE_ENABLE)

    @property
    def leader_imbalance_percentage(self) -> int:
        return self._broker_config().get_int(LEADER_IMBALANCE_PER_BROKER_PERCENTAGE)

    @property
    def leader_imbalance_interval_s(self) -> int:
        return self._broker_config().get_int(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS)

    def effective_topic_config(self, topic: str) -> dict[str, str]:
        """The topic's own entries plus the resolved unclean-election flag (cluster default)."""
        own = self.topic_configs.get(topic, {})
        resolved = configs.effective(
            ResourceType.TOPIC, topic_entries=own, cluster_entries=self.cluster_config
        )
        return {
            **own,
            UNCLEAN_LEADER_ELECTION_ENABLE: resolved[UNCLEAN_LEADER_ELECTION_ENABLE].value,
        }

    # ---- assignments -----------------------------------------------------------------------
    def composed_assignment(self, tp: TopicPartition):
        topic = self.topics.get(tp.topic)
        if topic is None or tp.partition not in topic.partitions:
            return None
        adding, removing = self.state_sets.get(tp, ((), ()))
        return codec.compose_assignment(topic.partitions[tp.partition].replicas, adding, removing)

    def forget_intent(self, ks: Keyspace, key: bytes, revision: int) -> None:
        """An intent we just deleted (its watch echo comes later): stop acting on it now."""
        if key.startswith(ks.delete_topics_prefix):
            found, name = self.deletions, key[len(ks.delete_topics_prefix) :].decode()
        elif key.startswith(ks.reassignments_prefix):
            found, name = self.reassignments, TopicPartition(*ks.parse_reassignment_key(key))
        elif key.startswith(ks.elections_prefix):
            found, name = self.elections, key[len(ks.elections_prefix) :].decode()
        else:
            return
        entry = found.get(name)
        if entry is not None and entry[1] == revision:
            del found[name]

    # ---- updates from every metadata event -------------------------------------------------
    def update(self, event: ControllerEvent) -> None:
        if isinstance(event, TopicChange):
            for u in event.updates:
                if u.assignment is None:
                    self.topics.pop(u.topic, None)
                    self.topic_revisions.pop(u.topic, None)
                elif u.mod_revision >= self.topic_revisions.get(u.topic, 0):
                    self.topics[u.topic] = u.assignment
                    self.topic_revisions[u.topic] = u.mod_revision
        elif isinstance(event, PartitionStateChange):
            for s in event.updates:
                if s.state is None:
                    self.state_sets.pop(s.tp, None)
                elif s.state.adding or s.state.removing:
                    self.state_sets[s.tp] = (s.state.adding, s.state.removing)
                else:  # no reassignment, as nearly every partition: the default, not kept
                    self.state_sets.pop(s.tp, None)
        elif isinstance(event, ConfigChange):
            for topic, entries in event.topics:
                if entries is None:
                    self.topic_configs.pop(topic, None)
                else:
                    self.topic_configs[topic] = entries
            if event.cluster_changed:
                self.cluster_config = dict(event.cluster or {})
        elif isinstance(event, TopicDeletion):
            for d in event.updates:
                if d.intent is None:
                    self.deletions.pop(d.topic, None)
                else:
                    self.deletions[d.topic] = (d.intent, d.mod_revision)
        elif isinstance(event, ReassignmentRequest):
            for r in event.updates:
                if r.intent is None:
                    self.reassignments.pop(r.tp, None)
                else:
                    self.reassignments[r.tp] = (r.intent, r.mod_revision)
        elif isinstance(event, ElectionRequest):
            for e in event.updates:
                if e.intent is None:
                    self.elections.pop(e.request_id, None)
                else:
                    self.elections[e.request_id] = (e.intent, e.mod_revision)
        elif isinstance(event, ControllerEpochChange):
            self.epoch = event


def apply_warm(ctx: ControllerContext, view: ClusterView, event: ControllerEvent) -> None:
    """Copy one metadata event into a standby's context (``view`` already updated)."""
    if isinstance(event, BrokerChange):
        for broker_id in event.deregistered:
            ctx.apply_broker_removed(broker_id)
        for info in event.registered:
            ctx.apply_broker_registered(info)
    elif isinstance(event, TopicChange):
        for u in event.updates:
            if u.assignment is None:
                ctx.apply_remove_topic(u.topic)
                continue
            assignments = {}
            for p in u.assignment.partitions:
                a = view.composed_assignment(TopicPartition(u.topic, p))
                if a is not None:
                    assignments[p] = a
            ctx.apply_topic(
                u.topic, u.assignment.topic_id, assignments, view.effective_topic_config(u.topic)
            )
    elif isinstance(event, PartitionStateChange):
        for s in event.updates:
            if s.state is None or not ctx.has_topic(s.tp.topic):
                continue
            current = ctx.leader_and_isr(s.tp)
            if current is None or s.mod_revision > current.partition_epoch:
                ctx.apply_leader_and_isr(s.tp, s.state.leader_and_isr)
            a = view.composed_assignment(s.tp)
            if a is not None:
                ctx.apply_assignment(s.tp, a)
    elif isinstance(event, ConfigChange):
        topics = ctx.all_topics if event.cluster_changed else [t for t, _ in event.topics]
        for topic in topics:
            if ctx.has_topic(topic):
                ctx.apply_topic_config(topic, view.effective_topic_config(topic))
