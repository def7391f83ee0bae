"""The partitions a data-plane request names: which it may not name, and the fields the client
may leave out.

A partition that can never exist (a negative number, a topic name that is not legal) is refused
on its own, as Kafka answers it: the request's other partitions are served and the call is OK.
Only a partition listed twice fails the whole call (INVALID_ARGUMENT), since its two answers could
not be told apart. Names are checked before anything else sees them: they become file paths
(``<data-dir>/<topic>-<partition>``).

The ``optional`` fields of ``leasehold.broker.v1`` mean something when absent (protos/README.md):
an absent leader epoch is not checked (-1), an absent replica id is a consumer (-1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from leasehold.errors import InvalidRequestError
from leasehold.validation import INTERNAL_TOPICS, topic_name_problem
from services.broker_agent.model import Code, TopicPartition

NOT_GIVEN = -1

Refusals = dict[TopicPartition, tuple[Code, str]]
T = TypeVar("T")


def refusals(pairs: Iterable[tuple[str, int]], field: str = "topics") -> Refusals:
    """The partitions of ``pairs`` that cannot exist, with their error; INVALID_ARGUMENT (naming
    ``field``) when one is listed twice."""
    seen: set[tuple[str, int]] = set()
    names: dict[str, str | None] = {}  # each topic name is checked once, not once per partition
    out: Refusals = {}
    for topic, partition in pairs:
        if topic not in names:
            names[topic] = topic_name_problem(topic)
        problem = names[topic]
        if (topic, partition) in seen:
            shown = f"{topic}-{partition}" if problem is None else f"{partition} of a topic"
            raise InvalidRequestError(
                Code.INVALID_REQUEST, f"partition {shown} is listed twice", field=field
            )
        seen.add((topic, partition))
        if problem is not None:
            out[TopicPartition(topic, partition)] = (
                Code.INVALID_TOPIC_EXCEPTION,
                f"Topic name is invalid: {problem}",
            )
        elif partition < 0:
            out[TopicPartition(topic, partition)] = (
                Code.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition must be >= 0, got {partition}",
            )
    return out


def internal_refusals(pairs: Iterable[tuple[str, int]], refused: Refusals) -> Refusals:
    """``refused`` plus the partitions of internal topics (``__consumer_offsets``): only the
    group coordinators write them, as Kafka refuses produce requests to internal topics."""
    for topic, partition in pairs:
        if topic in INTERNAL_TOPICS:
            refused[TopicPartition(topic, partition)] = (
                Code.INVALID_TOPIC_EXCEPTION,
                f"Cannot append to internal topic {topic}",
            )
    return refused


def given(message, field: str) -> int:
    """The field's value, or -1 when the client left it out."""
    return getattr(message, field) if message.HasField(field) else NOT_GIVEN


def in_request_order(
    order: Iterable[TopicPartition],
    answered: Mapping[TopicPartition, T],
    refused: Refusals,
    answer: Callable[[TopicPartition, Code, str], T],
) -> list[T]:
    """The answers in request ``order``: each refused partition's made by ``answer``."""
    return [answered[tp] if tp in answered else answer(tp, *refused[tp]) for tp in order]
