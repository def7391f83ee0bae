"""How big one admin request may be: counters over the protobuf, for ``RequestBoundsInterceptor``.

Each counter reads lengths and scalar fields only, topics first, so a request naming too many
topics is refused before its assignments are looked at (``leasehold.request_bounds``). The
per-cluster partition total is checked later, against the cluster (``Topics``), because it needs
the cluster's own count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leasehold.request_bounds import Bound, Counter, Counts
from services.admin.config import Limits

_SERVICE = "/leasehold.admin.v1.AdminService/"


def counters(limits: Limits) -> Mapping[str, Counter]:
    """Method -> counter, for the limits configured."""
    topics = Bound("topics", limits.max_topics_per_request, "--max-topics-per-request")
    partitions = Bound(
        "partitions", limits.max_partitions_per_request, "--max-partitions-per-request"
    )
    entries = Bound(
        "replica assignment entries (broker ids)",
        limits.max_assignment_entries_per_request,
        "--max-assignment-entries-per-request",
    )
    configs = Bound(
        "config entries", limits.max_config_entries_per_request, "--max-config-entries-per-request"
    )

    def assignments(items: Any, counts: Counts) -> None:
        counts.add(partitions, len(items))
        for item in items:
            counts.add(entries, len(item.broker_ids))

    def create_topics(request: Any, counts: Counts) -> None:
        counts.add(topics, len(request.topics))
        for t in request.topics:
            counts.add(configs, len(t.configs))
            counts.add(partitions, max(t.num_partitions, 0))
            assignments(t.assignments, counts)

    def create_partitions(request: Any, counts: Counts) -> None:
        counts.add(topics, len(request.topics))
        for t in request.topics:
            assignments(t.assignments, counts)

    def names(field: str) -> Counter:
        def count(request: Any, counts: Counts) -> None:
            counts.add(topics, len(getattr(request, field)))

        return count

    def tps(request: Any, counts: Counts) -> None:
        counts.add(partitions, len(request.partitions))

    def reassign(request: Any, counts: Counts) -> None:
        counts.add(partitions, len(request.reassignments))
        for r in request.reassignments:
            counts.add(entries, len(r.replicas))

    def generate(request: Any, counts: Counts) -> None:
        counts.add(topics, len(request.topics))
        counts.add(entries, len(request.broker_ids))

    def alter_configs(request: Any, counts: Counts) -> None:
        counts.add(topics, len(request.resources))
        for r in request.resources:
            counts.add(configs, len(r.configs))

    def describe_configs(request: Any, counts: Counts) -> None:
        counts.add(topics, len(request.resources))

    return {
        _SERVICE + "CreateTopics": create_topics,
        _SERVICE + "CreatePartitions": create_partitions,
        _SERVICE + "DeleteTopics": names("topic_names"),
        _SERVICE + "DescribeTopics": names("topics"),
        _SERVICE + "DescribeConfigs": describe_configs,
        _SERVICE + "AlterConfigs": alter_configs,
        _SERVICE + "GenerateReassignment": generate,
        _SERVICE + "AlterPartitionReassignments": reassign,
        _SERVICE + "ListPartitionReassignments": tps,
        _SERVICE + "ElectLeaders": tps,
    }
