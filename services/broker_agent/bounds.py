"""How many partitions one request to a broker may name (``leasehold.request_bounds``).

Counted on the decoded protobuf before the servicer turns it into domain objects, topics first:
a Produce or Fetch naming more than ``--max-partitions-per-request`` partitions, or a control
request naming more than ``--max-control-partitions-per-request``, is INVALID_ARGUMENT at once.
The control limit sits well above the largest cluster the controller is tested with (a failover
UpdateMetadata carries every partition of the cluster: 100,000 in the large benchmark).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leasehold.request_bounds import Bound, Counter, Counts

_DATA = "/leasehold.broker.v1.BrokerService/"
_CONTROL = "/leasehold.broker.v1.BrokerControlService/"
_GROUP = "/leasehold.group.v1.GroupService/"


def counters(max_partitions: int, max_control_partitions: int) -> Mapping[str, Counter]:
    data = Bound("partitions", max_partitions, "--max-partitions-per-request")
    control = Bound("partitions", max_control_partitions, "--max-control-partitions-per-request")

    def nested(request: Any, counts: Counts) -> None:
        counts.add(data, len(request.topics))
        for t in request.topics:
            counts.add(data, len(t.partitions))

    def fetch(request: Any, counts: Counts) -> None:
        nested(request, counts)
        counts.add(data, len(request.forgotten_topics))
        for t in request.forgotten_topics:
            counts.add(data, len(t.partitions))

    def metadata(request: Any, counts: Counts) -> None:
        counts.add(data, len(request.topics))

    groups = Bound("groups", max_partitions, "--max-partitions-per-request")

    def group_ids(request: Any, counts: Counts) -> None:
        counts.add(groups, len(request.group_ids))

    def heartbeat(request: Any, counts: Counts) -> None:
        counts.add(data, len(request.subscription.topic_names))
        counts.add(data, len(request.owned.topic_partitions))
        for t in request.owned.topic_partitions:
            counts.add(data, len(t.partitions))

    def states(request: Any, counts: Counts) -> None:
        counts.add(control, len(request.partition_states))

    def update_metadata(request: Any, counts: Counts) -> None:
        counts.add(control, len(request.partition_states) + len(request.deleted_topics))

    return {
        _DATA + "Produce": nested,
        _DATA + "Fetch": fetch,
        _DATA + "ListOffsets": nested,
        _DATA + "OffsetsForLeaderEpoch": nested,
        _DATA + "Metadata": metadata,
        _GROUP + "FindCoordinator": group_ids,
        _GROUP + "ConsumerGroupHeartbeat": heartbeat,
        _GROUP + "OffsetCommit": nested,
        _GROUP + "OffsetFetch": nested,
        _GROUP + "DescribeGroups": group_ids,
        _GROUP + "DeleteGroups": group_ids,
        _CONTROL + "LeaderAndIsr": states,
        _CONTROL + "StopReplica": states,
        _CONTROL + "UpdateMetadata": update_metadata,
    }
