"""ListOffsets, OffsetsForLeaderEpoch and the fetch's divergence check, as a leader answers.

Consumers see offsets up to the high watermark (the latest offset *is* the high watermark);
followers see the whole log (the latest offset is the log end), and ask where an epoch ends to
truncate (Kafka's lastOffsetForLeaderEpoch), or learn it from a fetch whose last fetched epoch
the leader's history contradicts. Split from ``fetch`` so each module stays small.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.broker_agent.follower.fetch_state import EpochEndOffset
from services.broker_agent.log import KafkaStorageError, Log
from services.broker_agent.model import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    UNDEFINED_EPOCH,
    Code,
    TopicPartition,
)
from services.broker_agent.partition import PartitionError
from services.broker_agent.replica_manager import ReplicaManager


@dataclass(frozen=True)
class OffsetResult:
    tp: TopicPartition
    error: Code = Code.NONE
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


def list_offsets(
    replicas: ReplicaManager, replica_id: int, requests: Sequence[tuple[TopicPartition, int, int]]
) -> list[OffsetResult]:
    """(tp, current leader epoch, timestamp) -> offsets; consumers see up to the HW."""
    out = []
    for tp, current_epoch, timestamp in requests:
        try:
            partition = replicas.leader_partition(tp)
            log_ = partition.check_leader(current_epoch)
            found = log_.offset_for_timestamp(timestamp)
        except PartitionError as exc:
            out.append(OffsetResult(tp, exc.code))
            continue
        except KafkaStorageError:
            out.append(OffsetResult(tp, Code.KAFKA_STORAGE_ERROR))
            continue
        except ValueError:
            out.append(OffsetResult(tp, Code.INVALID_REQUEST))
            continue
        if found is None:
            out.append(OffsetResult(tp))
            continue
        offset, ts, epoch = found.offset, found.timestamp, found.leader_epoch
        if replica_id < 0:
            hw = log_.high_watermark
            if timestamp == LATEST_TIMESTAMP:
                offset = hw
                epoch = partition.leader_epoch
            elif timestamp != EARLIEST_TIMESTAMP and offset >= hw:
                out.append(OffsetResult(tp))
                continue
        out.append(OffsetResult(tp, Code.NONE, ts, offset, epoch))
    return out


def offsets_for_leader_epoch(
    replicas: ReplicaManager, requests: Sequence[tuple[TopicPartition, int, int]]
) -> list[tuple[TopicPartition, Code, int, int]]:
    """(tp, current leader epoch, epoch) -> (tp, error, epoch, end offset) from the leader's
    epoch cache (Kafka's lastOffsetForLeaderEpoch)."""
    out = []
    for tp, current_epoch, epoch in requests:
        try:
            partition = replicas.leader_partition(tp)
            log_ = partition.check_leader(current_epoch)
            found_epoch, end = log_.end_offset_for_epoch(epoch)
        except PartitionError as exc:
            out.append((tp, exc.code, UNDEFINED_EPOCH, -1))
            continue
        except KafkaStorageError:
            out.append((tp, Code.KAFKA_STORAGE_ERROR, UNDEFINED_EPOCH, -1))
            continue
        out.append((tp, Code.NONE, found_epoch, end))
    return out


def diverging_epoch(log_: Log, last_fetched_epoch: int, fetch_offset: int) -> EpochEndOffset | None:
    """The leader's end of the follower's last epoch, if the follower's log diverges."""
    if last_fetched_epoch < 0:
        return None
    epoch, end = log_.end_offset_for_epoch(last_fetched_epoch)
    if epoch == UNDEFINED_EPOCH or end < 0:
        return None
    if epoch < last_fetched_epoch or end < fetch_offset:
        return EpochEndOffset(epoch, end)
    return None
