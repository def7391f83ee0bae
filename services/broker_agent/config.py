"""The broker agent's configuration: common flags plus the broker's own, frozen once at start.

Every flag can also come from the environment (``--broker-id`` or ``LEASEHOLD_BROKER_ID``); the
flag wins. Names after the broker's own identity mirror Kafka's broker configs
(``replica.lag.time.max.ms`` is ``--replica-lag-time-max-ms``) so an operator can map one onto the
other without a table.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from leasehold.config import CommonConfig, add_common_arguments, common_from_args, env
from leasehold.etcd.session import DEFAULT_TTL

DEFAULT_PORT = 9092


@dataclass(frozen=True)
class BrokerConfig:
    """Everything the agent reads at start; never mutated afterwards."""

    broker_id: int
    data_dir: str
    common: CommonConfig = field(default_factory=CommonConfig)
    session_ttl: int = DEFAULT_TTL
    rack: str = ""
    # Replication (Kafka's names, in milliseconds and bytes).
    replica_lag_time_max_ms: int = 30_000
    num_replica_fetchers: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1_000
    replica_socket_timeout_ms: int = 30_000
    # Defaults for topics that do not override them.
    min_insync_replicas: int = 1
    message_max_bytes: int = 1024 * 1024 + 12
    # Periodic work.
    high_watermark_checkpoint_interval_ms: int = 5_000
    log_retention_check_interval_ms: int = 300_000
    # The log cleaner (compacted topics): Kafka's log.cleaner.* names.
    log_cleaner_enable: bool = True
    log_cleaner_dedupe_buffer_size: int = 16 * 1024 * 1024
    log_cleaner_io_max_bytes_per_second: float = math.inf
    log_cleaner_backoff_ms: int = 15_000
    # The group coordinator: Kafka's group.consumer.* and offsets.* broker configs.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_max_size: int = 2**31 - 1
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    offset_metadata_max_bytes: int = 4096
    offsets_commit_timeout_ms: int = 5_000
    # Controlled shutdown: retry until nothing is left to move or the timeout passes.
    controlled_shutdown_enable: bool = True
    controlled_shutdown_timeout_ms: int = 30_000
    controlled_shutdown_retry_backoff_ms: int = 1_000
    # Calls to the controller (AlterPartition) back off this long after a failure.
    controller_retry_backoff_ms: int = 500
    # Flush the log before answering acks=all, and after every follower append.
    flush_on_replicate: bool = True
    # Partitions one request may name (``bounds``): clients' and followers' requests, and the
    # controller's (a failover UpdateMetadata names every partition of the cluster).
    max_partitions_per_request: int = 100_000
    max_control_partitions_per_request: int = 250_000

    def __post_init__(self) -> None:
        if self.broker_id < 0:
            raise ValueError(f"--broker-id must be >= 0, got {self.broker_id}")
        if not self.data_dir:
            raise ValueError("--data-dir is required")
        if self.session_ttl < 1:
            raise ValueError("--session-ttl must be at least 1 second")
        if self.num_replica_fetchers < 1:
            raise ValueError("--num-replica-fetchers must be at least 1")
        if self.min_insync_replicas < 1:
            raise ValueError("--min-insync-replicas must be at least 1")
        if self.replica_lag_time_max_ms < 1:
            raise ValueError("--replica-lag-time-max-ms must be positive")
        if (
            min(self.group_consumer_session_timeout_ms, self.group_consumer_heartbeat_interval_ms)
            < 1
        ):
            raise ValueError("the group session timeout and heartbeat interval must be positive")
        if not self.group_consumer_assignors or any(
            a not in ("uniform", "range") for a in self.group_consumer_assignors
        ):
            raise ValueError("--group-consumer-assignors: a list of uniform and range")
        if min(self.max_partitions_per_request, self.max_control_partitions_per_request) < 1:
            raise ValueError("the per-request partition limits must be at least 1")


def _int_env(name: str, default: int) -> int:
    return int(env(name, str(default)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leasehold-broker-agent",
        description="Leasehold broker agent: hosts partition replicas and serves clients.",
    )
    add_common_arguments(parser, DEFAULT_PORT)
    d = BrokerConfig(broker_id=0, data_dir="unused")
    a = parser.add_argument
    a("--broker-id", type=int, default=_int_env("BROKER_ID", -1))
    a("--data-dir", default=env("DATA_DIR", ""))
    a("--session-ttl", type=int, default=_int_env("SESSION_TTL", d.session_ttl))
    a("--rack", default=env("RACK", ""))
    ints = [
        ("replica-lag-time-max-ms", d.replica_lag_time_max_ms),
        ("num-replica-fetchers", d.num_replica_fetchers),
        ("replica-fetch-max-bytes", d.replica_fetch_max_bytes),
        ("replica-fetch-response-max-bytes", d.replica_fetch_response_max_bytes),
        ("replica-fetch-wait-max-ms", d.replica_fetch_wait_max_ms),
        ("replica-fetch-min-bytes", d.replica_fetch_min_bytes),
        ("replica-fetch-backoff-ms", d.replica_fetch_backoff_ms),
        ("replica-socket-timeout-ms", d.replica_socket_timeout_ms),
        ("min-insync-replicas", d.min_insync_replicas),
        ("message-max-bytes", d.message_max_bytes),
        ("high-watermark-checkpoint-interval-ms", d.high_watermark_checkpoint_interval_ms),
        ("log-retention-check-interval-ms", d.log_retention_check_interval_ms),
        ("log-cleaner-dedupe-buffer-size", d.log_cleaner_dedupe_buffer_size),
        ("log-cleaner-backoff-ms", d.log_cleaner_backoff_ms),
        ("controlled-shutdown-timeout-ms", d.controlled_shutdown_timeout_ms),
        ("controlled-shutdown-retry-backoff-ms", d.controlled_shutdown_retry_backoff_ms),
        ("controller-retry-backoff-ms", d.controller_retry_backoff_ms),
        ("group-consumer-session-timeout-ms", d.group_consumer_session_timeout_ms),
        ("group-consumer-heartbeat-interval-ms", d.group_consumer_heartbeat_interval_ms),
        ("group-consumer-max-size", d.group_consumer_max_size),
        ("offset-metadata-max-bytes", d.offset_metadata_max_bytes),
        ("offsets-commit-timeout-ms", d.offsets_commit_timeout_ms),
        ("max-partitions-per-request", d.max_partitions_per_request),
        ("max-control-partitions-per-request", d.max_control_partitions_per_request),
    ]
    for flag, default in ints:
        a(f"--{flag}", type=int, default=_int_env(flag.upper().replace("-", "_"), default))
    a(
        "--controlled-shutdown-enable",
        type=_parse_bool,
        default=_parse_bool(env("CONTROLLED_SHUTDOWN_ENABLE", "true")),
    )
    a(
        "--group-consumer-assignors",
        default=env("GROUP_CONSUMER_ASSIGNORS", ",".join(d.group_consumer_assignors)),
        help="server-side assignors, the first the default (uniform, range)",
    )
    a(
        "--log-cleaner-enable",
        type=_parse_bool,
        default=_parse_bool(env("LOG_CLEANER_ENABLE", "true")),
    )
    a(
        "--log-cleaner-io-max-bytes-per-second",
        type=float,
        default=float(env("LOG_CLEANER_IO_MAX_BYTES_PER_SECOND", "inf")),
    )
    a(
        "--flush-on-replicate",
        type=_parse_bool,
        default=_parse_bool(env("FLUSH_ON_REPLICATE", "true")),
    )
    return parser


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def config_from_args(argv: Sequence[str] | None = None) -> BrokerConfig:
    """Parse flags (and environment) into a BrokerConfig; exits with usage on bad input."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return BrokerConfig(
            broker_id=ns.broker_id,
            data_dir=ns.data_dir,
            common=common_from_args(ns),
            session_ttl=ns.session_ttl,
            rack=ns.rack,
            replica_lag_time_max_ms=ns.replica_lag_time_max_ms,
            num_replica_fetchers=ns.num_replica_fetchers,
            replica_fetch_max_bytes=ns.replica_fetch_max_bytes,
            replica_fetch_response_max_bytes=ns.replica_fetch_response_max_bytes,
            replica_fetch_wait_max_ms=ns.replica_fetch_wait_max_ms,
            replica_fetch_min_bytes=ns.replica_fetch_min_bytes,
            replica_fetch_backoff_ms=ns.replica_fetch_backoff_ms,
            replica_socket_timeout_ms=ns.replica_socket_timeout_ms,
            min_insync_replicas=ns.min_insync_replicas,
            message_max_bytes=ns.message_max_bytes,
            high_watermark_checkpoint_interval_ms=ns.high_watermark_checkpoint_interval_ms,
            log_retention_check_interval_ms=ns.log_retention_check_interval_ms,
            log_cleaner_enable=ns.log_cleaner_enable,
            log_cleaner_dedupe_buffer_size=ns.log_cleaner_dedupe_buffer_size,
            log_cleaner_io_max_bytes_per_second=ns.log_cleaner_io_max_bytes_per_second,
            log_cleaner_backoff_ms=ns.log_cleaner_backoff_ms,
            controlled_shutdown_enable=ns.controlled_shutdown_enable,
            controlled_shutdown_timeout_ms=ns.controlled_shutdown_timeout_ms,
            controlled_shutdown_retry_backoff_ms=ns.controlled_shutdown_retry_backoff_ms,
            controller_retry_backoff_ms=ns.controller_retry_backoff_ms,
            group_consumer_session_timeout_ms=ns.group_consumer_session_timeout_ms,
            group_consumer_heartbeat_interval_ms=ns.group_consumer_heartbeat_interval_ms,
            group_consumer_max_size=ns.group_consumer_max_size,
            group_consumer_assignors=tuple(
                a.strip() for a in ns.group_consumer_assignors.split(",") if a.strip()
            ),
            offset_metadata_max_bytes=ns.offset_metadata_max_bytes,
            offsets_commit_timeout_ms=ns.offsets_commit_timeout_ms,
            flush_on_replicate=ns.flush_on_replicate,
            max_partitions_per_request=ns.max_partitions_per_request,
            max_control_partitions_per_request=ns.max_control_partitions_per_request,
        )
    except ValueError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits
