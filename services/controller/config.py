"""The controller's configuration: common flags plus the controller's own, into a frozen object.

Every flag is also readable from the environment (``LEASEHOLD_<NAME>``); the flag wins. Cluster
behaviour that operators change at run time (``auto.leader.rebalance.enable``,
``leader.imbalance.*``, ``delete.topic.enable``, ``unclean.leader.election.enable``) is *not*
here: it is read from the cluster-wide dynamic config in etcd. The flags below only override the
rebalance timing, which tests and ``make run`` want much shorter than Kafka's five minutes.
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from leasehold.config import CommonConfig, add_common_arguments, common_from_args, env
from leasehold.etcd.session import DEFAULT_TTL
from leasehold.peer_auth import hostname_id

# The ways requests reach the brokers (``services.controller.delivery``).
DELIVERIES = ("fast", "plain", "full")

DEFAULT_PORT = 9190


def grace_default(ttl: float) -> float:
    """The brokers' grace after an etcd outage (``role.OutageGrace``): a little over one TTL.
    A broker whose lease etcd expired registers again within about a second of etcd answering
    (its keep-alive thread asks every 0.2 s)."""
    return ttl + 1.0


@dataclass(frozen=True)
class ControllerConfig:
    common: CommonConfig = field(default_factory=CommonConfig)
    controller_id: int = 1
    session_ttl: int = DEFAULT_TTL
    # After an etcd outage, how long a broker whose registration vanished stays live for its
    # re-registration (``role``).
    broker_grace_s: float = grace_default(DEFAULT_TTL)
    state_change_log: str = ""
    # Overrides the cluster config leader.imbalance.check.interval.seconds when > 0.
    rebalance_interval_s: float = 0.0
    # Kafka waits 5 s after failover before the first imbalance check.
    rebalance_initial_delay_s: float = 5.0
    # Per-broker request channel: deadline of one call and the retry backoff bounds.
    request_timeout_s: float = 10.0
    retry_backoff_s: float = 0.1
    retry_backoff_max_s: float = 2.0
    # A failed replica deletion (StopReplica error from a live broker) is retried after this.
    deletion_retry_s: float = 2.0
    # The active controller's ``heartbeat`` state-change record, every this many seconds (0: none):
    # the evidence of when it stopped, should it die without resigning.
    heartbeat_interval_s: float = 5.0
    # The name the TLS certificate carries when the advertised host is not it (a pod's IP).
    advertised_tls_name: str = ""
    # How requests reach the brokers: "fast" (the default); "plain", the generated classes
    # alone, the reference the fast one is tested against; "full", the fast one sending every
    # partition in full at failover (``services.controller.delivery``).
    delivery: str = "fast"
    # Requests to each broker on one control stream (``BrokerControlService.Control``) instead of
    # a unary call each: cheaper per request; a standby opens them ahead of its failover
    # (``services.controller.delivery.channels``, bench/README.md).
    control_stream: bool = True
    # __consumer_offsets, created on a broker's first need of it (Kafka's offsets.topic.*):
    # the replication factor is capped at the live brokers then.
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    # Where controller_id came from: "flag" or "hostname <name>" (logged at start).
    controller_id_source: str = "flag"

    @property
    def cluster_id(self) -> str:
        return self.common.cluster_id


def controller_id_from_hostname(hostname: str) -> int:
    """A stable non-negative int32 for a host name (CRC-32 of its UTF-8 bytes, top bit cleared).

    A Kubernetes Deployment gives its pods no ordinal, only a unique name (``$HOSTNAME``); the
    id must stay the same for the life of the pod and differ between pods. Two names colliding
    is about one in two billion per pair; the election would still keep one active controller.
    A certificate naming the pod (``spiffe://<cluster>/controller/<pod name>``) names this id
    (``leasehold.peer_auth``, which holds the one definition).
    """
    return hostname_id(hostname)


def _hostname(environ: Mapping[str, str]) -> str:
    return environ.get("HOSTNAME") or socket.gethostname()


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leasehold-controller",
        description="The Leasehold controller: elected through etcd, owns every partition state.",
    )
    add_common_arguments(parser, DEFAULT_PORT, max_receive_bytes=16 * 1024 * 1024)
    a = parser.add_argument
    a("--controller-id", type=int, default=int(env("CONTROLLER_ID", "1")))
    a(
        "--controller-id-from-hostname",
        action=argparse.BooleanOptionalAction,
        default=_truthy(env("CONTROLLER_ID_FROM_HOSTNAME", "false")),
        help="derive the controller id from $HOSTNAME (crc32 & 0x7fffffff); overrides "
        "--controller-id",
    )
    a(
        "--session-ttl",
        type=int,
        default=int(env("SESSION_TTL", str(DEFAULT_TTL))),
        help="lease TTL, seconds",
    )
    a(
        "--broker-grace",
        type=float,
        default=float(env("BROKER_GRACE", "-1")),
        help="seconds a broker whose registration vanished in an etcd outage has to register "
        "again before it is treated as dead; default: session TTL + 1",
    )
    a("--state-change-log", default=env("STATE_CHANGE_LOG", ""), help="JSON lines file")
    a(
        "--rebalance-interval",
        type=float,
        default=float(env("REBALANCE_INTERVAL", "0")),
        help="seconds between leader-imbalance checks; 0 uses the cluster config",
    )
    a(
        "--rebalance-initial-delay",
        type=float,
        default=float(env("REBALANCE_INITIAL_DELAY", "5")),
        help="seconds after failover before the first imbalance check",
    )
    a(
        "--heartbeat-interval",
        type=float,
        default=float(env("HEARTBEAT_INTERVAL", "5")),
        help="seconds between the active controller's heartbeat records in the state-change "
        "log; 0 disables them",
    )
    a(
        "--advertised-tls-name",
        default=env("ADVERTISED_TLS_NAME", ""),
        help="name the TLS certificate carries, when clients dial the advertised host by IP",
    )
    a(
        "--delivery",
        choices=DELIVERIES,
        default=env("DELIVERY", "fast"),
        help="how requests reach the brokers: fast (default) or plain (generated classes only)",
    )
    a(
        "--control-stream",
        action=argparse.BooleanOptionalAction,
        default=env("CONTROL_STREAM", "true").lower() in ("1", "true", "yes", "on"),
        help="send each broker's requests on one long-lived stream (the default), not a unary "
        "call each (--no-control-stream)",
    )
    a("--request-timeout", type=float, default=float(env("REQUEST_TIMEOUT", "10")))
    a("--deletion-retry", type=float, default=float(env("DELETION_RETRY", "2")))
    a(
        "--offsets-topic-num-partitions",
        type=int,
        default=int(env("OFFSETS_TOPIC_NUM_PARTITIONS", "50")),
        help="partitions of __consumer_offsets when it is created",
    )
    a(
        "--offsets-topic-replication-factor",
        type=int,
        default=int(env("OFFSETS_TOPIC_REPLICATION_FACTOR", "3")),
        help="replication factor of __consumer_offsets (at most the live brokers then)",
    )
    return parser


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ControllerConfig:
    ns = build_parser().parse_args(argv)
    source = "flag"
    if ns.controller_id_from_hostname:
        hostname = _hostname(os.environ if environ is None else environ)
        ns.controller_id = controller_id_from_hostname(hostname)
        source = f"hostname {hostname}"
    if ns.controller_id < 0:
        raise SystemExit("--controller-id must be >= 0")
    if ns.heartbeat_interval < 0:
        raise SystemExit("--heartbeat-interval must be >= 0")
    if ns.session_ttl < 1:
        raise SystemExit("--session-ttl must be at least 1 second")
    if ns.offsets_topic_num_partitions < 1 or ns.offsets_topic_replication_factor < 1:
        raise SystemExit("--offsets-topic-num-partitions and -replication-factor must be >= 1")
    return ControllerConfig(
        common=common_from_args(ns),
        controller_id=ns.controller_id,
        session_ttl=ns.session_ttl,
        broker_grace_s=ns.broker_grace if ns.broker_grace >= 0 else grace_default(ns.session_ttl),
        state_change_log=ns.state_change_log,
        rebalance_interval_s=ns.rebalance_interval,
        rebalance_initial_delay_s=ns.rebalance_initial_delay,
        request_timeout_s=ns.request_timeout,
        deletion_retry_s=ns.deletion_retry,
        heartbeat_interval_s=ns.heartbeat_interval,
        advertised_tls_name=ns.advertised_tls_name,
        delivery=ns.delivery,
        control_stream=ns.control_stream,
        controller_id_source=source,
        offsets_topic_num_partitions=ns.offsets_topic_num_partitions,
        offsets_topic_replication_factor=ns.offsets_topic_replication_factor,
    )
