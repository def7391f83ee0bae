"""Wiring of the broker agent: logs, replica manager, fetchers, servicers, registration, tasks.

Start order: open (and recover) the logs, serve gRPC, load topic configs, then register in etcd
— only a registered broker receives controller requests, and its broker epoch is known before
the first one can arrive. Stop order on SIGTERM (the server's ``on_stop``, while gRPC still
serves, so the controller's LeaderAndIsr requests can reach us): controlled shutdown through the
controller, stop fetchers, checkpoint and close the logs, and only then revoke the session so the
controller sees the broker leave.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable

import grpc

from leasehold import metrics as metrics_server
from leasehold import peer_auth
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc, control_pb2
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.renewal_process import RenewalProcess
from leasehold.group.v1 import group_pb2_grpc
from leasehold.heap import HeapFreezer
from leasehold.metrics import RequestMetrics
from services.broker_agent.bounds import counters
from services.broker_agent.config import BrokerConfig
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.control_servicer import control_handlers
from services.broker_agent.controller_client import ControllerClient
from services.broker_agent.follower.fetch_state import FetcherSettings
from services.broker_agent.follower.fetcher import ReplicaFetcher
from services.broker_agent.follower.fetcher_manager import FetcherManager
from services.broker_agent.follower.leader_endpoint import LeaderEndpoint
from services.broker_agent.group.coordinator import GroupCoordinator, create_request
from services.broker_agent.group.metrics import GroupMetrics
from services.broker_agent.group.model import GroupConfig
from services.broker_agent.group.servicer import SERVICE_NAME as GROUP_SERVICE_NAME
from services.broker_agent.group.servicer import GroupServicer
from services.broker_agent.isr_manager import AlterPartitionManager
from services.broker_agent.leader.fetch import FetchHandler
from services.broker_agent.leader.fetch_session import FetchSessionCache, FetchSessionConfig
from services.broker_agent.log import LogConfig, LogManager
from services.broker_agent.log.cleaner import CleanerSettings, LogCleaner
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.metrics import BrokerMetrics
from services.broker_agent.model import Endpoint, TopicPartition
from services.broker_agent.produce import ProduceHandler
from services.broker_agent.producer_ids import ProducerIdManager
from services.broker_agent.registration import Registration
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.servicer import BrokerControlServicer, BrokerServicer
from services.broker_agent.shutdown import controlled_shutdown
from services.broker_agent.topic_configs import ConfigStore

log = logging.getLogger(__name__)

SERVICE_NAMES = (
    broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name,
    control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name,
    GROUP_SERVICE_NAME,
)
CONFIG_LOAD_TIMEOUT_S = 10.0
CREATE_TOPIC_TIMEOUT_S = 10.0


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class BrokerAgent:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.keyspace = Keyspace(config.common.cluster_id)
        self.etcd = EtcdClient(list(config.common.etcd_endpoints), tls=config.common.etcd_tls)
        self.metadata = MetadataCache()
        self.configs = ConfigStore(
            self.keyspace, config.broker_id, config.min_insync_replicas, config.message_max_bytes
        )
        self.log_manager = LogManager(
            config.data_dir, default_config=LogConfig(max_message_bytes=config.message_max_bytes)
        )
        self.replicas = ReplicaManager(
            config.broker_id,
            self.log_manager,
            self.metadata,
            self.configs,
            monotonic_ms,
            config.replica_lag_time_max_ms,
        )
        self.controller = ControllerClient(
            self.etcd,
            self.keyspace,
            self._announced_controller,
            config.common.tls if config.common.tls.ca else None,
            config.controller_retry_backoff_ms,
        )
        self.isr = AlterPartitionManager(
            self.controller,
            config.broker_id,
            lambda: self.replicas.broker_epoch,
            self.replicas.partition,
            config.controller_retry_backoff_ms,
        )
        # Control requests are checked against the controller epoch etcd shows; without TLS,
        # leader changes and deletions are confirmed in etcd too (``control_fence``).
        self.fence = ControlFence(
            self.etcd,
            self.keyspace,
            config.broker_id,
            confirm_in_etcd=not config.common.tls.enabled,
        )
        self.replicas.fence = self.fence
        self.metrics = BrokerMetrics()
        self.isr.on_isr_change = self.metrics.on_isr_change
        self.replicas.fetchers = FetcherManager(config.num_replica_fetchers, self._new_fetcher)
        self.replicas.submit_isr_change = self.isr.submit
        self.cleaner = LogCleaner(
            self.log_manager.all_logs,
            self.log_manager.handles,
            CleanerSettings(
                enable=config.log_cleaner_enable,
                dedupe_buffer_size=config.log_cleaner_dedupe_buffer_size,
                io_max_bytes_per_second=config.log_cleaner_io_max_bytes_per_second,
                backoff_ms=config.log_cleaner_backoff_ms,
            ),
        )
        self.produce = ProduceHandler(self.replicas)
        self.producer_ids = ProducerIdManager(self.etcd, self.keyspace, config.broker_id)
        sessions = FetchSessionCache(FetchSessionConfig.for_lag(config.replica_lag_time_max_ms))
        self.fetch = FetchHandler(self.replicas, self.isr, sessions)
        self.groups = GroupCoordinator(
            self.replicas,
            self.metadata,
            GroupConfig(
                session_timeout_ms=config.group_consumer_session_timeout_ms,
                heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                max_size=config.group_consumer_max_size,
                assignors=config.group_consumer_assignors,
                offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                commit_timeout_ms=config.offsets_commit_timeout_ms,
            ),
            create_topic=self._create_offsets_topic,
        )
        self.group_metrics = GroupMetrics(self.metrics.registry)
        self.replicas.on_leader_and_isr.append(self.groups.leader_and_isr_applied)
        self.replicas.on_stop_replica.append(self.groups.stop_replica_applied)
        self.registration: Registration | None = None
        self._tasks: list[asyncio.Task] = []
        # Big control requests freeze what they built (``leasehold.heap``); enabled by main.
        self.heap = HeapFreezer(enabled=False)
        # The session's lease renewed by a process of its own (``leasehold.etcd.renewal_process``)
        # rather than a thread; enabled by main, like the heap freezer.
        self.renew_in_child = False
        self.renewer: RenewalProcess | None = None
        # The server's request metrics, given by main: requests on the controller's control
        # stream are counted there as their unary calls are (``control_servicer``).
        self.request_metrics: RequestMetrics | None = None
        self.configs.listeners.append(self._on_configs)
        self._configs_loaded = asyncio.Event()

    # ------------------------------------------------------------------ wiring

    def _new_fetcher(self, leader: Endpoint, fetcher_id: int) -> ReplicaFetcher:
        c = self.config
        endpoint = LeaderEndpoint(
            leader,
            c.broker_id,
            lambda: self.replicas.broker_epoch,
            c.common.tls if c.common.tls.ca else None,
            c.replica_socket_timeout_ms / 1000.0,
        )
        settings = FetcherSettings(
            max_wait_ms=c.replica_fetch_wait_max_ms,
            min_bytes=c.replica_fetch_min_bytes,
            max_bytes=c.replica_fetch_response_max_bytes,
            partition_max_bytes=c.replica_fetch_max_bytes,
            backoff_ms=c.replica_fetch_backoff_ms,
            flush=c.flush_on_replicate,
        )

        def throttled(tp: TopicPartition) -> bool:
            return tp.partition in self.replicas.settings(tp.topic).follower_throttled

        return ReplicaFetcher(
            fetcher_id,
            endpoint,
            self.replicas,
            settings,
            monotonic_ms,
            self.replicas.follower_quota,
            throttled,
            self.replicas.priority.data_turn,
            self.replicas.priority.pause,
        )

    async def _create_offsets_topic(self) -> None:
        """Ask the controller to create __consumer_offsets (a FindCoordinator found none)."""
        request = create_request(self.config.broker_id, self.replicas.broker_epoch)
        response = await self.controller.call(
            "CreateInternalTopic", request, time.monotonic() + CREATE_TOPIC_TIMEOUT_S
        )
        if response.error_code:
            log.warning("creating __consumer_offsets: %s", response.error_message)

    def _announced_controller(self) -> tuple[str, int] | None:
        """The controller address the last UpdateMetadata named, if it may be believed: without
        TLS it is only a claim, and etcd's election alone names the controller
        (``control_fence``)."""
        fence = self.replicas.fence
        if fence is not None and fence.confirm_in_etcd:
            return None
        return self.metadata.controller_endpoint

    def _on_configs(self, topics: set[str] | None) -> None:
        self._configs_loaded.set()
        self.replicas.apply_configs(topics)

    def register(self, server: grpc.aio.Server) -> None:
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(
            BrokerServicer(
                self.replicas,
                self.produce,
                self.fetch,
                self.metadata,
                self.config.common.cluster_id,
                self.producer_ids,
            ),
            server,
        )
        cfg = self.config
        control = BrokerControlServicer(
            self.replicas,
            self.heap,
            bounds=counters(cfg.max_partitions_per_request, cfg.max_control_partitions_per_request),
            observe=self.request_metrics.observe if self.request_metrics is not None else None,
            authorize=(
                functools.partial(peer_auth.refusal_for, trust_domain=cfg.common.cluster_id)
                if cfg.common.tls.enabled
                else None
            ),
        )
        server.add_generic_rpc_handlers((control_handlers(control),))
        group_pb2_grpc.add_GroupServiceServicer_to_server(
            GroupServicer(self.groups, self.config.broker_id), server
        )

    # --------------------------------------------------------------- lifecycle

    async def start(self, port: int) -> None:
        """Connect, load configs, register; on failure everything started is undone."""
        try:
            await self._start(port)
        except BaseException:
            await self._release()
            raise

    async def _start(self, port: int) -> None:
        c = self.config
        if self.renew_in_child:  # it starts while we connect and load; waited for below
            self.renewer = RenewalProcess(
                self.etcd, name="broker-lease", service="broker-agent", log_level=c.common.log_level
            )
        await self.etcd.connect()
        self._spawn(self.configs.run(self.etcd), "topic-configs")
        self._spawn(self.fence.run(), "controller-epoch")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._configs_loaded.wait(), CONFIG_LOAD_TIMEOUT_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.fence.loaded.wait(), CONFIG_LOAD_TIMEOUT_S)
        self.isr.start()
        endpoint = Endpoint(c.broker_id, c.common.advertised, port, c.rack)
        if self.renewer is not None:
            await asyncio.to_thread(self.renewer.wait_ready)
        self.registration = Registration(
            self.etcd, self.keyspace, endpoint, c.session_ttl, self._on_epoch, self.renewer
        )
        await self.registration.register()
        self.heap.settle()  # the loaded logs live as long as the process
        self._every(c.high_watermark_checkpoint_interval_ms, self._checkpoint, "hw-checkpoint")
        self._every(c.log_retention_check_interval_ms, self._retention, "retention")
        if c.log_cleaner_enable:
            self._every(c.log_cleaner_backoff_ms, self._clean, "log-cleaner")
        self._every(max(c.replica_lag_time_max_ms // 2, 100), self._isr_check, "isr-shrink")
        self._spawn(self.groups.run_timers(), "group-timers")
        if metrics_server.serve(self.metrics.registry, c.common.host, c.common.metrics_port):
            self._spawn(
                self.metrics.run(
                    lambda: self.replicas.partitions.values(),
                    lambda topic: self.replicas.settings(topic).min_insync_replicas,
                    lambda: self.replicas.fetchers,
                ),
                "metrics",
            )
            self._every(1000, self._group_metrics, "group-metrics")

    def _on_epoch(self, epoch: int) -> None:
        self.replicas.broker_epoch = epoch

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))  # type: ignore[arg-type]

    def _every(self, interval_ms: int, action: Callable[[], Awaitable[None]], name: str) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000.0)
                try:
                    await action()
                except Exception:  # a periodic task must survive one bad round
                    log.exception("periodic task %s failed", name)

        self._spawn(loop(), name)

    async def _group_metrics(self) -> None:
        self.group_metrics.observe(self.groups.groups(), self._high_watermark)

    def _high_watermark(self, tp: tuple[str, int]) -> int | None:
        partition = self.replicas.partition(TopicPartition(*tp))
        return None if partition is None or partition.log is None else partition.log.high_watermark

    async def _checkpoint(self) -> None:
        await asyncio.to_thread(self.replicas.checkpoint)
        self.heap.maintain()

    async def _retention(self) -> None:
        deleted = await self.replicas.run_retention()
        if deleted:
            log.info(
                "retention deleted %d segment(s) of %d log(s)", sum(deleted.values()), len(deleted)
            )

    async def _clean(self) -> None:
        """One round of the log cleaner on a worker thread (compacted logs only)."""
        await asyncio.to_thread(self.cleaner.clean_all_due)

    async def _isr_check(self) -> None:
        leaders = self.replicas.leader_partitions()
        self.isr.check_shrinks(leaders)
        for partition in leaders:
            # Time alone can let the watermark move (a lagging non-member stops holding it).
            if partition.maybe_increment_high_watermark():
                partition.signal.notify()

    async def stop(self) -> None:
        c = self.config
        self.replicas.shutting_down = True
        if c.controlled_shutdown_enable and self.registration is not None:
            await controlled_shutdown(
                self.controller,
                c.broker_id,
                lambda: self.replicas.broker_epoch,
                timeout_s=c.controlled_shutdown_timeout_ms / 1000.0,
                backoff_s=c.controlled_shutdown_retry_backoff_ms / 1000.0,
            )
        await self._release()
        log.info("broker agent stopped")

    async def _release(self) -> None:
        """Stop tasks and fetchers, close the logs, then revoke the session and disconnect."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.groups.close()
        await self.isr.close()
        await self.replicas.close()
        if self.registration is not None:
            await self.registration.close()
            self.registration = None
        if self.renewer is not None:
            await asyncio.to_thread(self.renewer.stop)
            self.renewer = None
        await self.controller.close()
        await self.etcd.close()
