"""ClusterView (cluster config with Kafka defaults) and the hot standby's warm apply."""

from __future__ import annotations

import pytest

from leasehold.metadata.v1 import metadata_pb2
from services.controller import events as ev
from services.controller.codec import StoredPartitionState
from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.view import ClusterView, apply_warm

TP = TopicPartition("t", 0)


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ({}, (True, True, 10, 300)),
        (
            {"delete.topic.enable": "false", "auto.leader.rebalance.enable": "false",
             "leader.imbalance.per.broker.percentage": "25",
             "leader.imbalance.check.interval.seconds": "7"},
            (False, False, 25, 7),
        ),
        ({"leader.imbalance.per.broker.percentage": "not a number"}, (True, True, 10, 300)),
    ],
)  # fmt: skip
def test_cluster_config_with_defaults(entries, expected):
    view = ClusterView(cluster_config=entries)
    got = (
        view.delete_topic_enable,
        view.auto_leader_rebalance_enable,
        view.leader_imbalance_percentage,
        view.leader_imbalance_interval_s,
    )
    assert got == expected


UNCLEAN = "unclean.leader.election.enable"


@pytest.mark.parametrize(
    ("topic", "cluster", "expected"),
    [({}, {}, "false"), ({}, {UNCLEAN: "true"}, "true"),
     ({UNCLEAN: "false"}, {UNCLEAN: "true"}, "false")],
)  # fmt: skip
def test_topic_unclean_flag_resolves_through_the_cluster_default(topic, cluster, expected):
    view = ClusterView(topic_configs={"t": topic}, cluster_config=cluster)
    assert view.effective_topic_config("t")["unclean.leader.election.enable"] == expected


def _topic_change(replicas, rev=5):
    pb = metadata_pb2.TopicAssignment(
        topic_id="tid", partitions={0: metadata_pb2.ReplicaList(replicas=replicas)}
    )
    return ev.TopicChange((ev.TopicUpdate("t", pb, rev),))


def _state_change(lai, adding=(), removing=()):
    stored = StoredPartitionState(lai, tuple(adding), tuple(removing))
    return ev.PartitionStateChange((ev.PartitionStateUpdate(TP, stored, lai.partition_epoch),))


def test_warm_apply_keeps_a_standby_context_current():
    ctx, view = ControllerContext(), ClusterView()

    def feed(event):
        view.update(event)
        apply_warm(ctx, view, event)

    feed(ev.BrokerChange((BrokerInfo(1, "h", 1, "", 3), BrokerInfo(2, "h", 2, "", 4)), ()))
    feed(_topic_change([1, 2, 3]))
    lai = LeaderAndIsr(1, 0, (1, 2), 1, partition_epoch=8)
    feed(_state_change(lai, adding=[3], removing=[1]))
    assert ctx.assignment(TP) == ReplicaAssignment((1, 2, 3), (3,), (1,))
    assert ctx.leader_and_isr(TP) == lai
    # An older state (a late event) never replaces a newer one.
    feed(_state_change(LeaderAndIsr(2, 0, (2,), 1, partition_epoch=7)))
    assert ctx.leader_and_isr(TP) == lai
    feed(ev.ConfigChange(cluster={"unclean.leader.election.enable": "true"}, cluster_changed=True))
    assert ctx.is_unclean_leader_election_enabled("t")
    feed(ev.BrokerChange((), (2,)))
    assert set(ctx.brokers) == {1}
    feed(ev.TopicChange((ev.TopicUpdate("t", None, 9),)))
    assert "t" not in ctx.all_topics and ctx.assignment(TP) is None


def test_intents_are_tracked_and_forgotten():
    view = ClusterView()
    intent = metadata_pb2.ReassignmentIntent(target_replicas=[4], request_id="r")
    view.update(ev.ReassignmentRequest((ev.ReassignmentIntentUpdate(TP, intent, 11),)))
    assert view.reassignments == {TP: (intent, 11)}
    view.update(ev.ReassignmentRequest((ev.ReassignmentIntentUpdate(TP, None, 12),)))
    assert view.reassignments == {}
