"""DeleteTopics: queue deletion intents for the controller and optionally wait for the outcome.

As Kafka's ``/admin/delete_topics``, the admin service only marks topics; the controller stops
and deletes the replicas and finally removes the topic keys and the intent. Each intent names the
topic id it was meant for, so a topic re-created under the same name is never deleted by a stale
intent. A topic already marked, or any topic while ``delete.topic.enable`` is false, is refused
before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from leasehold import configs, validation
from leasehold.common.v1 import common_pb2
from leasehold.errors import PreconditionError
from leasehold.etcd.client import cmp_create_revision, cmp_mod_revision, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.validation import topic_name_problem
from services.admin.config import Limits
from services.admin.model import OK, CallContext, Outcome
from services.admin.operations import (
    Operations,
    new_request_id,
    now_ms,
    optimistic,
    result_outcomes,
    trace_context,
)
from services.admin.snapshot import Snapshot, TopicView
from services.admin.store import AdminStore, Change, Want
from services.admin.validate import (
    no_duplicates,
    not_empty,
    require_live_topic,
    validating,
)


@dataclass(frozen=True)
class DeletedTopic:
    name: str
    topic_id: str
    outcome: Outcome = OK


@dataclass(frozen=True)
class DeletionStatus:
    request_id: str
    topics: tuple[DeletedTopic, ...]
    completed: bool


class Deletions:
    def __init__(self, store: AdminStore, operations: Operations, limits: Limits) -> None:
        self.store = store
        self.ks = store.keyspace
        self.operations = operations
        self.limits = limits

    async def delete(self, names: Sequence[str], call: CallContext) -> DeletionStatus:
        """One result per topic, in request order: the valid ones are queued together (one
        transaction) and, with a timeout, waited for; each refused one carries its error."""
        not_empty(names, "No topics to delete.", "topic_names")
        no_duplicates(names, "Delete topics request contains duplicate topics", "topic_names")
        request_id = new_request_id()
        trace = trace_context(call)
        readable = tuple(n for n in names if topic_name_problem(n) is None)

        async def attempt() -> tuple[dict[str, str], dict[str, Outcome], dict, int] | None:
            snapshot = await self.store.snapshot(
                Want(topic_names=readable, deletions=True, broker_configs=True)
            )
            cluster = configs.effective(
                configs.ResourceType.BROKER, cluster_entries=snapshot.cluster_configs()
            )
            if not cluster.get_bool("delete.topic.enable"):
                raise PreconditionError(
                    common_pb2.ERROR_CODE_TOPIC_DELETION_DISABLED,
                    "Topic deletion is disabled (delete.topic.enable=false).",
                )
            ids: dict[str, str] = {}
            refused: dict[str, Outcome] = {}
            intents: dict[bytes, bytes] = {}
            changes: list[Change] = []
            with validating("DeleteTopics", topic=",".join(names)) as items:
                for name in names:
                    topic = items.check(partial(_deletable, snapshot, name))
                    if isinstance(topic, Outcome):
                        refused[name] = topic
                        continue
                    ids[name] = topic.topic_id
                    key = self.ks.delete_topic(name)
                    value = metadata_pb2.TopicDeletion(
                        topic_id=topic.topic_id,
                        request_id=request_id,
                        requested_at_ms=now_ms(),
                        trace_context=trace,
                    ).SerializeToString()
                    intents[key] = value
                    changes.append(
                        Change(
                            compares=(
                                cmp_mod_revision(self.ks.topic(name), "=", topic.revision),
                                cmp_create_revision(key, "=", 0),
                            ),
                            ops=(op_put(key, value),),
                        )
                    )
            if not changes:
                return ids, refused, intents, 0
            revision = await self.store.commit(changes)
            return None if revision is None else (ids, refused, intents, revision)

        ids, refused, intents, revision = await optimistic(attempt, self.limits)

        def in_order(outcomes: dict[str, Outcome]) -> tuple[DeletedTopic, ...]:
            return tuple(
                DeletedTopic(n, ids.get(n, ""), refused.get(n) or outcomes.get(n, OK))
                for n in names
            )

        if not ids:  # nothing queued: no operation to poll
            return DeletionStatus("", in_order({}), completed=True)
        if call.timeout_ms <= 0:
            return DeletionStatus(request_id, in_order({}), completed=False)
        completed, seen = await self.operations.wait(request_id, intents, revision, call.timeout_ms)
        if not completed:
            pending = Outcome(
                common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
                f"Deletion is still in progress after {call.timeout_ms} ms; poll request id "
                f"{request_id}.",
            )
            return DeletionStatus(request_id, in_order(dict.fromkeys(ids, pending)), False)
        outcomes = await self._outcomes(request_id, ids, seen)
        return DeletionStatus(request_id, in_order({t.name: t.outcome for t in outcomes}), True)

    async def _outcomes(
        self, request_id: str, ids: dict[str, str], revision: int
    ) -> tuple[DeletedTopic, ...]:
        """Per topic: the controller's reported outcome, else whether the topic is gone."""
        reported = result_outcomes(await self.operations.result(request_id, revision))
        out = []
        for name, topic_id in ids.items():
            mine = [o for (topic, _p), o in reported.items() if topic == name]
            failed = [o for o in mine if not o.ok]
            if failed:
                out.append(DeletedTopic(name, topic_id, failed[0]))
                continue
            if mine:
                out.append(DeletedTopic(name, topic_id))
                continue
            kv = await self.store.get(self.ks.topic(name), revision)
            gone = kv is None or metadata_pb2.TopicAssignment.FromString(kv.value).topic_id != (
                topic_id
            )
            outcome = (
                OK
                if gone
                else Outcome(
                    common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
                    f"The deletion of topic '{name}' ended without the topic being deleted.",
                )
            )
            out.append(DeletedTopic(name, topic_id, outcome))
        return tuple(out)


def _deletable(snapshot: Snapshot, name: str) -> TopicView:
    validation.validate_not_internal(name, "Deletion")
    return require_live_topic(snapshot, name)
