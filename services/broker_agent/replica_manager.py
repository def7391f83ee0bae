"""The replica manager: which partitions this broker hosts, in which role (seed 001 §1-3).

It applies the controller's requests. LeaderAndIsr passes the broker- and controller-epoch
fences, then each partition's leader-epoch check, then the become-leader transitions (stop their
fetchers, take the new epoch, wake delayed requests) and the become-follower ones (stop old
fetchers, take the new epoch, wake delayed requests, and — unless shutting down — start fetching
from the new leader at the local high watermark; the fetcher truncates first): the phases past
the fences are in ``leader_and_isr``. StopReplica stops fetching and optionally deletes the
replica's files; UpdateMetadata refreshes the metadata cache. Control requests are serialised
by one lock, as Kafka's ``replicaStateChangeLock`` does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from services.broker_agent.control import (
    Hosted,
    check_request,
    stop_replica_decision,
)
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.leader_and_isr import YIELD_EVERY as YIELD_EVERY
from services.broker_agent.leader_and_isr import apply_leader_and_isr
from services.broker_agent.log import KafkaStorageError, LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplica,
    TopicPartition,
    UpdateMetadata,
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


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        metadata: MetadataCache,
        configs: ConfigStore,
        clock: Callable[[], int],
        replica_lag_time_max_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata = metadata
        self.configs = configs
        self._clock = clock
        self._max_lag_ms = replica_lag_time_max_ms
        self.partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = -1
        self.broker_epoch = -1
        self.shutting_down = False
        self._lock = asyncio.Lock()
        self._roles_settled = asyncio.Event()  # clear while a LeaderAndIsr changes roles
        self._roles_settled.set()
        self.leader_quota = ReplicationQuota(clock)
        self.follower_quota = ReplicationQuota(clock)
        # Control requests go before data-plane work (``control_priority``, KIP-291).
        self.priority = ControlPriority()
        # Wired by the app once the fetcher side exists (it needs this manager).
        self.fetchers: FetcherManager | None = None
        # Where ISR change proposals go (the AlterPartition sender), wired by the app.
        self.submit_isr_change: Callable[[IsrProposal | None], None] = lambda _p: None
        # What etcd shows of the controller epoch (``control_fence``), wired by the app; a test
        # playing the controller without etcd leaves it out.
        self.fence: ControlFence | None = None
        # Told of every applied LeaderAndIsr / StopReplica with its result (the group
        # coordinator follows the leadership of __consumer_offsets this way).
        self.on_leader_and_isr: list[Callable[[LeaderAndIsr, ControlResult], None]] = []
        self.on_stop_replica: list[Callable[[StopReplica, ControlResult], None]] = []

    # ----------------------------------------------------------------- lookups

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def hosted(self, tp: TopicPartition) -> Hosted:
        return self.hosting(tp, self.partitions.get(tp))

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

    def _check(self, controller_epoch: int, broker_epoch: int) -> Code:
        return check_request(
            request_controller_epoch=controller_epoch,
            known_controller_epoch=self.controller_epoch,
            request_broker_epoch=broker_epoch,
            current_broker_epoch=self.broker_epoch,
        )

    async def _refusal(
        self, what: str, request: LeaderAndIsr | StopReplica | UpdateMetadata
    ) -> ControlResult | None:
        """The answer to a request failing the fences (its own epochs, then etcd's), or None."""
        code = self._check(request.controller_epoch, request.broker_epoch)
        if code != Code.NONE:
            message = self._rejection(code, what, request.controller_epoch, request.broker_epoch)
            return ControlResult(code, message)
        if self.fence is not None:
            refused = await self.fence.check(what, request.controller_epoch, request.controller_id)
            if refused is not None:
                return ControlResult(*refused)
        return None

    def _rejection(self, code: Code, what: str, controller_epoch: int, broker_epoch: int) -> str:
        message = (
            f"{what} rejected: {code.name} (request controller epoch {controller_epoch}, "
            f"known {self.controller_epoch}; request broker epoch {broker_epoch}, "
            f"current {self.broker_epoch})"
        )
        log.warning(message)
        return message

    # -------------------------------------------------------------- LeaderAndIsr

    async def become_leader_or_follower(self, request: LeaderAndIsr) -> ControlResult:
        """Apply a LeaderAndIsr; answered once every file it changed is durable.

        The fences here, then the phases of ``leader_and_isr.apply_leader_and_isr`` (decide
        per partition, open logs, change roles, one durable batch, start fetchers), yielding
        the loop every ``YIELD_EVERY`` partitions.
        """
        async with self._lock:
            refusal = await self._refusal("LeaderAndIsr", request)
            if refusal is not None:
                return refusal
            self.controller_epoch = request.controller_epoch
            self._roles_settled.clear()
            try:
                result = await apply_leader_and_isr(self, request)
            finally:
                self._roles_settled.set()
            for listener in self.on_leader_and_isr:
                listener(request, result)
            return result

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

    async def stop_replicas(self, request: StopReplica) -> ControlResult:
        async with self._lock:
            refusal = await self._refusal("StopReplica", request)
            if refusal is not None:
                return refusal
            self.controller_epoch = request.controller_epoch
            errors: dict[TopicPartition, Code] = {}
            stopping = []
            unconfirmed = (
                await self.fence.unconfirmed_deletions(request.partitions) if self.fence else ()
            )
            for ps in request.partitions:
                if ps.tp in unconfirmed:
                    errors[ps.tp] = Code.NOT_CONTROLLER
                    continue
                existing = self.partitions.get(ps.tp)
                code = stop_replica_decision(
                    hosted=self.hosted(ps.tp),
                    current_leader_epoch=existing.leader_epoch if existing else -1,
                    request_leader_epoch=ps.leader_epoch,
                )
                errors[ps.tp] = code
                if code == Code.NONE:
                    stopping.append(ps)
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
            result = ControlResult(Code.NONE, partition_errors=tuple(errors.items()))
            for listener in self.on_stop_replica:
                listener(request, result)
            return result

    # ------------------------------------------------------------ UpdateMetadata

    async def update_metadata(self, request: UpdateMetadata) -> ControlResult:
        async with self._lock:
            refusal = await self._refusal("UpdateMetadata", request)
            if refusal is not None:
                return refusal
            if request.metadata_digest and request.metadata_digest != self.metadata.digest():
                return ControlResult(
                    Code.METADATA_DIGEST_MISMATCH,
                    f"UpdateMetadata of controller epoch {request.controller_epoch} expects "
                    f"metadata digest {request.metadata_digest.hex()}, the cache has "
                    f"{self.metadata.digest().hex()}: nothing applied, send every partition",
                )
            self.controller_epoch = request.controller_epoch
            deleted = self.metadata.update(request)
            for tp in deleted:
                partition = self.partitions.get(tp)
                if partition is not None:
                    partition.signal.notify()
            return ControlResult(Code.NONE)

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
