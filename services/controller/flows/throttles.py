"""Replication throttles for reassigned replicas (KIP-73), as topic config edits.

While a partition moves, its existing replicas (the leaders that serve the copy) are listed in
``leader.replication.throttled.replicas`` and the replicas being added in
``follower.replication.throttled.replicas`` (entries ``partition:broker``), so the broker-level
``*.replication.throttled.rate`` caps the copy traffic. When the reassignment completes (or is
cancelled) the partition's entries are removed. An operator's ``*`` (throttle everything) is left
alone. Pure functions; the flow applies them with a compare-and-set on the topic config key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.controller import codec

LEADER_THROTTLED = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED = "follower.replication.throttled.replicas"


def _entries(value: str) -> list[str]:
    return [e.strip() for e in value.split(",") if e.strip()]


def with_partition(value: str, partition: int, brokers: Iterable[int]) -> str:
    """``value`` with exactly ``partition:b`` for each broker in ``brokers`` for that partition."""
    entries = _entries(value)
    if entries == ["*"]:
        return value
    kept = [e for e in entries if e.split(":")[0] != str(partition)]
    kept += [f"{partition}:{b}" for b in brokers]
    return ",".join(kept)


def edit_topic_config(
    entries: Mapping[str, str],
    changes: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]],
) -> dict[str, str]:
    """Apply ``{partition: (leader_brokers, follower_brokers)}`` to a topic's config entries.

    Empty broker tuples remove the partition's entries; a list left empty is removed.
    """
    out = dict(entries)
    for key, index in ((LEADER_THROTTLED, 0), (FOLLOWER_THROTTLED, 1)):
        value = out.get(key, "")
        for partition in sorted(changes):
            value = with_partition(value, partition, changes[partition][index])
        if value:
            out[key] = value
        else:
            out.pop(key, None)
    return out


def config_updater(changes: Mapping[int, tuple[tuple[int, ...], tuple[int, ...]]]):
    """An updater for ``ControllerStore.read_modify_write`` of ``/config/topics/<name>``."""

    def update(old: bytes | None) -> bytes | None:
        current = codec.decode_config(old) if old is not None else {}
        new = edit_topic_config(current, changes)
        if new == current:
            return old
        return codec.encode_config(new) if new or old is not None else None

    return update
