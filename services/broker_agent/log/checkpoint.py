"""Checkpoint files: small text files replaced atomically, in Kafka's formats.

Every write goes to ``<name>.tmp``, is fsynced, renamed over the old file, and the directory
is fsynced, so after a crash a reader sees either the old or the new content, never a mix.
The formats are Kafka's (``version`` line, ``count`` line, one entry per line) so an operator
can read them with the tools and habits they already have.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from services.broker_agent.log.errors import KafkaStorageError

VERSION = 0
TMP_SUFFIX = ".tmp"


def fsync_dir(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: tmp file, fsync, rename, fsync the directory."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _entries_bytes(lines: list[str]) -> bytes:
    return ("\n".join([str(VERSION), str(len(lines)), *lines]) + "\n").encode("utf-8")


def _write_entries(path: Path, lines: list[str]) -> None:
    atomic_write(path, _entries_bytes(lines))


def _read_entries(path: Path, fields: int) -> list[list[str]]:
    """The entry lines of a checkpoint, split; [] when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    try:
        if int(lines[0]) != VERSION:
            raise ValueError(f"unknown version {lines[0]}")
        count = int(lines[1])
        entries = [line.split() for line in lines[2 : 2 + count]]
        if len(entries) != count or any(len(entry) != fields for entry in entries):
            raise ValueError("entry count or shape does not match")
    except (IndexError, ValueError) as exc:
        # A checkpoint is only ever replaced atomically, so damage means the disk is bad.
        raise KafkaStorageError(f"malformed checkpoint file {path}: {exc}") from exc
    return entries


def write_partition_offsets(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """One offset per partition (high watermarks, log start offsets), as Kafka's
    ``replication-offset-checkpoint``: ``<topic> <partition> <offset>`` lines."""
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    _write_entries(path, sorted(lines))


def read_partition_offsets(path: Path) -> dict[tuple[str, int], int]:
    try:
        return {(t, int(p)): int(o) for t, p, o in _read_entries(path, 3)}
    except ValueError as exc:
        raise KafkaStorageError(f"malformed checkpoint file {path}: {exc}") from exc


def epoch_entries_bytes(entries: Iterable[tuple[int, int]]) -> bytes:
    """The leader-epoch checkpoint's content: ``<epoch> <start offset>`` lines."""
    return _entries_bytes([f"{epoch} {start}" for epoch, start in entries])


def write_epoch_entries(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    atomic_write(path, epoch_entries_bytes(entries))


def read_epoch_entries(path: Path) -> list[tuple[int, int]]:
    try:
        return [(int(epoch), int(start)) for epoch, start in _read_entries(path, 2)]
    except ValueError as exc:
        raise KafkaStorageError(f"malformed checkpoint file {path}: {exc}") from exc


def write_offset(path: Path, offset: int) -> None:
    """A single offset (a log's recovery point)."""
    _write_entries(path, [str(offset)])


def read_offset(path: Path, default: int) -> int:
    entries = _read_entries(path, 1)
    if not entries:
        return default
    try:
        return int(entries[0][0])
    except ValueError as exc:
        raise KafkaStorageError(f"malformed checkpoint file {path}: {exc}") from exc


def topic_id_bytes(topic_id: str) -> bytes:
    """Kafka's ``partition.metadata``: which incarnation of the topic this directory holds."""
    return f"version: {VERSION}\ntopic_id: {topic_id}\n".encode()


def write_topic_id(path: Path, topic_id: str) -> None:
    atomic_write(path, topic_id_bytes(topic_id))


def read_topic_id(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip()
    raise KafkaStorageError(f"malformed partition metadata file {path}")
