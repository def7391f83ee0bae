"""The broker's config store keeps each topic's resolved settings until a config it rests on
changes: a topic's own entries drop only that topic's, a broker-level entry drops all."""

from __future__ import annotations

from leasehold.etcd import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.topic_configs import ConfigStore

KEYS = Keyspace("test")
BROKER = 1


def entries(**values: str) -> bytes:
    flat = {k.replace("_", "."): v for k, v in values.items()}
    return metadata_pb2.ConfigEntries(entries=flat).SerializeToString()


def store() -> ConfigStore:
    return ConfigStore(KEYS, BROKER, static_min_isr=1, static_max_bytes=1 << 20)


def min_isr(configs: ConfigStore) -> dict[str, int]:
    return {t: configs.settings(t).min_insync_replicas for t in ("a", "b")}


def test_settings_are_resolved_once_per_topic():
    configs = store()
    first = configs.settings("a")
    assert configs.settings("a") is first
    assert configs.settings("b") is not first


def test_a_topic_config_change_replaces_only_that_topic():
    configs = store()
    b_before = configs.settings("b")
    assert configs.apply(KEYS.topic_config("a"), entries(min_insync_replicas="2")) == "a"
    assert min_isr(configs) == {"a": 2, "b": 1}
    assert configs.settings("b") is b_before
    assert configs.apply(KEYS.topic_config("a"), None) == "a"  # deleted: back to defaults
    assert min_isr(configs) == {"a": 1, "b": 1}


def test_a_broker_config_change_replaces_every_topic():
    configs = store()
    configs.apply(KEYS.topic_config("a"), entries(min_insync_replicas="3"))
    assert min_isr(configs) == {"a": 3, "b": 1}
    assert configs.apply(KEYS.broker_config(None), entries(min_insync_replicas="2")) == ""
    assert min_isr(configs) == {"a": 3, "b": 2}  # the topic's own entry still wins for a
    configs.apply(KEYS.broker_config(BROKER), entries(min_insync_replicas="4"))
    assert min_isr(configs) == {"a": 3, "b": 4}


def test_an_unparsable_value_changes_nothing():
    configs = store()
    configs.apply(KEYS.topic_config("a"), entries(min_insync_replicas="2"))
    assert configs.apply(KEYS.topic_config("a"), b"\xff not a proto") is None
    assert min_isr(configs) == {"a": 2, "b": 1}
