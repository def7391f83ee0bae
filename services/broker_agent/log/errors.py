"""Errors raised by the partition log.

Each error carries the Kafka protocol error code the broker should answer with, so the
servicer's single error mapping can translate them without knowing the log's internals.
The numbers are those of ``leasehold.common.v1.ErrorCode`` (Kafka's own codes); this
package deliberately does not import the generated protobuf code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from leasehold.records.format import CorruptRecordError, InvalidRecordError, RecordBatchError

# The record codec's errors are the log's: one hierarchy, so a CorruptRecordError raised while
# parsing a batch is caught wherever the log's errors are.
LogError = RecordBatchError


class KafkaStorageError(LogError):
    """The disk failed under us (I/O error, missing file): the replica is offline."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class RecordTooLargeError(LogError):
    """A leader batch is larger than the topic's ``max.message.bytes``."""

    error_code = 10  # MESSAGE_TOO_LARGE


class OffsetOutOfOrderError(LogError):
    """A follower append whose offsets do not continue the log (or go backwards inside)."""

    error_code = 2  # CORRUPT_MESSAGE: Kafka reports out-of-order follower data this way


class OffsetOutOfRangeError(LogError):
    """A read (or log start offset move) outside ``[log_start_offset, log_end_offset]``."""

    error_code = 1  # OFFSET_OUT_OF_RANGE


class InvalidProducerEpochError(LogError):
    """An idempotent producer's batch under an epoch older than the one this log has seen."""

    error_code = 47  # INVALID_PRODUCER_EPOCH


class OutOfOrderSequenceError(LogError):
    """An idempotent producer's batch whose first sequence does not follow its last one."""

    error_code = 45  # OUT_OF_ORDER_SEQUENCE_NUMBER


class UnknownProducerIdError(LogError):
    """A batch past sequence 0 from a producer this log holds no state of."""

    error_code = 59  # UNKNOWN_PRODUCER_ID


class InconsistentTopicIdError(LogError):
    """A log directory on disk belongs to another incarnation of the topic."""

    error_code = 103  # INCONSISTENT_TOPIC_ID


@contextmanager
def storage_errors(context: str) -> Iterator[None]:
    """Re-raise an OSError inside the block as KafkaStorageError("<context>: <error>")."""
    try:
        yield
    except OSError as exc:
        raise KafkaStorageError(f"{context}: {exc}") from exc


__all__ = [
    "CorruptRecordError",
    "InconsistentTopicIdError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "KafkaStorageError",
    "LogError",
    "OffsetOutOfOrderError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordTooLargeError",
    "UnknownProducerIdError",
    "storage_errors",
]
