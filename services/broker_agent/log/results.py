"""Values the log hands back to the broker: what an append did, what a read found."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.broker_agent.log.batch import BatchHeader
from services.broker_agent.log.producer_state import BatchMetadata

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


@dataclass(frozen=True)
class LogAppendInfo:
    """Outcome of one append. An empty follower append has ``valid_bytes == 0`` and
    offsets of -1 (the fetcher then keeps its fetch offset, as Kafka's does)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    valid_bytes: int
    log_start_offset: int
    # An idempotent producer's retry of a batch already in the log: nothing was appended and
    # the offsets are the original batch's.
    duplicate: bool = False

    @classmethod
    def of_duplicate(cls, batch: BatchMetadata, log_start_offset: int) -> LogAppendInfo:
        return cls(
            first_offset=batch.first_offset,
            last_offset=batch.last_offset,
            max_timestamp=batch.timestamp,
            offset_of_max_timestamp=batch.first_offset,
            record_count=batch.last_offset - batch.first_offset + 1,
            valid_bytes=0,
            log_start_offset=log_start_offset,
            duplicate=True,
        )

    @classmethod
    def of(
        cls, headers: Sequence[BatchHeader], valid_bytes: int, log_start_offset: int
    ) -> LogAppendInfo:
        """Summarise the appended batches (at least one)."""
        top = max(headers, key=lambda header: header.max_timestamp)
        return cls(
            first_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            max_timestamp=top.max_timestamp,
            offset_of_max_timestamp=top.base_offset,
            record_count=sum(header.record_count for header in headers),
            valid_bytes=valid_bytes,
            log_start_offset=log_start_offset,
        )


@dataclass(frozen=True)
class FetchDataInfo:
    """Whole batches read from ``fetch_offset`` on, with the offsets seen at read time."""

    fetch_offset: int
    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


@dataclass(frozen=True)
class TimestampAndOffset:
    """A ListOffsets answer; ``timestamp`` is -1 for earliest/latest lookups and
    ``leader_epoch`` -1 when unknown."""

    timestamp: int
    offset: int
    leader_epoch: int
