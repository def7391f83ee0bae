"""Topic and broker configs from etcd, resolved into the settings a partition obeys.

Admin writes ``/config/topics/<name>`` (topic overrides) and ``/config/brokers/<id>`` or
``/config/brokers/<default>`` (dynamic broker defaults). The agent loads them at a revision and
watches from the next one, so a change made while the agent runs applies to later appends,
produce checks and retention runs without a restart. Precedence is Kafka's: topic override, then
this broker's dynamic config, then the cluster-wide default, then the static flag.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import KV, WatchEvent
from leasehold.etcd.watch import load_then_watch
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.log.config import LogConfig
from services.broker_agent.throttle import (
    NOT_THROTTLED,
    ThrottledReplicas,
    parse_throttled_replicas,
)

log = logging.getLogger(__name__)

# Broker-level names of topic defaults (Kafka's ``log.*`` prefix) -> topic config names.
_BROKER_DEFAULTS = {
    "min.insync.replicas": "min.insync.replicas",
    "message.max.bytes": "max.message.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.retention.bytes": "retention.bytes",
    "log.retention.ms": "retention.ms",
    "log.index.interval.bytes": "index.interval.bytes",
}


@dataclass(frozen=True)
class TopicSettings:
    min_insync_replicas: int
    log_config: LogConfig
    leader_throttled: ThrottledReplicas = NOT_THROTTLED
    follower_throttled: ThrottledReplicas = NOT_THROTTLED


def resolve(
    topic_entries: Mapping[str, str],
    broker_layers: list[Mapping[str, str]],
    *,
    broker_id: int,
    static_min_isr: int,
    static_max_message_bytes: int,
) -> TopicSettings:
    """Merge the config layers for one topic; a bad value falls back to the layer below.

    ``broker_layers`` is ordered from most to least specific (this broker, then the default).
    """
    merged: dict[str, str] = {
        "min.insync.replicas": str(static_min_isr),
        "max.message.bytes": str(static_max_message_bytes),
    }
    for layer in reversed(broker_layers):
        for key, topic_key in _BROKER_DEFAULTS.items():
            if key in layer:
                merged[topic_key] = layer[key]
    merged.update(topic_entries)
    try:
        min_isr = max(1, int(merged["min.insync.replicas"]))
    except ValueError:
        min_isr = static_min_isr
    base = LogConfig(max_message_bytes=static_max_message_bytes)
    try:
        log_config = LogConfig.from_properties(merged, base)
    except ValueError as exc:
        log.warning("ignoring invalid log config: %s", exc)
        log_config = base
    return TopicSettings(
        min_insync_replicas=min_isr,
        log_config=log_config,
        leader_throttled=_throttled(merged, "leader.replication.throttled.replicas", broker_id),
        follower_throttled=_throttled(merged, "follower.replication.throttled.replicas", broker_id),
    )


def _throttled(entries: Mapping[str, str], key: str, broker_id: int) -> ThrottledReplicas:
    try:
        return parse_throttled_replicas(entries.get(key, ""), broker_id)
    except ValueError as exc:
        log.warning("ignoring invalid %s: %s", key, exc)
        return NOT_THROTTLED


class ConfigStore:
    """The configs as last loaded from etcd; ``settings(topic)`` resolves one topic.

    Resolved settings are kept per topic until a config they depend on changes: the broker
    asks for them per partition (fetch throttling, produce, the metrics pass over every hosted
    partition each second), and resolving parses every property again.
    """

    def __init__(
        self, keyspace: Keyspace, broker_id: int, static_min_isr: int, static_max_bytes: int
    ) -> None:
        self._keyspace = keyspace
        self._broker_id = broker_id
        self._static_min_isr = static_min_isr
        self._static_max_bytes = static_max_bytes
        self._topics: dict[str, dict[str, str]] = {}
        self._brokers: dict[str, dict[str, str]] = {}
        self._resolved: dict[str, TopicSettings] = {}
        self.listeners: list[Callable[[set[str] | None], None]] = []

    def settings(self, topic: str) -> TopicSettings:
        found = self._resolved.get(topic)
        if found is not None:
            return found
        layers = [
            self._brokers.get(str(self._broker_id), {}),
            self._brokers.get("<default>", {}),
        ]
        found = resolve(
            self._topics.get(topic, {}),
            layers,
            broker_id=self._broker_id,
            static_min_isr=self._static_min_isr,
            static_max_message_bytes=self._static_max_bytes,
        )
        self._resolved[topic] = found
        return found

    def broker_config(self, name: str) -> str | None:
        """A dynamic broker config: this broker's value, else the cluster-wide default."""
        for layer in (str(self._broker_id), "<default>"):
            value = self._brokers.get(layer, {}).get(name)
            if value is not None:
                return value
        return None

    def apply(self, key: bytes, value: bytes | None) -> str | None:
        """Apply one key's new value (None = deleted); returns the topic it changed, or ''
        for a broker-level change (affects every topic), or None when not a config key."""
        topics_prefix = self._keyspace.topic_configs_prefix
        brokers_prefix = self._keyspace.broker_configs_prefix
        if key.startswith(topics_prefix):
            name, table = key[len(topics_prefix) :].decode(), self._topics
            self._resolved.pop(name, None)
        elif key.startswith(brokers_prefix):
            name, table = key[len(brokers_prefix) :].decode(), self._brokers
            self._resolved.clear()  # broker layers underlie every topic
        else:
            return None
        if value is None:
            table.pop(name, None)
        else:
            entries = metadata_pb2.ConfigEntries()
            try:
                entries.ParseFromString(value)
            except Exception:  # a foreign or corrupt value must not stop the watch
                log.warning("ignoring unparsable config at %r", key)
                return None
            table[name] = dict(entries.entries)
        return name if table is self._topics else ""

    async def run(self, client: EtcdClient) -> None:
        """Load and watch ``/config/`` until cancelled, telling listeners what changed."""
        prefix = self._keyspace.root + b"/config/"

        async def on_load(kvs: list[KV], _revision: int) -> None:
            self._topics.clear()
            self._brokers.clear()
            self._resolved.clear()
            for kv in kvs:
                self.apply(kv.key, kv.value)
            self._notify(None)

        async def on_events(events: tuple[WatchEvent, ...], _revision: int) -> None:
            changed: set[str] = set()
            everything = False
            for event in events:
                which = self.apply(event.kv.key, None if event.deleted else event.kv.value)
                if which == "":
                    everything = True
                elif which is not None:
                    changed.add(which)
            if everything:
                self._notify(None)
            elif changed:
                self._notify(changed)

        await load_then_watch(client, prefix, on_load, on_events)

    def _notify(self, topics: set[str] | None) -> None:
        for listener in self.listeners:
            listener(topics)
