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
    The ``*_per_request`` limits are checked on the decoded request before anything is built from
    it (``services.admin.bounds``): INVALID_ARGUMENT. ``max_total_partitions`` bounds the whole
    cluster (partitions with a state in etcd plus the request's): RESOURCE_EXHAUSTED.
    """

    max_partitions_per_topic: int = 50_000
    max_wait_ms: int = 300_000
    max_attempts: int = 5
    max_topics_per_request: int = 1_000
    max_partitions_per_request: int = 100_000
    max_assignment_entries_per_request: int = 300_000
    max_config_entries_per_request: int = 1_000
    max_total_partitions: int = 200_000


@dataclass(frozen=True)
class AdminConfig:
    common: CommonConfig = field(default_factory=CommonConfig)
    limits: Limits = field(default_factory=Limits)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="leasehold-admin", description="Leasehold admin service (the management API)"
    )
    add_common_arguments(parser, DEFAULT_PORT, max_receive_bytes=2 * 1024 * 1024)
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
    d = Limits()
    for flag, default, doc in (
        (
            "max-topics-per-request",
            d.max_topics_per_request,
            "topics (or resources) a request names",
        ),
        ("max-partitions-per-request", d.max_partitions_per_request, "partitions a request names"),
        (
            "max-assignment-entries-per-request",
            d.max_assignment_entries_per_request,
            "broker ids in a request's replica assignments",
        ),
        (
            "max-config-entries-per-request",
            d.max_config_entries_per_request,
            "config entries a request names",
        ),
        ("max-total-partitions", d.max_total_partitions, "partitions in the whole cluster"),
    ):
        parser.add_argument(
            f"--{flag}",
            type=int,
            default=int(env(flag.upper().replace("-", "_"), str(default))),
            help=f"most {doc}",
        )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> AdminConfig:
    ns = build_parser().parse_args(argv)
    if ns.max_partitions_per_topic < 1:
        raise SystemExit("--max-partitions-per-topic must be at least 1")
    if ns.max_wait_ms < 0:
        raise SystemExit("--max-wait-ms must not be negative")
    counts = {
        "max_topics_per_request": ns.max_topics_per_request,
        "max_partitions_per_request": ns.max_partitions_per_request,
        "max_assignment_entries_per_request": ns.max_assignment_entries_per_request,
        "max_config_entries_per_request": ns.max_config_entries_per_request,
        "max_total_partitions": ns.max_total_partitions,
    }
    for name, value in counts.items():
        if value < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1")
    return AdminConfig(
        common=common_from_args(ns),
        limits=Limits(
            max_partitions_per_topic=ns.max_partitions_per_topic,
            max_wait_ms=ns.max_wait_ms,
            **counts,
        ),
    )
