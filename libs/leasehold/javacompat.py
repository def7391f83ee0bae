"""Small reproductions of Java behaviour that Kafka's results and messages depend on.

Operators compare Leasehold's output with Kafka's: the same replica assignment for the same
brokers, the same ``kafka-reassign-partitions`` JSON, the same error text. Some of that output is
shaped by Java itself rather than by Kafka's code: ``String.compareTo`` orders by UTF-16 code
unit, ``String.length()`` counts UTF-16 code units, ``HashSet`` iterates in hash-bucket order and
``Integer.parseInt`` has its own notion of a number. This module holds those rules in one place so
the admin modules can say "as Java would" without each re-deriving it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_HASH_SET_INITIAL_CAPACITY = 16
_HASH_SET_LOAD_FACTOR = 0.75


def java_string_key(text: str) -> bytes:
    """Sort key that orders strings as Java's ``String.compareTo`` does.

    Java compares UTF-16 code units; Python compares code points. They differ only when a
    supplementary character meets a code point in U+E000..U+FFFF, but rack names and topic names
    come from users, so the order must not depend on luck. Big-endian UTF-16 bytes compare
    exactly like the code-unit sequence, including "a prefix sorts first".
    """
    return text.encode("utf-16-be", "surrogatepass")


def java_length(text: str) -> int:
    """``String.length()``: the number of UTF-16 code units (an emoji counts twice)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value > INT32_MAX else value


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 units, in int32."""
    encoded = text.encode("utf-16-be", "surrogatepass")
    result = 0
    for i in range(0, len(encoded), 2):
        result = (31 * result + ((encoded[i] << 8) | encoded[i + 1])) & 0xFFFFFFFF
    return _to_int32(result)


def java_int_hash(value: int) -> int:
    """``Integer.hashCode()`` is the value itself."""
    return _to_int32(value)


def java_topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()``."""
    result = _to_int32(31 + partition)
    return _to_int32(31 * result + java_string_hash(topic))


def java_hash_set_order(items: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The order in which a ``java.util.HashSet`` filled with ``items`` iterates.

    Kafka formats several error messages straight from a ``HashSet`` (duplicate brokers, duplicate
    topics), so to print the same text we need the same order: bucket index of the spread hash in
    the final table size, ties in insertion order (a resize splits buckets without reordering).
    Buckets are never treeified for the small sets these messages hold.
    """
    unique: list[T] = list(dict.fromkeys(items))
    capacity = _HASH_SET_INITIAL_CAPACITY
    while len(unique) > capacity * _HASH_SET_LOAD_FACTOR:
        capacity *= 2

    def bucket(item: T) -> int:
        h = hash_code(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)  # sorted() is stable: insertion order within a bucket


def java_list_str(values: Sequence[object]) -> str:
    """``AbstractCollection.toString()``: ``[a, b, c]`` with elements unquoted."""
    return "[" + ", ".join(_java_str(v) for v in values) + "]"


def _java_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def java_trim(text: str) -> str:
    """``String.trim()`` strips every character up to U+0020, not Python's whitespace set."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_split(text: str, separator: str) -> list[str]:
    """``String.split`` on a literal: trailing empty parts dropped, but ``""`` gives ``[""]``."""
    if text == "":
        return [""]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_java_int(text: str, *, bits: int = 32) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, ASCII digits, in range.

    Python's ``int()`` also accepts surrounding whitespace and ``_`` separators, which Kafka
    rejects; raising ``ValueError`` here lets callers produce Kafka's message for the same input.
    """
    if not _JAVA_INTEGER.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (INT64_MIN, INT64_MAX)
    if not low <= value <= high:
        raise ValueError(f'For input string: "{text}"')
    return value
