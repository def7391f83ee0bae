"""Topic and broker configs: parse, validate, alter and resolve the stored text values.

Configs are stored as text (``ConfigEntries`` under ``/config/topics/<name>`` and
``/config/brokers/<id>``, the cluster-wide default under broker id ``""``), exactly what an
operator typed. The admin service validates writes here, the controller and broker agents resolve
the values they act on here, the CLI shows the docs from here; the names, defaults and checks
themselves live in :mod:`leasehold.config_schema`.

Parsing and messages follow Kafka's ``ConfigDef`` ("Invalid value x for configuration y: ...")
so operators see familiar errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from leasehold.common.v1 import common_pb2
from leasehold.config_schema import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    AlterOp,
    ConfigKey,
    ConfigSource,
    ConfigType,
    ResourceType,
)
from leasehold.errors import InvalidRequestError
from leasehold.javacompat import java_list_str, java_split, java_trim, parse_java_int

__all__ = [
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "AlterOp",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "EffectiveConfig",
    "ResolvedConfig",
    "ResourceType",
    "ThrottledReplicas",
    "apply_alter_ops",
    "effective",
    "format_value",
    "parse_value",
    "schema",
    "throttled_replicas",
    "validate",
]

_INVALID_CONFIG = common_pb2.ERROR_CODE_INVALID_CONFIG
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def _invalid(name: str, shown: str, problem: str) -> InvalidRequestError:
    return InvalidRequestError(
        _INVALID_CONFIG, f"Invalid value {shown} for configuration {name}: {problem}"
    )


def _shown(value: object) -> str:
    """How Kafka's ConfigException prints a parsed value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return java_list_str(value)
    return str(value)


def schema(resource_type: ResourceType) -> Mapping[str, ConfigKey]:
    return TOPIC_CONFIGS if resource_type == ResourceType.TOPIC else BROKER_CONFIGS


def parse_value(key: ConfigKey, raw: str) -> object:
    """Kafka's ``ConfigDef.parseType`` then the key's validator; raises INVALID_CONFIG."""
    trimmed = java_trim(raw)
    value: object
    if key.type is ConfigType.BOOLEAN:
        if trimmed.lower() not in ("true", "false"):
            raise _invalid(key.name, raw, "Expected value to be either true or false")
        value = trimmed.lower() == "true"
    elif key.type in (ConfigType.INT, ConfigType.LONG):
        try:
            value = parse_java_int(trimmed, bits=32 if key.type is ConfigType.INT else 64)
        except ValueError:
            raise _invalid(key.name, raw, f"Not a number of type {key.type.value}") from None
    elif key.type is ConfigType.LIST:
        value = tuple(_LIST_SEPARATOR.split(trimmed)) if trimmed else ()
    elif key.type is ConfigType.DOUBLE:
        try:
            value = float(trimmed)
        except ValueError:
            raise _invalid(key.name, raw, "Not a number of type DOUBLE") from None
    else:
        value = trimmed
    problem = key.validator(value) if key.validator is not None else None
    if problem is not None:
        raise _invalid(key.name, _shown(value), problem)
    return value


def format_value(key: ConfigKey, value: object) -> str:
    """Kafka's ``convertToString``: the text DescribeConfigs shows for a parsed value."""
    if key.type is ConfigType.LIST:
        return ",".join(str(v) for v in value)  # type: ignore[attr-defined]
    return _shown(value)


def _check_names(resource_type: ResourceType, names: Iterable[str]) -> Mapping[str, ConfigKey]:
    keys = schema(resource_type)
    kind = "topic" if resource_type == ResourceType.TOPIC else "broker"
    for name in names:
        if name not in keys:
            raise InvalidRequestError(_INVALID_CONFIG, f"Unknown {kind} config name: {name}")
    return keys


def validate(resource_type: ResourceType, entries: Mapping[str, str]) -> dict[str, object]:
    """Check names, then values; return the parsed values. Raises INVALID_CONFIG naming the key."""
    keys = _check_names(resource_type, entries)
    return {name: parse_value(keys[name], raw) for name, raw in entries.items()}


