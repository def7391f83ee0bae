"""Writing group records to this broker's ``__consumer_offsets`` partition, acks=all.

The records go into one batch appended by the partition as leader, under the leader epoch the
shard was loaded at (a shard outlived by a newer epoch cannot write); the answer waits until the
high watermark passes the batch — every in-sync replica has it — and the leader has flushed it.
Failures become the coordinator errors clients know (Kafka's CoordinatorRuntime mapping):
not leading any more is NOT_COORDINATOR, too few replicas or too slow COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from leasehold.common.v1 import common_pb2 as c
from services.broker_agent.group.errors import group_error
from services.broker_agent.group.records import GroupRecord, encode
from services.broker_agent.log import KafkaStorageError, LogError, Record, RecordTooLargeError
from services.broker_agent.model import Code, TopicPartition
from services.broker_agent.partition import PartitionError
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.signals import wait_any

_NOT_COORDINATOR = (Code.NOT_LEADER_OR_FOLLOWER, Code.FENCED_LEADER_EPOCH, Code.KAFKA_STORAGE_ERROR)


def _coordinator_error(code: int, what: str):
    if code in _NOT_COORDINATOR or code == Code.UNKNOWN_LEADER_EPOCH:
        return group_error(
            c.ERROR_CODE_NOT_COORDINATOR, f"This is not the correct coordinator ({what})."
        )
    if code in (
        Code.NOT_ENOUGH_REPLICAS,
        Code.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Code.REQUEST_TIMED_OUT,
        Code.UNKNOWN_TOPIC_OR_PARTITION,
    ):
        return group_error(
            c.ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
            f"The coordinator could not write the group's records ({what}).",
        )
    return group_error(c.ERROR_CODE_UNKNOWN_SERVER_ERROR, f"cannot write group records: {what}")


class RecordWriter:
    """Appends to ``tp`` as its leader at ``leader_epoch`` and waits for the in-sync replicas."""

    def __init__(
        self,
        replicas: ReplicaManager,
        tp: TopicPartition,
        leader_epoch: int,
        leadership: int,
        timeout_ms: int,
    ) -> None:
        self._replicas = replicas
        self.tp = tp
        self.leader_epoch = leader_epoch
        # The partition's leadership this shard belongs to: a new leader epoch without a change
        # of leader keeps it (and the shard); losing leadership ends it.
        self.leadership = leadership
        self._timeout_s = timeout_ms / 1000.0
        self.last_offset = -1  # the end of the last batch appended

    def append(self, records: Sequence[GroupRecord], now_ms: int) -> int:
        """Append ``records`` as one batch; the offset the answer must wait for. Raises the
        coordinator error when nothing could be written (nothing was)."""
        partition = self._replicas.partition(self.tp)
        if partition is None:
            raise _coordinator_error(Code.NOT_LEADER_OR_FOLLOWER, "no local replica")
        entries = []
        for record in records:
            key, value = encode(record)
            entries.append(Record(value, key, (), now_ms))
        min_isr = self._replicas.settings(self.tp.topic).min_insync_replicas
        try:
            info = partition.append_as_leader(
                entries,
                current_leader_epoch=self.leader_epoch,
                required_acks=-1,
                min_insync_replicas=min_isr,
            )
        except PartitionError as exc:
            raise _coordinator_error(exc.code, str(exc)) from None
        except RecordTooLargeError as exc:
            raise _coordinator_error(Code.MESSAGE_TOO_LARGE, str(exc)) from None
        except KafkaStorageError as exc:
            raise _coordinator_error(Code.KAFKA_STORAGE_ERROR, str(exc)) from None
        except LogError as exc:
            raise _coordinator_error(Code.UNKNOWN_SERVER_ERROR, str(exc)) from None
        self.last_offset = info.last_offset + 1
        return self.last_offset

    async def committed(self, required_offset: int) -> None:
        """Wait until ``required_offset`` is below the high watermark and flushed."""
        if required_offset <= 0:
            return
        partition = self._replicas.partition(self.tp)
        if partition is None:
            raise _coordinator_error(Code.NOT_LEADER_OR_FOLLOWER, "no local replica")
        min_isr = self._replicas.settings(self.tp.topic).min_insync_replicas
        deadline = time.monotonic() + self._timeout_s
        while True:
            future = partition.signal.future()
            code = partition.acks_all_outcome(required_offset, self.leadership, min_isr)
            if code is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                code = Code.REQUEST_TIMED_OUT
                break
            await wait_any([future], remaining)
        if code != Code.NONE:
            raise _coordinator_error(code, f"write at {required_offset} not committed")
        log = partition.log
        if log is None:
            raise _coordinator_error(Code.NOT_LEADER_OR_FOLLOWER, "no log")
        try:
            await asyncio.to_thread(log.flush)
        except KafkaStorageError as exc:
            raise _coordinator_error(Code.KAFKA_STORAGE_ERROR, str(exc)) from None
