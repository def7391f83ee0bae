"""ElectLeaders (KIP-460): a preferred or unclean election intent for the controller.

The request names partitions (or none: every partition) and the election type; the admin service
checks that every named partition exists and is not being deleted, then writes one
``/admin/elections/<request-id>`` intent. The controller runs the preferred-replica or unclean
selector per partition and writes the per-partition outcome (ELECTION_NOT_NEEDED,
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, ...) with the intent's removal.
"""

from __future__ import annotations

from collections.abc import Sequence

from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.validation import cut
from services.admin.config import Limits
from services.admin.model import CallContext, OperationStatus, Outcome, PartitionOutcome
from services.admin.operations import (
    Operations,
    merge_outcomes,
    new_request_id,
    now_ms,
    optimistic,
    result_outcomes,
    trace_context,
)
from services.admin.store import AdminStore, Change, Want
from services.admin.validate import (
    check_topic_names,
    for_item,
    no_duplicates,
    require_live_topic,
    require_partition,
    validating,
)

_TYPES = {
    common_pb2.ELECTION_TYPE_PREFERRED: "preferred",
    common_pb2.ELECTION_TYPE_UNCLEAN: "unclean",
}


def _no_outcome(topic: str, partition: int) -> Outcome:
    return Outcome(
        common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
        f"The controller reported no outcome for partition {topic}-{partition}.",
    )


class Elections:
    def __init__(self, store: AdminStore, operations: Operations, limits: Limits) -> None:
        self.store = store
        self.ks = store.keyspace
        self.operations = operations
        self.limits = limits

    async def elect(
        self, election_type: int, partitions: Sequence[tuple[str, int]], call: CallContext
    ) -> OperationStatus:
        if election_type not in _TYPES:
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REQUEST,
                f"Unsupported election type {election_type}: use PREFERRED or UNCLEAN.",
                field="election_type",
            )
        no_duplicates(
            [f"{t}-{p}" for t, p in partitions], "Election request contains duplicate partitions"
        )
        request_id = new_request_id()
        key = self.ks.election(request_id)
        value = metadata_pb2.ElectionIntent(
            election_type=election_type,
            partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in partitions],
            request_id=request_id,
            requested_at_ms=now_ms(),
            trace_context=trace_context(call),
        ).SerializeToString()
        names = tuple(dict.fromkeys(t for t, _ in partitions))
        check_topic_names(names)

        async def attempt() -> int | None:
            compares = [cmp_create_revision(key, "=", 0)]
            if names:
                snapshot = await self.store.snapshot(Want(topic_names=names, deletions=True))
                with validating(
                    "ElectLeaders", topic=",".join(names), partition_count=len(partitions)
                ):
                    for topic_name, partition in partitions:
                        with for_item(
                            f"Partition {cut(topic_name)}-{partition}", len(partitions) > 1
                        ):
                            topic = require_live_topic(snapshot, topic_name)
                            require_partition(topic, partition)
                for name in names:
                    topic = snapshot.topics[name]
                    compares += [
                        cmp_mod_revision(self.ks.topic(name), "=", topic.revision),
                        cmp_create_revision(self.ks.delete_topic(name), "=", 0),
                    ]
            return await self.store.commit([Change(tuple(compares), (op_put(key, value),))])

        revision = await optimistic(attempt, self.limits)
        if call.timeout_ms <= 0:
            accepted = tuple(PartitionOutcome(t, p) for t, p in partitions)
            return OperationStatus(request_id, False, accepted)
        completed, seen = await self.operations.wait(
            request_id, {key: value}, revision, call.timeout_ms
        )
        if not completed:
            pending = Outcome(message=f"In progress; poll request id {request_id}.")
            return OperationStatus(
                request_id, False, tuple(PartitionOutcome(t, p, pending) for t, p in partitions)
            )
        result = await self.operations.result(request_id, seen)
        reported = result_outcomes(result)
        if partitions:
            outcomes = merge_outcomes(partitions, reported, _no_outcome)
        else:
            outcomes = tuple(PartitionOutcome(t, p, o) for (t, p), o in sorted(reported.items()))
        completed_at = result.completed_at_ms if result is not None else 0
        return OperationStatus(request_id, True, outcomes, completed_at)
