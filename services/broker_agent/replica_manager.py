"""The replica manager: which partitions this broker hosts, in which role (seed 001 §1-3).

It applies the controller's requests to logs and fetchers. The fences, the per-partition
decisions, UpdateMetadata and the answers are ``control_state.ControlState``'s (shared with the
simulated broker); here, past them, the become-leader transitions (stop their
fetchers, take the new epoch, wake delayed requests) and the become-follower ones (stop old
fetchers, take the new epoch, wake delayed requests, and — unless shutting down — start fetching
from the new leader at the local high watermark; the fetcher truncates first): the phases past
the fences are in ``leader_and_isr``. StopReplica stops fetching and optionally deletes the
replica's files.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from services.broker_agent.control import Hosted
from services.broker_agent.control_state import ControlState, Errors
from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.leader_and_isr import YIELD_EVERY as YIELD_EVERY
from services.broker_agent.leader_and_isr import apply_leader_and_isr
from services.broker_agent.log import KafkaStorageError, LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplicaPartition,
    TopicPartition,
)
from services.broker_agent.partition import IsrProposal, Partition, PartitionError
from services.broker_agent.throttle import (
    FOLLOWER_RATE,
    LEADER_RATE,
    ReplicationQuota,
    parse_rate,
)
from services.broker_agent.topic_configs import ConfigStore, TopicSettings

log = logging.getLogger("services.broker_agent.state_change")


class ReplicaManager(ControlState):
    """The real broker's replicas: ``ControlState``'s request handling applied to logs."""

    partitions: dict[TopicPartition, Partition]

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        metadata: MetadataCache,
        configs: ConfigStore,
        clock: Callable[[], int],
        replica_lag_time_max_ms: int,
    ) -> None:
        super().__init__(broker_id, metadata)
        self.log_manager = log_manager
        self.configs = configs
        self._clock = clock
        self._max_lag_ms = replica_lag_time_max_ms
        self.partitions = {}
        self._roles_settled = asyncio.Event()  # clear while a LeaderAndIsr changes roles
        self._roles_settled.set()
        self.leader_quota = ReplicationQuota(clock)
        self.follower_quota = ReplicationQuota(clock)
        # Wired by the app once the fetcher side exists (it needs this manager).
        self.fetchers: FetcherManager | None = None
        # Where ISR change proposals go (the AlterPartition sender), wired by the app.
        self.submit_isr_change: Callable[[IsrProposal | None], None] = lambda _p: None

    # ----------------------------------------------------------------- lookups

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def hosting(self, tp: TopicPartition, partition: Partition | None) -> Hosted:
        """``hosted`` when ``partition`` (this broker's replica of ``tp``, or None) is at hand."""
        offline = self.log_manager.offline  # keyed by (topic, partition): equal to ``tp``
        if (offline and tp in offline) or (
            partition is not None and partition.log is not None and partition.log.is_offline
        ):
            return Hosted.OFFLINE
        return Hosted.ONLINE if partition is not None else Hosted.NONE

    def settings(self, topic: str) -> TopicSettings:
        return self.configs.settings(topic)

    def leader_partition(self, tp: TopicPartition) -> Partition:
        """The partition if hosted here, else the error a client should see (Kafka's
        getPartitionOrError): a known topic means the client's metadata is stale."""
        partition = self.partitions.get(tp)
        if partition is not None:
            return partition
        if self.hosted(tp) is Hosted.OFFLINE:
            raise PartitionError(Code.KAFKA_STORAGE_ERROR, f"{tp} is in an offline log directory")
        if self.metadata.contains(tp):
            raise PartitionError(Code.NOT_LEADER_OR_FOLLOWER, f"{tp} is not hosted here")
        raise PartitionError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {tp}")

    def current_leader(self, tp: TopicPartition) -> tuple[int, int] | None:
        """(leader id, leader epoch) as best known here, for NOT_LEADER answers."""
        cached = self.metadata.partition(tp)
        partition = self.partitions.get(tp)
        if partition is not None and partition.leader_epoch >= 0:
            if cached is None or cached.leader_epoch <= partition.leader_epoch:
                return partition.leader_id, partition.leader_epoch
        if cached is not None:
            return cached.leader, cached.leader_epoch
        return None

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    def _new_partition(self, tp: TopicPartition) -> Partition:
        partition = Partition(tp, self.broker_id, self.log_manager, self._clock, self._max_lag_ms)
        partition.isr_eligible = lambda b: self.metadata.alive_broker(b) is not None
        partition.local_broker_epoch = lambda: self.broker_epoch
        return partition

    # -------------------------------------------------------------- LeaderAndIsr

    async def _apply_leader_and_isr(self, request: LeaderAndIsr) -> ControlResult:
        """The phases of ``leader_and_isr.apply_leader_and_isr`` (decide per partition, open
        logs, change roles, one durable batch, start fetchers) past ``ControlState``'s fences,
        yielding the loop every ``YIELD_EVERY`` partitions; answered once every file it changed
        is durable."""
        self._roles_settled.clear()
        try:
            return await apply_leader_and_isr(self, request)
        finally:
            self._roles_settled.set()

    async def wait_for_role_changes(self, tps: Iterable[TopicPartition]) -> None:
        """Wait while a LeaderAndIsr is making a role change of one of ``tps`` durable.

        Produce calls this first, so an append waits for the change, as Kafka's appends wait
        on the partition's lock while it becomes leader, instead of being refused.
        """
        if self._roles_settled.is_set():
            return
        if any((p := self.partitions.get(tp)) is None or p.awaiting_sync for tp in tps):
            await self._roles_settled.wait()  # not hosted yet: the request may be creating it

    # --------------------------------------------------------------- StopReplica

    async def _stop_partitions(self, stopping: list[StopReplicaPartition], errors: Errors) -> None:
        """Stop fetching the partitions ``stopping``, deleting the files of those asked to."""
        if self.fetchers is not None:
            self.fetchers.remove_fetcher_for_partitions({ps.tp for ps in stopping})
        for ps in stopping:
            partition = self.partitions.get(ps.tp)
            if partition is not None:
                partition.stop()
            if not ps.delete:
                continue
            self.partitions.pop(ps.tp, None)
            try:
                self.log_manager.delete(ps.topic, ps.partition)
            except (KafkaStorageError, OSError) as exc:
                log.error("%s: cannot delete: %s", ps.tp, exc)
                errors[ps.tp] = Code.KAFKA_STORAGE_ERROR
            log.info("%s: stopped and deleted", ps.tp)
        if self.fetchers is not None:
            await self.fetchers.shutdown_idle_fetchers()

    def _metadata_deleted(self, deleted: list[TopicPartition]) -> None:
        for tp in deleted:
            partition = self.partitions.get(tp)
            if partition is not None:
                partition.signal.notify()

    # ------------------------------------------------------------- maintenance

    def apply_configs(self, topics: set[str] | None) -> None:
        """Configs changed in etcd: push the new log configs to the open logs; a broker-level
        change (``topics`` None) may also set or clear the replication throttles (KIP-73)."""
        if topics is None:
            self.leader_quota.bound = parse_rate(self.configs.broker_config(LEADER_RATE))
            self.follower_quota.bound = parse_rate(self.configs.broker_config(FOLLOWER_RATE))
        names = {tp.topic for tp in self.partitions} if topics is None else topics
        for topic in names:
            self.log_manager.update_topic_config(topic, self.settings(topic).log_config)

    async def run_retention(self, now_ms: int | None = None) -> dict[TopicPartition, int]:
        """Retention on every log (off the loop); segments deleted per log that lost any.

        Those logs' starts moved, which their fetch sessions only learn from a change signal.
        """
        deleted = await asyncio.to_thread(self.log_manager.run_retention, now_ms)
        for tp in deleted:
            partition = self.partitions.get(tp)
            if partition is not None:
                partition.signal.notify()
        return deleted

    def checkpoint(self) -> None:
        self.log_manager.checkpoint_high_watermarks()
        self.log_manager.checkpoint_log_start_offsets()
        self.log_manager.checkpoint_recovery_points()

    async def close(self) -> None:
        """Stop every fetcher, then close (flush and checkpoint) every log."""
        self.shutting_down = True
        if self.fetchers is not None:
            await self.fetchers.close_all()
        for partition in self.partitions.values():
            partition.signal.notify()
        self.log_manager.close()
