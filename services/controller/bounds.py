"""How many partitions one AlterPartition may name (``leasehold.request_bounds``).

A broker asks for the ISR changes of the partitions it leads: at most every partition of the
cluster. Counted on the decoded protobuf, topics first, before the servicer validates anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leasehold.request_bounds import Bound, Counter, Counts

MAX_PARTITIONS_PER_REQUEST = 250_000
_SERVICE = "/leasehold.controller.v1.ControllerService/"


def counters(max_partitions: int = MAX_PARTITIONS_PER_REQUEST) -> Mapping[str, Counter]:
    bound = Bound("partitions", max_partitions, "the controller's limit")

    def alter_partition(request: Any, counts: Counts) -> None:
        counts.add(bound, len(request.topics))
        for t in request.topics:
            counts.add(bound, len(t.partitions))
            for p in t.partitions:
                counts.add(bound, len(p.new_isr_with_epochs))

    return {_SERVICE + "AlterPartition": alter_partition}