def apply_alter_ops(
    resource_type: ResourceType,
    current: Mapping[str, str],
    ops: Sequence[tuple[str, AlterOp, str]],
) -> dict[str, str]:
    """IncrementalAlterConfigs on one resource's stored entries; returns the new entries.

    As Kafka's ``prepareIncrementalConfigs``: SET replaces, DELETE removes (back to the inherited
    value), APPEND adds list items not yet present, SUBTRACT removes list items; APPEND and
    SUBTRACT start from the default when the key is unset. The result is validated as a whole.
    """
    names = [name for name, _, _ in ops]
    if len(set(names)) != len(names):
        raise InvalidRequestError(
            common_pb2.ERROR_CODE_INVALID_REQUEST, "Error due to duplicate config keys"
        )
    keys = _check_names(resource_type, names)
    result = dict(current)
    for name, op, value in ops:
        key = keys[name]
        if op == AlterOp.SET:
            result[name] = value
        elif op == AlterOp.DELETE:
            result.pop(name, None)
        else:
            verb = "append" if op == AlterOp.APPEND else "subtract"
            if key.type is not ConfigType.LIST:
                raise InvalidRequestError(
                    _INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
                )
            old_text = result.get(name, format_value(key, key.default))
            if op == AlterOp.APPEND:
                old = java_split(old_text, ",") if old_text else []
                result[name] = ",".join(old + [v for v in java_split(value, ",") if v not in old])
            else:
                remaining = java_split(old_text, ",")
                for item in java_split(value, ","):
                    if item in remaining:
                        remaining.remove(item)
                result[name] = ",".join(remaining)
    validate(resource_type, result)
    return result


@dataclass(frozen=True)
class ResolvedConfig:
    """One key's value for a resource and the level it came from (a DescribeConfigs entry)."""

    name: str
    value: str  # as DescribeConfigs shows it
    parsed: object
    source: ConfigSource
    doc: str

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT


@dataclass(frozen=True)
class EffectiveConfig:
    """Every key of one resource resolved to a value and its source, with typed getters."""

    entries: Mapping[str, ResolvedConfig]

    def __getitem__(self, name: str) -> ResolvedConfig:
        return self.entries[name]

    def _typed(self, name: str, kind: type) -> object:
        value = self.entries[name].parsed
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TypeError(f"config {name} is not of type {kind.__name__}")
        return value

    def get_int(self, name: str) -> int:
        return self._typed(name, int)  # type: ignore[return-value]

    def get_bool(self, name: str) -> bool:
        return self._typed(name, bool)  # type: ignore[return-value]

    def get_str(self, name: str) -> str:
        return self._typed(name, str)  # type: ignore[return-value]

    def get_list(self, name: str) -> tuple[str, ...]:
        return self._typed(name, tuple)  # type: ignore[return-value]


def effective(
    resource_type: ResourceType,
    topic_entries: Mapping[str, str] | None = None,
    broker_entries: Mapping[str, str] | None = None,
    cluster_entries: Mapping[str, str] | None = None,
) -> EffectiveConfig:
    """Resolve every key: topic override, then broker override, then cluster default, then Kafka's.

    A topic key inherits from the broker levels only where a broker config of the same name
    exists (min.insync.replicas, unclean.leader.election.enable). For a broker resource
    ``topic_entries`` is ignored; for the cluster-default resource pass only ``cluster_entries``.
    Stored values were validated when written; one that no longer parses (a hand-edited key) is
    skipped so the next level applies, because a bad override must not take a broker down.
    """
    levels: list[tuple[ConfigSource, Mapping[str, str], Mapping[str, ConfigKey]]] = []
    if resource_type == ResourceType.TOPIC:
        levels.append((ConfigSource.TOPIC, topic_entries or {}, TOPIC_CONFIGS))
    levels.append((ConfigSource.BROKER, broker_entries or {}, BROKER_CONFIGS))
    levels.append((ConfigSource.CLUSTER_DEFAULT, cluster_entries or {}, BROKER_CONFIGS))
    resolved: dict[str, ResolvedConfig] = {}
    for name, key in schema(resource_type).items():
        source, parsed = ConfigSource.DEFAULT, key.default
        for level_source, entries, level_keys in levels:
            if name in entries and name in level_keys:
                try:
                    parsed = parse_value(level_keys[name], entries[name])
                except InvalidRequestError:
                    continue
                source = level_source
                break
        resolved[name] = ResolvedConfig(name, format_value(key, parsed), parsed, source, key.doc)
    return EffectiveConfig(MappingProxyType(resolved))


@dataclass(frozen=True)
class ThrottledReplicas:
    """A parsed ``*.replication.throttled.replicas`` value."""

    all_replicas: bool
    replicas: frozenset[tuple[int, int]]  # (partition, broker)

    def applies(self, partition: int, broker: int) -> bool:
        return self.all_replicas or (partition, broker) in self.replicas


def throttled_replicas(value: Sequence[str]) -> ThrottledReplicas:
    """Interpret a validated list value: ``["*"]`` or ``["0:1", "1:2"]``; empty items ignored."""
    items = [java_trim(v) for v in value]
    if "".join(items) == "*":
        return ThrottledReplicas(True, frozenset())
    pairs = (i.split(":") for i in items if i)
    return ThrottledReplicas(False, frozenset((int(p), int(b)) for p, b in pairs))
