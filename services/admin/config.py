"""The admin service's configuration: the common flags plus the limits it enforces.

Built once at start from flags and ``LEASEHOLD_*`` environment variables into a frozen object;
nothing reads the environment after that.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field

from leasehold.config import CommonConfig, add_common_arguments, common_from_args, env

DEFAULT_PORT = 9093


@dataclass(frozen=True)
class Limits:
    """Bounds that keep one request from hurting the cluster (hostile or mistaken input).

    ``max_partitions_per_topic`` keeps a topic's assignment well inside etcd's 1.5 MiB value
    limit; ``max_wait_ms`` caps how long an RPC may hold a connection waiting for the controller.
    """

    max_partitions_per_topic: int = 50_000
    max_wait_ms: int = 300_000
    max_attempts: int = 5


@dataclass(frozen=True)
class AdminConfig:
    common: CommonConfig = field(default_factory=CommonConfig)
    limits: Limits = field(default_factory=Limits)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leasehold-admin", description="Leasehold admin service (the management API)"
    )
    add_common_arguments(parser, DEFAULT_PORT, max_receive_bytes=4 * 1024 * 1024)
    parser.add_argument(
        "--max-partitions-per-topic",
        type=int,
        default=int(env("MAX_PARTITIONS_PER_TOPIC", "50000")),
        help="largest partition count a topic may have",
    )
    parser.add_argument(
        "--max-wait-ms",
        type=int,
        default=int(env("MAX_WAIT_MS", "300000")),
        help="longest an RPC waits for the controller to finish an operation",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> AdminConfig:
    ns = build_parser().parse_args(argv)
    if ns.max_partitions_per_topic < 1:
        raise SystemExit("--max-partitions-per-topic must be at least 1")
    if ns.max_wait_ms < 0:
        raise SystemExit("--max-wait-ms must not be negative")
    return AdminConfig(
        common=common_from_args(ns),
        limits=Limits(
            max_partitions_per_topic=ns.max_partitions_per_topic, max_wait_ms=ns.max_wait_ms
        ),
    )
