"""Producer-state snapshots: ``<offset>.snapshot`` files in a log directory (Kafka's own).

A snapshot holds every producer entry as of a log end offset. The log writes one when it rolls
a segment and when it closes (only if producers changed since the last one), so a restart scans
at most the batch headers after the newest snapshot, and a truncation reloads from the newest
snapshot at or below the truncation point. Only the newest ``KEEP`` snapshots are kept.

Layout (big-endian): ``b"LHPS"``, version int16, CRC32C uint32 of everything after it, the
offset int64, the entry count int32, then per entry the producer id int64, epoch int16, batch
count uint8, and per batch first and last sequence int32, first and last offset int64 and max
timestamp int64. A file that fails its CRC or does not parse is ignored (and deleted): the log
then scans from an older snapshot, or from its start.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from pathlib import Path

import crc32c

from services.broker_agent.log.checkpoint import TMP_SUFFIX
from services.broker_agent.log.producer_state import BatchMetadata, ProducerEntry

log = logging.getLogger(__name__)

SUFFIX = ".snapshot"
KEEP = 2
_MAGIC = b"LHPS"
_VERSION = 1
_PREFIX = struct.Struct(">4shI")
_BODY_HEAD = struct.Struct(">qi")
_ENTRY = struct.Struct(">qhB")
_BATCH = struct.Struct(">iiqqq")
_NAME = re.compile(r"^(\d{20})\.snapshot$")


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def list_snapshots(directory: Path) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for name in names if (m := _NAME.match(name)))


def encode(offset: int, entries: dict[int, ProducerEntry]) -> bytes:
    body = bytearray(_BODY_HEAD.pack(offset, len(entries)))
    for entry in entries.values():
        body += _ENTRY.pack(entry.producer_id, entry.epoch, len(entry.batches))
        for batch in entry.batches:
            body += _BATCH.pack(*batch)
    return _PREFIX.pack(_MAGIC, _VERSION, crc32c.crc32c(body)) + bytes(body)


def decode(data: bytes) -> tuple[int, dict[int, ProducerEntry]]:
    """``(offset, entries)``; ValueError if the bytes are not a whole, valid snapshot."""
    if len(data) < _PREFIX.size + _BODY_HEAD.size:
        raise ValueError("snapshot too short")
    magic, version, crc = _PREFIX.unpack_from(data)
    body = memoryview(data)[_PREFIX.size :]
    if magic != _MAGIC or version != _VERSION or crc32c.crc32c(body) != crc:
        raise ValueError("not a valid producer-state snapshot")
    offset, count = _BODY_HEAD.unpack_from(body)
    pos = _BODY_HEAD.size
    entries: dict[int, ProducerEntry] = {}
    try:
        for _ in range(count):
            pid, epoch, batches = _ENTRY.unpack_from(body, pos)
            pos += _ENTRY.size
            entry = ProducerEntry(pid, epoch)
            for _ in range(batches):
                entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, pos)))
                pos += _BATCH.size
            entries[pid] = entry
    except struct.error as exc:
        raise ValueError(f"truncated snapshot: {exc}") from None
    if pos != len(body):
        raise ValueError("trailing bytes in snapshot")
    return offset, entries


def write(directory: Path, offset: int, entries: dict[int, ProducerEntry]) -> None:
    """Write the snapshot at ``offset`` (renamed into place, not fsynced: see
    ``producer_log``) and drop all but the newest ``KEEP``."""
    path = snapshot_path(directory, offset)
    tmp = path.with_name(path.name + TMP_SUFFIX)
    tmp.write_bytes(encode(offset, entries))
    os.replace(tmp, path)
    for old in list_snapshots(directory)[:-KEEP]:
        snapshot_path(directory, old).unlink(missing_ok=True)


def read_latest(directory: Path, at_most: int) -> tuple[int, dict[int, ProducerEntry]] | None:
    """The newest readable snapshot at or below ``at_most``; unreadable ones are deleted."""
    for offset in reversed(list_snapshots(directory)):
        if offset > at_most:
            continue
        path = snapshot_path(directory, offset)
        try:
            found, entries = decode(path.read_bytes())
            if found != offset:
                raise ValueError(f"holds offset {found}")
            return found, entries
        except (OSError, ValueError) as exc:
            log.warning("ignoring producer snapshot %s: %s", path, exc)
            path.unlink(missing_ok=True)
    return None


def delete_above(directory: Path, offset: int) -> None:
    """Remove snapshots taken beyond ``offset`` (the log was truncated below them)."""
    for found in list_snapshots(directory):
        if found > offset:
            snapshot_path(directory, found).unlink(missing_ok=True)


def delete_all(directory: Path) -> None:
    for found in list_snapshots(directory):
        snapshot_path(directory, found).unlink(missing_ok=True)
