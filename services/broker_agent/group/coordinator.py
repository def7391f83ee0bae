"""The broker's group coordinator: shards by ``__consumer_offsets`` partition, loaded when this
broker becomes the partition's leader and dropped when it stops being it.

Every call finds its group's shard through Kafka's rule (``partition_for``); a group whose
partition is not led here is NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
FindCoordinator, served by any broker, answers from the metadata cache and asks the controller to
create ``__consumer_offsets`` the first time it is missing. A timer task removes members whose
session timed out or who did not revoke in time.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from leasehold.common.v1 import common_pb2 as c
from leasehold.controller.v1 import controller_pb2
from leasehold.errors import LeaseholdError
from services.broker_agent.group import heartbeat as hb
from services.broker_agent.group import offsets
from services.broker_agent.group.errors import MAX_ID_LENGTH, check_id, group_error, invalid
from services.broker_agent.group.group import ConsumerGroup
from services.broker_agent.group.model import (
    OFFSETS_TOPIC,
    TP,
    CommittedOffset,
    GroupConfig,
    GroupState,
    partition_for,
)
from services.broker_agent.group.shard import Shard, read_records
from services.broker_agent.group.writer import RecordWriter
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    NO_LEADER,
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplica,
    TopicPartition,
)
from services.broker_agent.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TIMER_TICK_S = 0.25
CREATE_RETRY_S = 1.0


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True)
class CoordinatorAnswer:
    group_id: str
    node_id: int = -1
    host: str = ""
    port: int = -1
    error: int = c.ERROR_CODE_NONE
    message: str = ""


class GroupCoordinator:
    def __init__(
        self,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        config: GroupConfig,
        create_topic: Callable[[], asyncio.Future | None] | None = None,
        wall_clock: Callable[[], int] = wall_ms,
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.replicas = replicas
        self.metadata = metadata
        self.config = config
        self._create_topic = create_topic
        self._wall = wall_clock
        self._clock = clock
        self.shards: dict[int, Shard] = {}
        self._loads: dict[int, asyncio.Task] = {}
        self._creating: asyncio.Task | None = None
        self._last_create = float("-inf")
        self.context = hb.Context(config, self._topic_partitions, lambda: uuid.uuid4().hex)

    # ------------------------------------------------------------------ roles

    def on_roles(self, led: Sequence[tuple[int, int]], not_led: Sequence[int]) -> None:
        """The replica manager applied a change of ``__consumer_offsets`` roles: ``led`` are
        (partition, leader epoch) led here now, ``not_led`` the partitions no longer led."""
        for index in not_led:
            self.unload(index)
        for index, epoch in led:
            tp = TopicPartition(OFFSETS_TOPIC, index)
            partition = self.replicas.partition(tp)
            if partition is None:
                continue
            shard = self.shards.get(index)
            if shard is not None and shard.writer.leadership == partition.leadership:
                # Still the leader, maybe at a new epoch (an ISR change): the state stands.
                shard.writer.leader_epoch = max(shard.writer.leader_epoch, epoch)
                continue
            self.unload(index)
            writer = RecordWriter(
                self.replicas, tp, epoch, partition.leadership, self.config.commit_timeout_ms
            )
            shard = self.shards[index] = Shard(index, writer)
            self._loads[index] = asyncio.create_task(self._load(shard), name=f"group-load-{index}")

    def leader_and_isr_applied(self, request: LeaderAndIsr, result: ControlResult) -> None:
        """Follow the leadership of ``__consumer_offsets`` partitions a LeaderAndIsr changed."""
        errors = result.errors_by_partition()
        led, not_led = [], []
        for state in request.partitions:
            if state.topic != OFFSETS_TOPIC or errors.get(state.tp, Code.NONE) != Code.NONE:
                continue
            if state.leader == self.replicas.broker_id:
                led.append((state.partition, state.leader_epoch))
            else:
                not_led.append(state.partition)
        if led or not_led:
            self.on_roles(led, not_led)

    def stop_replica_applied(self, request: StopReplica, result: ControlResult) -> None:
        errors = result.errors_by_partition()
        stopped = [
            ps.partition
            for ps in request.partitions
            if ps.topic == OFFSETS_TOPIC and errors.get(ps.tp, Code.NONE) == Code.NONE
        ]
        if stopped:
            self.on_roles([], stopped)

    def unload(self, index: int) -> None:
        task = self._loads.pop(index, None)
        if task is not None:
            task.cancel()
        shard = self.shards.pop(index, None)
        if shard is not None and shard.groups:
            log.info("unloaded %d group(s) of %s-%d", len(shard.groups), OFFSETS_TOPIC, index)

    async def _load(self, shard: Shard) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, shard.index)
        partition = self.replicas.partition(tp)
        if partition is None or partition.log is None:
            return
        log_ = partition.log
        started = time.monotonic()
        end = log_.log_end_offset
        records = await asyncio.to_thread(lambda: list(read_records(log_, end)))
        if self.shards.get(shard.index) is not shard:
            return  # superseded while reading
        shard.replay(records)
        shard.writer.last_offset = end
        shard.start_sessions(self._clock(), self.config.session_timeout_ms)
        shard.loaded = True
        self._loads.pop(shard.index, None)
        log.log(
            logging.INFO if records else logging.DEBUG,
            "loaded %d group(s) of %s at leader epoch %d from %d record(s) in %.0f ms",
            len(shard.groups), tp, shard.leader_epoch, len(records),
            (time.monotonic() - started) * 1000,
        )  # fmt: skip

    # ------------------------------------------------------------------ lookups

    def _topic_partitions(self, topic: str) -> int | None:
        if topic == OFFSETS_TOPIC:
            return None
        return self.metadata.partition_count(topic)

    def offsets_partitions(self) -> int | None:
        return self.metadata.partition_count(OFFSETS_TOPIC)

    def shard_for(self, group_id: str) -> Shard:
        if not group_id:
            raise invalid("GroupId can't be empty.", "group_id")
        check_id(group_id, "group_id")
        count = self.offsets_partitions()
        shard = self.shards.get(partition_for(group_id, count)) if count else None
        if shard is None:
            raise group_error(c.ERROR_CODE_NOT_COORDINATOR, "This is not the correct coordinator.")
        if not shard.loaded:
            raise group_error(
                c.ERROR_CODE_COORDINATOR_LOAD_IN_PROGRESS,
                "The coordinator is loading and hence can't process requests.",
            )
        return shard

    def find(self, group_ids: Sequence[str]) -> list[CoordinatorAnswer]:
        """FindCoordinator: one answer per group id, in order."""
        count = self.offsets_partitions()
        if count is None:
            self._ensure_topic()
        out = []
        for group_id in group_ids:
            if not group_id or len(group_id) > MAX_ID_LENGTH:
                why = f"GroupId must have 1 to {MAX_ID_LENGTH} characters."
                bad = CoordinatorAnswer(
                    group_id[:MAX_ID_LENGTH], error=c.ERROR_CODE_INVALID_GROUP_ID
                )
                out.append(replace(bad, message=why))
                continue
            if count is None:
                out.append(self._not_available(group_id, f"{OFFSETS_TOPIC} is being created"))
                continue
            index = partition_for(group_id, count)
            state = self.metadata.partition(TopicPartition(OFFSETS_TOPIC, index))
            leader = state.leader if state is not None else NO_LEADER
            endpoint = self.metadata.alive_broker(leader) if leader != NO_LEADER else None
            if endpoint is None:
                out.append(self._not_available(group_id, f"{OFFSETS_TOPIC}-{index} has no leader"))
                continue
            out.append(
                CoordinatorAnswer(group_id, endpoint.broker_id, endpoint.host, endpoint.port)
            )
        return out

    @staticmethod
    def _not_available(group_id: str, why: str) -> CoordinatorAnswer:
        return CoordinatorAnswer(
            group_id,
            error=c.ERROR_CODE_COORDINATOR_NOT_AVAILABLE,
            message=f"The coordinator is not available: {why}.",
        )

    def _ensure_topic(self) -> None:
        if self._create_topic is None or (self._creating and not self._creating.done()):
            return
        if time.monotonic() - self._last_create < CREATE_RETRY_S:
            return
        self._last_create = time.monotonic()
        self._creating = asyncio.create_task(self._create(), name="create-offsets-topic")

    async def _create(self) -> None:
        assert self._create_topic is not None
        try:
            await self._create_topic()
        except Exception as exc:  # retried by the next FindCoordinator
            log.warning("cannot create %s: %s", OFFSETS_TOPIC, exc)

    # ------------------------------------------------------------------ operations

    async def heartbeat(self, request: hb.HeartbeatRequest) -> hb.HeartbeatResult:
        shard = self.shard_for(request.group_id)
        result = hb.heartbeat(shard.group(request.group_id), request, self.context)
        if result.member is None:
            shard.forget(request.group_id, result.member_id)
        else:
            shard.track(
                request.group_id, result.member, self._clock(), self.config.session_timeout_ms
            )
        await shard.write(result.records, self._wall())
        return result

    async def commit(
        self, group_id: str, member_id: str, member_epoch: int, items: Sequence[offsets.CommitItem]
    ) -> list[offsets.CommitOutcome]:
        shard = self.shard_for(group_id)
        records, outcomes = offsets.commit(
            shard.group(group_id), group_id, member_id, member_epoch, items, self.config,
            self._wall(),
        )  # fmt: skip
        await shard.write(records, self._wall())
        return outcomes

    async def fetch(self, group_id: str, wanted: Sequence[TP] | None) -> dict[TP, CommittedOffset]:
        shard = self.shard_for(group_id)
        await shard.settled()
        return offsets.fetch(shard.group(group_id), wanted)

    def groups(self) -> list[ConsumerGroup]:
        """Every group of every loaded shard."""
        return [g for s in self.shards.values() if s.loaded for g in s.groups.values()]

    def describe(self, group_id: str) -> ConsumerGroup | None:
        return self.shard_for(group_id).group(group_id)

    async def delete(self, group_id: str) -> None:
        shard = self.shard_for(group_id)
        group = shard.group(group_id)
        if group is None or (group.state == GroupState.EMPTY and group.is_dead):
            raise group_error(c.ERROR_CODE_GROUP_ID_NOT_FOUND, f"Group {group_id[:64]} not found.")
        await shard.write(hb.delete_group(group), self._wall())

    # ------------------------------------------------------------------ timers

    async def expire_once(self) -> int:
        """Remove the members whose time is up; how many were removed."""
        now = self._clock()
        removed = 0
        for shard in list(self.shards.values()):
            if not shard.loaded:
                continue
            for group_id, member_id in shard.expired(now):
                group = shard.group(group_id)
                if group is None or member_id not in group.members:
                    continue
                log.info("member %s of group %s timed out: removed", member_id, group_id)
                shard.forget(group_id, member_id)
                records = hb.fence_member(group, member_id, self.context)
                try:
                    await shard.write(records, self._wall())
                except LeaseholdError as exc:
                    if member_id in group.members:  # not written: try again next tick
                        shard.sessions[(group_id, member_id)] = now
                    log.info("removing %s from %s failed: %s", member_id, group_id, exc)
                    continue
                removed += 1
        return removed

    async def run_timers(self) -> None:
        while True:
            await asyncio.sleep(TIMER_TICK_S)
            try:
                await self.expire_once()
            except Exception:  # a timer must survive one bad round
                log.exception("group timers failed")

    async def close(self) -> None:
        for index in list(self.shards):
            self.unload(index)
        if self._creating is not None:
            self._creating.cancel()


def create_request(broker_id: int, broker_epoch: int) -> controller_pb2.CreateInternalTopicRequest:
    return controller_pb2.CreateInternalTopicRequest(
        broker_id=broker_id, broker_epoch=broker_epoch, topic=OFFSETS_TOPIC
    )
