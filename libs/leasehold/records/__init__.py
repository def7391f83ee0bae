"""Leasehold's record batch format: one codec for the broker's log and the SDK's clients.

``format`` holds the layout, the header parser and the errors; ``encode`` builds batches (the
producer appends records one by one, the broker builds a batch from decoded records); ``decode``
turns a batch back into records (consumers, and the broker for clients that ask it to).
"""

from leasehold.records.decode import (
    BatchView,
    DecodedRecord,
    decode_batch_records,
    decode_records,
    iter_batches,
)
from leasehold.records.encode import BatchBuilder, Record, build_batch
from leasehold.records.format import (
    CRC_START,
    HEADER_SIZE,
    LEGACY_HEADER_SIZE,
    LEGACY_MAGIC,
    LOG_OVERHEAD,
    MAGIC,
    MIN_HEADER_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatchError,
    increment_sequence,
    parse_header,
)

__all__ = [
    "CRC_START",
    "HEADER_SIZE",
    "LEGACY_HEADER_SIZE",
    "LEGACY_MAGIC",
    "LOG_OVERHEAD",
    "MAGIC",
    "MIN_HEADER_SIZE",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "BatchBuilder",
    "BatchHeader",
    "BatchView",
    "CorruptRecordError",
    "DecodedRecord",
    "InvalidRecordError",
    "Record",
    "RecordBatchError",
    "build_batch",
    "decode_batch_records",
    "decode_records",
    "increment_sequence",
    "iter_batches",
    "parse_header",
]
