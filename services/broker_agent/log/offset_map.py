"""The cleaner's offset map: the latest offset of each key of a log's dirty section.

Kafka's ``SkeletonOffsetMap`` keys a fixed-size table by the MD5 of each record key, so a key of
any length costs the same. This one keeps the digests in a dict and bounds it by the same rule:
``log.cleaner.dedupe.buffer.size`` bytes make ``size / 24`` slots (16-byte hash plus 8-byte
offset), filled to ``log.cleaner.io.buffer.load.factor`` (0.9). When it is full the cleaner stops
at the last offset that fitted and cleans the rest in a later round.
"""

from __future__ import annotations

import hashlib

BYTES_PER_ENTRY = 24
LOAD_FACTOR = 0.9


def key_digest(key: bytes) -> bytes:
    return hashlib.md5(key, usedforsecurity=False).digest()


class OffsetMap:
    """Digest of a key -> the latest offset seen for it; ``latest_offset`` is the last put."""

    def __init__(self, buffer_bytes: int) -> None:
        if buffer_bytes < BYTES_PER_ENTRY:
            raise ValueError(f"an offset map needs at least {BYTES_PER_ENTRY} bytes")
        self.capacity = max(1, int(buffer_bytes // BYTES_PER_ENTRY * LOAD_FACTOR))
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.capacity

    def put(self, key: bytes, offset: int) -> bool:
        """Record ``offset`` as the latest of ``key``; False (nothing changed) when the map is
        full and the key is new."""
        digest = key_digest(key)
        if digest not in self._offsets and self.full:
            return False
        self._offsets[digest] = offset
        self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 when the dirty section does not hold it."""
        return self._offsets.get(key_digest(key), -1)

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1
