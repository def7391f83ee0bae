"""Wiring: etcd client, watch, store, controller, event loop, election, channels and gRPC.

``ControllerApp`` is what ``__main__`` runs and what tests start in-process. Every controller
process watches the whole cluster prefix from the start (hot standby) and campaigns; the event
loop is the only place controller state changes.

Health: ``""`` is SERVING while the process runs (liveness); the controller service's own name is
SERVING only while this controller is the active one (readiness: a Kubernetes Service in front of
the controllers reaches only the active one). ``on_role_change`` is how the app reports that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable

from google.protobuf.message import Message

from leasehold import metrics as metrics_server
from leasehold.assignment import BrokerMetadata
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2_grpc
from leasehold.etcd.client import EtcdClient
from leasehold.etcd.keys import Keyspace
from leasehold.etcd.renewal_process import RenewalProcess
from leasehold.metadata.v1 import metadata_pb2
from leasehold.request_bounds import RequestBoundsInterceptor
from leasehold.server import Service, ServiceRunner
from services.controller.bounds import counters
from services.controller.config import ControllerConfig
from services.controller.controller import Controller
from services.controller.core import TopicPartition
from services.controller.delivery.channels import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    ChannelSettings,
    ControllerChannelManager,
)
from services.controller.election import ElectionRunner
from services.controller.event_loop import EventLoop
from services.controller.events import (
    ControllerEvent,
    StopReplicaResult,
)
from services.controller.internal_topics import InternalTopics
from services.controller.metrics import ControllerMetrics
from services.controller.role import answer_not_controller
from services.controller.servicer import SERVICE_NAME, ControllerServicer
from services.controller.statelog import StateChangeLog
from services.controller.store import ControllerStore
from services.controller.watcher import ClusterWatcher

log = logging.getLogger(__name__)


class ControllerApp:
    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        common = config.common
        self.client = EtcdClient(common.etcd_endpoints, tls=common.etcd_tls)
        self.keyspace = Keyspace(config.cluster_id)
        self.statelog = StateChangeLog(config.state_change_log, config.controller_id)
        self.events = EventLoop(self._handle)
        self.watcher = ClusterWatcher(self.client, self.keyspace, self.events.put)
        self.store = ControllerStore(self.client, self.keyspace, self.watcher.mirror)
        self.controller = Controller(
            config, self.store, self.statelog, self.watcher.snapshot_events, self._new_channels
        )
        self.controller.put = self.events.put
        self.metrics = ControllerMetrics()
        self.metrics.attach(self.controller, self.events)
        ctx = self.controller.ctx
        internal = InternalTopics(
            self.client,
            self.keyspace,
            lambda: [BrokerMetadata(b, ctx.brokers[b].rack) for b in ctx.live_broker_ids],
            config.offsets_topic_num_partitions,
            config.offsets_topic_replication_factor,
        )
        self.servicer = ControllerServicer(self.controller, self.events, internal)
        self.election: ElectionRunner | None = None
        # The session's lease renewed by a process of its own (``leasehold.etcd.renewal_process``)
        # rather than a thread: set by main, a child process being a process-wide choice
        # (in-process apps, in tests, keep the thread).
        self.renew_in_child = False
        self.renewer: RenewalProcess | None = None
        self.port = 0
        self._watch_task: asyncio.Task | None = None
        self._metrics_task: asyncio.Task | None = None
        # Awaited with True when this controller becomes active, False when it stops being so.
        self.on_role_change: Callable[[bool], Awaitable[None]] | None = None
        self._reported_active = False

    # ---- gRPC service --------------------------------------------------------------------------
    def service(self, port_of: Callable[[], int]) -> Service:
        """The Service for ``ServiceRunner``; ``port_of()`` gives the bound port at start.

        The controller service's health is self-reported (see ``on_role_change``)."""

        async def on_start() -> None:
            await self.start(port_of())

        return Service(
            names=[SERVICE_NAME],
            register=lambda server: controller_pb2_grpc.add_ControllerServiceServicer_to_server(
                self.servicer, server
            ),
            on_start=on_start,
            on_stop=self.stop,
            interceptors=[
                metrics_server.RequestMetrics(self.metrics.registry, "controller"),
                RequestBoundsInterceptor(counters()),
            ],
            self_reported=[SERVICE_NAME],
        )

    def runner(self) -> ServiceRunner:
        """The gRPC server for this app, its controller-service health following the role."""
        runner = ServiceRunner(self.config.common, self.service(lambda: runner.port))

        async def report_role(active: bool) -> None:
            await runner.set_serving(active, names=[SERVICE_NAME])

        self.on_role_change = report_role
        return runner

    # ---- lifecycle -----------------------------------------------------------------------------
    async def start(self, port: int) -> None:
        self.port = port
        common = self.config.common
        if self.renew_in_child:  # it starts while we connect and load; waited for below
            self.renewer = RenewalProcess(
                self.client,
                name="controller-lease",
                service="controller",
                log_level=common.log_level,
            )
        await self.client.connect()
        self.events.start()
        self._watch_task = asyncio.create_task(self.watcher.run(), name="controller-watch")
        registration = metadata_pb2.ControllerRegistration(
            controller_id=self.config.controller_id,
            host=common.advertised,
            port=port,
            incarnation_id=uuid.uuid4().hex,
            session_ttl_ms=self.config.session_ttl * 1000,
            tls_server_name=self.config.advertised_tls_name,
        ).SerializeToString()
        if self.renewer is not None:
            await asyncio.to_thread(self.renewer.wait_ready)
        self.election = ElectionRunner(
            self.client,
            self.keyspace,
            self.config.session_ttl,
            registration,
            self.controller,
            self.events,
            renewer=self.renewer,
        )
        self.election.start()
        if metrics_server.serve(self.metrics.registry, common.host, common.metrics_port):
            self._metrics_task = asyncio.create_task(
                self.metrics.run(self.controller, self.events), name="controller-metrics"
            )
        log.info(
            "controller %d (id from %s) started on port %d (cluster %s)",
            self.config.controller_id,
            self.config.controller_id_source,
            port,
            self.config.cluster_id,
        )

    async def stop(self) -> None:
        """Resign (the standby takes over at once), then stop everything we started."""
        if self.election is not None:
            await self.election.stop()
        if self.renewer is not None:
            await asyncio.to_thread(self.renewer.stop)
        for task in (self._watch_task, self._metrics_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.events.stop()
        for event in self.events.drain():
            answer_not_controller(event)
        await self.controller.deactivate("the controller is stopping")
        await self.client.close()
        self.statelog.close()

    async def _handle(self, event: ControllerEvent) -> None:
        try:
            await self.controller.handle(event)
        finally:
            # Every activation and resignation happens in an event: report it once it is done.
            active = self.controller.active
            if active != self._reported_active and self.on_role_change is not None:
                self._reported_active = active
                await self.on_role_change(active)

    # ---- broker channels -----------------------------------------------------------------------
    def _new_channels(self) -> ControllerChannelManager:
        common, cfg = self.config.common, self.config
        settings = ChannelSettings(
            controller_host=common.advertised,
            controller_port=self.port,
            tls=common.tls if common.tls.ca else None,
            request_timeout_s=cfg.request_timeout_s,
            backoff_s=cfg.retry_backoff_s,
            backoff_max_s=cfg.retry_backoff_max_s,
            control_stream=cfg.control_stream,
        )
        return ControllerChannelManager(settings, self._on_response)

    def _on_response(self, broker_id: int, kind: str, request: Message, response: Message) -> None:
        """On a sender task: log errors; StopReplica(delete) answers become events."""
        code = response.error_code
        if code != common_pb2.ERROR_CODE_NONE:
            log.warning(
                "%s rejected by broker %d: %s %s",
                kind,
                broker_id,
                common_pb2.ErrorCode.Name(code),
                response.error_message,
            )
        if kind in (LEADER_AND_ISR, STOP_REPLICA):
            _log_partition_errors(kind, broker_id, response.partition_errors)
        if kind == STOP_REPLICA:
            result = stop_replica_result(broker_id, request, response)
            if result is not None:
                self.events.put(result)


def _log_partition_errors(kind: str, broker_id: int, errors) -> None:
    """One line per error code, naming a few partitions: a repeated LeaderAndIsr of 10,000
    partitions (Kafka's replica step after a broker failure re-sends what the election sent)
    is answered with 10,000 STALE_CONTROLLER_EPOCH errors, which the broker ignores."""
    failed: dict[int, list[str]] = {}
    for e in errors:
        if e.error_code != common_pb2.ERROR_CODE_NONE:
            failed.setdefault(e.error_code, []).append(f"{e.topic}-{e.partition}")
    for code, names in failed.items():
        # An equal leader epoch is Kafka's "already applied", not a failure worth a warning.
        level = (
            logging.INFO
            if code == common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH
            else logging.WARNING
        )
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        log.log(
            level,
            "%s failed on broker %d for %d partitions (%s): %s%s",
            kind,
            broker_id,
            len(names),
            common_pb2.ErrorCode.Name(code),
            ", ".join(names[:5]),
            more,
        )


def stop_replica_result(broker_id: int, request, response) -> StopReplicaResult | None:
    """Per deleted partition, the broker's error code (the whole request's when it failed)."""
    deleted = [s for s in request.partition_states if s.delete_partition]
    if not deleted:
        return None
    per_partition = {(e.topic, e.partition): e.error_code for e in response.partition_errors}
    errors = tuple(
        (
            TopicPartition(s.topic, s.partition),
            response.error_code or per_partition.get((s.topic, s.partition), 0),
        )
        for s in deleted
    )
    return StopReplicaResult(broker_id, request.controller_epoch, errors)
