"""The broker agent's partition log storage (ARCHITECTURE §6 "Log").

Pure Python over files: record batches stored and served verbatim, segments with sparse
offset and time indexes, a leader-epoch cache, watermark checkpoints, crash recovery that cuts
torn tails, roll and retention, and a LogManager that hosts many logs within a bounded number
of open file descriptors. Everything is synchronous; appends are small.
"""

from services.broker_agent.log.batch import (
    BatchHeader,
    BatchView,
    DecodedRecord,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)
from services.broker_agent.log.config import LogConfig
from services.broker_agent.log.epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)
from services.broker_agent.log.errors import (
    CorruptRecordError,
    InconsistentTopicIdError,
    InvalidRecordError,
    KafkaStorageError,
    LogError,
    OffsetOutOfOrderError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from services.broker_agent.log.handles import FileHandleCache
from services.broker_agent.log.log import Log
from services.broker_agent.log.manager import LogManager
from services.broker_agent.log.results import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchDataInfo,
    LogAppendInfo,
    TimestampAndOffset,
)

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "BatchHeader",
    "BatchView",
    "CorruptRecordError",
    "DecodedRecord",
    "EpochEntry",
    "FetchDataInfo",
    "FileHandleCache",
    "InconsistentTopicIdError",
    "InvalidRecordError",
    "KafkaStorageError",
    "LeaderEpochCache",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogError",
    "LogManager",
    "OffsetOutOfOrderError",
    "OffsetOutOfRangeError",
    "Record",
    "RecordTooLargeError",
    "TimestampAndOffset",
    "build_batch",
    "decode_records",
    "iter_batches",
]
