"""Choosing a partition for a record the way Kafka's producer does.

A keyed record goes to ``toPositive(murmur2(key)) % partitions``, bit for bit Kafka's default
partitioner, so a key lands on the same partition number whether Kafka or Leasehold clients wrote
it. Records without a key are spread round robin. A custom partitioner is any callable
``(topic, key, partition_count) -> partition``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

Partitioner = Callable[[str, bytes | None, int], int]

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (32-bit MurmurHash2, seed 0x9747b28c) as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def key_partition(key: bytes, partition_count: int) -> int:
    """Kafka's ``toPositive(murmur2(key)) % numPartitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partition_count


class DefaultPartitioner:
    """Keyed records by murmur2 hash; unkeyed ones round robin per topic."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count] = {}

    def __call__(self, topic: str, key: bytes | None, partition_count: int) -> int:
        if key is not None:
            return key_partition(key, partition_count)
        counter = self._counters.setdefault(topic, itertools.count())
        return next(counter) % partition_count
