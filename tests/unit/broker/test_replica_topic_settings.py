"""Which settings a partition obeys: topic override, broker dynamic config, default, flag."""

from __future__ import annotations

from services.broker_agent.log import LogConfig
from services.broker_agent.throttle import ThrottledReplicas
from services.broker_agent.topic_configs import TopicSettings, resolve


def settings(topic, *layers, broker_id=1):
    return resolve(
        topic, list(layers), broker_id=broker_id, static_min_isr=1, static_max_message_bytes=5000
    )


def test_static_flags_when_nothing_is_configured():
    assert settings({}) == TopicSettings(1, LogConfig(max_message_bytes=5000))


def test_precedence_topic_then_this_broker_then_cluster_default():
    this_broker = {"min.insync.replicas": "2", "log.retention.ms": "1000"}
    default = {"min.insync.replicas": "3", "log.retention.ms": "2000", "log.segment.bytes": "4096"}
    got = settings({"retention.ms": "500"}, this_broker, default)
    assert got.min_insync_replicas == 2
    assert got.log_config == LogConfig(max_message_bytes=5000, retention_ms=500, segment_bytes=4096)
    assert settings({}, {}, default).min_insync_replicas == 3
    assert settings({"min.insync.replicas": "1"}, this_broker).min_insync_replicas == 1


def test_invalid_values_fall_back():
    got = settings({"min.insync.replicas": "two", "segment.bytes": "tiny"})
    assert got.min_insync_replicas == 1
    assert got.log_config == LogConfig(max_message_bytes=5000)


def test_throttled_replicas_for_this_broker():
    topic = {
        "leader.replication.throttled.replicas": "0:1,1:2",
        "follower.replication.throttled.replicas": "*",
    }
    got = settings(topic, broker_id=1)
    assert got.leader_throttled == ThrottledReplicas(partitions=frozenset({0}))
    assert got.follower_throttled == ThrottledReplicas(everything=True)
    malformed = settings({"leader.replication.throttled.replicas": "oops"})
    assert malformed.leader_throttled == ThrottledReplicas()
