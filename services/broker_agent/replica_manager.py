"""The replica manager: which partitions this broker hosts, in which role (seed 001 §1-3).

It applies the controller's requests. LeaderAndIsr passes the broker- and controller-epoch
fences, then each partition's leader-epoch check, then the become-leader transitions (stop their
fetchers, take the new epoch, wake delayed requests) and the become-follower ones (stop old
fetchers, take the new epoch, wake delayed requests, and — unless shutting down — start fetching
from the new leader at the local high watermark; the fetcher truncates first). StopReplica stops
fetching and optionally deletes the replica's files; UpdateMetadata refreshes the metadata cache.
Control requests are serialised by one lock, as Kafka's ``replicaStateChangeLock`` does.
The become-leader and become-follower batches are traced (``broker.become_leader`` /
``broker.become_follower``) under the controller's LeaderAndIsr call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from leasehold import telemetry
from services.broker_agent.control import (
    Hosted,
    Transition,
    check_request,
    leader_and_isr_decision,
    stop_replica_decision,
)
from services.broker_agent.fetcher_manager import FetcherManager, InitialFetch
from services.broker_agent.log import InconsistentTopicIdError, KafkaStorageError, LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    Endpoint,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    StopReplica,
    TopicPartition,
    UpdateMetadata,
)
from services.broker_agent.partition import IsrProposal, Partition, PartitionError
from services.broker_agent.throttle import ReplicationQuota
from services.broker_agent.topic_configs import ConfigStore, TopicSettings

log = logging.getLogger("services.broker_agent.state_change")

# A huge control request yields the event loop this often (partitions), so that gRPC calls,
# fetchers and the etcd lease keep-alive keep running while it is applied.
YIELD_EVERY = 256


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
        # Wired by the app once the fetcher side exists (it needs this manager).
        self.fetchers: FetcherManager | None = None
        # Where ISR change proposals go (the AlterPartition sender), wired by the app.
        self.submit_isr_change: Callable[[IsrProposal | None], None] = lambda _p: None

    # ----------------------------------------------------------------- lookups

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def hosted(self, tp: TopicPartition) -> Hosted:
        partition = self.partitions.get(tp)
        if (tp.topic, tp.partition) in self.log_manager.offline or (
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

        Phases: decide per partition; apply each topic's config once; open new logs on worker
        threads; change roles in memory (files owed are deferred, appends refused meanwhile);
        make every owed file durable in one batch off the loop; then start fetchers and
        propose recoveries. The loop yields every ``YIELD_EVERY`` partitions, so gRPC and the
        etcd keep-alive run even during a 100,000-partition request.
        """
        async with self._lock:
            code = self._check(request.controller_epoch, request.broker_epoch)
            if code != Code.NONE:
                message = self._rejection(
                    code, "LeaderAndIsr", request.controller_epoch, request.broker_epoch
                )
                return ControlResult(code, message)
            self.controller_epoch = request.controller_epoch
            self._roles_settled.clear()
            try:
                return await self._apply_leader_and_isr(request)
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

    async def _apply_leader_and_isr(self, request: LeaderAndIsr) -> ControlResult:
        self.leader_quota.bound = request.replication_throttle_bytes_per_sec
        self.follower_quota.bound = request.replication_throttle_bytes_per_sec
        errors: dict[TopicPartition, Code] = {}
        to_lead, to_follow = await self._classify(request.partitions, errors)
        await self._prepare_logs([*to_lead, *to_follow], errors)
        to_lead = [s for s in to_lead if s.tp not in errors]
        to_follow = [s for s in to_follow if s.tp not in errors]
        leaders: list[tuple[Partition, LeaderAndIsrPartition]] = []
        followers: list[tuple[Partition, LeaderAndIsrPartition]] = []
        if to_lead:
            with _role_span("broker.become_leader", self.broker_id, request, to_lead):
                leaders = await self._take_roles(to_lead, errors, leader=True)
        if to_follow:
            with _role_span("broker.become_follower", self.broker_id, request, to_follow):
                followers = await self._take_roles(to_follow, errors, leader=False)
        await self._sync([p for p, _ in (*leaders, *followers)], errors)
        for partition, _ in leaders:
            if errors.get(partition.tp) == Code.NONE:
                self.submit_isr_change(partition.propose_recovered())
        await self._start_fetchers(followers, request.live_leaders, errors)
        if self.fetchers is not None:
            await self.fetchers.shutdown_idle_fetchers()
        return ControlResult(Code.NONE, partition_errors=tuple(errors.items()))

    async def _classify(
        self, states: Iterable[LeaderAndIsrPartition], errors: dict[TopicPartition, Code]
    ) -> tuple[list[LeaderAndIsrPartition], list[LeaderAndIsrPartition]]:
        """Split the request into partitions to lead and to follow; the rest get errors."""
        to_lead: list[LeaderAndIsrPartition] = []
        to_follow: list[LeaderAndIsrPartition] = []
        for count, state in enumerate(states, 1):
            if count % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            tp = state.tp
            existing = self.partitions.get(tp)
            decision = leader_and_isr_decision(
                state,
                hosted=self.hosted(tp),
                current_leader_epoch=existing.leader_epoch if existing else -1,
                local_broker_id=self.broker_id,
            )
            if decision.error != Code.NONE:
                log.info("%s: LeaderAndIsr ignored: %s", tp, decision.error.name)
                errors[tp] = decision.error
            elif decision.transition is Transition.BECOME_LEADER:
                if self.shutting_down and not (existing and existing.is_leader):
                    errors[tp] = Code.BROKER_SHUTTING_DOWN
                else:
                    to_lead.append(state)
            else:
                to_follow.append(state)
        return to_lead, to_follow

    async def _prepare_logs(
        self, states: list[LeaderAndIsrPartition], errors: dict[TopicPartition, Code]
    ) -> None:
        """Apply each topic's config once, then open the missing logs on worker threads."""
        for topic in dict.fromkeys(s.topic for s in states):
            self.log_manager.update_topic_config(topic, self.settings(topic).log_config)
        missing = [
            (s.topic, s.partition)
            for s in states
            if (p := self.partitions.get(s.tp)) is None or p.log is None
        ]
        if not missing:
            return
        failures = await asyncio.to_thread(self.log_manager.create_logs, missing)
        for (topic, index), exc in failures.items():
            tp = TopicPartition(topic, index)
            log.error("%s: cannot create the log: %s", tp, exc)
            errors[tp] = Code.KAFKA_STORAGE_ERROR

    def _transition(
        self,
        state: LeaderAndIsrPartition,
        errors: dict[TopicPartition, Code],
        leader: bool,
        verbose: bool,
    ) -> Partition | None:
        tp = state.tp
        partition = self.partitions.get(tp) or self._new_partition(tp)
        try:
            if leader:
                partition.make_leader(state, defer_sync=True)
            else:
                partition.make_follower(state, defer_sync=True)
        except KafkaStorageError as exc:
            log.error("%s: cannot become %s: %s", tp, "leader" if leader else "follower", exc)
            errors[tp] = Code.KAFKA_STORAGE_ERROR
            partition.awaiting_sync = False
            return None
        except InconsistentTopicIdError as exc:
            log.error("%s: %s", tp, exc)
            errors[tp] = Code.INCONSISTENT_TOPIC_ID
            partition.awaiting_sync = False
            return None
        self.partitions[tp] = partition
        errors[tp] = Code.NONE
        if verbose:  # log.isEnabledFor(logging.INFO), asked once per batch
            log.info(
                "%s: became %s (leader %d, epoch %d, isr %s)",
                tp,
                "leader" if leader else "follower",
                state.leader,
                state.leader_epoch,
                list(state.isr),
            )
        return partition

    async def _take_roles(
        self, states: list[LeaderAndIsrPartition], errors: dict[TopicPartition, Code], leader: bool
    ) -> list[tuple[Partition, LeaderAndIsrPartition]]:
        """Stop the fetchers of ``states``, then make each the leader (or a follower)."""
        if self.fetchers is not None:
            self.fetchers.remove_fetcher_for_partitions({s.tp for s in states})
        made, verbose = [], log.isEnabledFor(logging.INFO)
        for count, state in enumerate(states, 1):
            if count % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            partition = self._transition(state, errors, leader, verbose)
            if partition is not None:
                made.append((partition, state))
        return made

    async def _sync(self, partitions: list[Partition], errors: dict[TopicPartition, Code]) -> None:
        """Make the files the role changes owe durable (one batch, off the loop), then let
        the partitions accept appends again; a partition whose files failed goes offline."""
        if not partitions:
            return
        failures = await asyncio.to_thread(
            self.log_manager.sync_pending, [(p.tp.topic, p.tp.partition) for p in partitions]
        )
        for partition in partitions:
            reason = failures.get((partition.tp.topic, partition.tp.partition))
            if reason is not None:
                log.error("%s: %s", partition.tp, reason)
                errors[partition.tp] = Code.KAFKA_STORAGE_ERROR
            partition.sync_done()

    def _leader_endpoint(self, leader_id: int, live_leaders: Iterable[Endpoint]) -> Endpoint | None:
        for endpoint in live_leaders:
            if endpoint.broker_id == leader_id:
                return endpoint
        return self.metadata.alive_broker(leader_id)

    async def _start_fetchers(
        self,
        made: list[tuple[Partition, LeaderAndIsrPartition]],
        live_leaders: Iterable[Endpoint],
        errors: dict[TopicPartition, Code],
    ) -> None:
        leaders = list(live_leaders)
        endpoints: dict[int, Endpoint | None] = {}  # by leader id, looked up once each
        starts: dict[TopicPartition, InitialFetch] = {}
        for partition, state in made:
            if errors.get(state.tp) != Code.NONE or partition.log is None:
                continue
            leader = endpoints.get(state.leader, endpoints)
            if leader is endpoints:
                leader = endpoints[state.leader] = self._leader_endpoint(state.leader, leaders)
            if leader is None:
                # Kafka keeps the replica (so its high watermark is checkpointed) but cannot
                # fetch until a request names a reachable leader.
                log.error("%s: leader %d is unavailable; not fetching", state.tp, state.leader)
                continue
            starts[state.tp] = InitialFetch(
                leader, state.leader_epoch, partition.log.high_watermark
            )
        if self.shutting_down:
            if starts:
                log.info("shutting down: not adding fetchers for %d partitions", len(starts))
            return
        if starts and self.fetchers is not None:
            await self.fetchers.add_fetcher_for_partitions(starts)

    # --------------------------------------------------------------- StopReplica

    async def stop_replicas(self, request: StopReplica) -> ControlResult:
        async with self._lock:
            code = self._check(request.controller_epoch, request.broker_epoch)
            if code != Code.NONE:
                message = self._rejection(
                    code, "StopReplica", request.controller_epoch, request.broker_epoch
                )
                return ControlResult(code, message)
            self.controller_epoch = request.controller_epoch
            errors: dict[TopicPartition, Code] = {}
            stopping = []
            for ps in request.partitions:
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
            return ControlResult(Code.NONE, partition_errors=tuple(errors.items()))

    # ------------------------------------------------------------ UpdateMetadata

    async def update_metadata(self, request: UpdateMetadata) -> ControlResult:
        async with self._lock:
            code = self._check(request.controller_epoch, request.broker_epoch)
            if code != Code.NONE:
                message = self._rejection(
                    code, "UpdateMetadata", request.controller_epoch, request.broker_epoch
                )
                return ControlResult(code, message)
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
        """Topic configs changed in etcd: push the new log configs to the open logs."""
        names = {tp.topic for tp in self.partitions} if topics is None else topics
        for topic in names:
            self.log_manager.update_topic_config(topic, self.settings(topic).log_config)

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


def _role_span(name: str, broker_id: int, request: LeaderAndIsr, states: list):
    """A span for one become-leader or become-follower batch of a LeaderAndIsr request."""
    epochs = {s.leader_epoch for s in states}
    return telemetry.span(
        name,
        broker_id=broker_id,
        controller_epoch=request.controller_epoch,
        topic=",".join(sorted({s.tp.topic for s in states})),
        partition_count=len(states),
        leader_epoch=epochs.pop() if len(epochs) == 1 else None,
    )
