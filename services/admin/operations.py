"""Durable intents and their outcomes (contract 6): ids, trace context, waiting and polling.

Deletions, reassignments and elections are carried out by the controller. The admin service
writes an intent key carrying a request id and the caller's W3C trace context, and then either
returns the id at once or waits: the operation is complete when no intent key of that request is
left (the controller deletes an intent in the same transaction in which it writes
``/admin/results/<request-id>``; an intent overwritten by a newer request no longer belongs to
this one). ``GetOperation`` answers the same question later from a fresh read.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from leasehold import telemetry
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, NotFoundError, UnavailableError
from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.admin.config import Limits
from services.admin.model import (
    CallContext,
    OperationStatus,
    Outcome,
    PartitionOutcome,
)
from services.admin.store import AdminStore

T = TypeVar("T")

_TRACE_HEADERS = ("traceparent", "tracestate")
_REQUEST_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def new_request_id() -> str:
    return uuid.uuid4().hex


def now_ms() -> int:
    return int(time.time() * 1000)


def trace_context(call: CallContext) -> metadata_pb2.TraceContext:
    """The trace context to store with an intent.

    With tracing on, the current span (the admin server span, a child of the caller's) is
    injected; with it off, the caller's own ``traceparent``/``tracestate`` headers are kept, so
    the controller can still join the caller's trace.
    """
    carrier = telemetry.inject()
    if not carrier:
        carrier = {k: v for k, v in call.trace_carrier.items() if k in _TRACE_HEADERS}
    return metadata_pb2.TraceContext(carrier=carrier)


async def optimistic(attempt: Callable[[], Awaitable[T | None]], limits: Limits) -> T:
    """Run read-validate-commit ``attempt`` until it commits (it returns None on a conflict)."""
    for _ in range(limits.max_attempts):
        result = await attempt()
        if result is not None:
            return result
    raise UnavailableError(
        common_pb2.ERROR_CODE_REQUEST_TIMED_OUT,
        "The cluster kept changing while the request was being applied; retry it.",
    )


def wait_seconds(timeout_ms: int, limits: Limits) -> float:
    """How long a call may wait: ``timeout_ms`` clamped to ``[0, limits.max_wait_ms]``."""
    return max(0, min(timeout_ms, limits.max_wait_ms)) / 1000.0


def intent_request_id(ks: Keyspace, kv: KV) -> str:
    """The request id an intent key carries (each intent kind stores it in its own message)."""
    if kv.key.startswith(ks.delete_topics_prefix):
        return metadata_pb2.TopicDeletion.FromString(kv.value).request_id
    if kv.key.startswith(ks.reassignments_prefix):
        return metadata_pb2.ReassignmentIntent.FromString(kv.value).request_id
    if kv.key.startswith(ks.elections_prefix):
        return metadata_pb2.ElectionIntent.FromString(kv.value).request_id
    return ""


def written(key: bytes, value: bytes, revision: int) -> KV:
    """The KV a successful write of ``value`` at ``revision`` produced (for a wait's start)."""
    return KV(key, value, revision, revision, 1, 0)


def result_outcomes(result: metadata_pb2.AdminResult | None) -> dict[tuple[str, int], Outcome]:
    """The controller's per-partition outcomes, keyed by (topic, partition)."""
    if result is None:
        return {}
    return {(r.topic, r.partition): Outcome(r.error_code, r.error_message) for r in result.results}


def merge_outcomes(
    requested: Iterable[tuple[str, int]],
    reported: Mapping[tuple[str, int], Outcome],
    infer: Callable[[str, int], Outcome],
) -> tuple[PartitionOutcome, ...]:
    """One outcome per requested item: the controller's where it reported one, else inferred."""
    out = []
    for topic, partition in requested:
        outcome = reported.get((topic, partition))
        out.append(PartitionOutcome(topic, partition, outcome or infer(topic, partition)))
    return tuple(out)


class Operations:
    """Waits for intents to be carried out and answers GetOperation."""

    def __init__(self, store: AdminStore, limits: Limits) -> None:
        self.store = store
        self.ks = store.keyspace
        self.limits = limits

    async def wait(
        self, request_id: str, intents: Mapping[bytes, bytes], revision: int, timeout_ms: int
    ) -> tuple[bool, int]:
        """Wait until none of ``intents`` (written at ``revision``) belongs to the request.

        Returns whether that happened within the (clamped) timeout, and the revision seen.
        """
        view: dict[bytes, KV | None] = {k: written(k, v, revision) for k, v in intents.items()}

        def done(current: Mapping[bytes, KV | None]) -> bool:
            return all(
                kv is None or intent_request_id(self.ks, kv) != request_id
                for kv in current.values()
            )

        deadline = time.monotonic() + wait_seconds(timeout_ms, self.limits)
        return await self.store.follow(
            self.ks.root + b"/admin/",
            view,
            revision + 1,
            done,
            deadline,
            relevant=lambda key: key in view,
        )

    async def result(self, request_id: str, revision: int = 0) -> metadata_pb2.AdminResult | None:
        kv = await self.store.get(self.ks.result(request_id), revision)
        return metadata_pb2.AdminResult.FromString(kv.value) if kv is not None else None

    async def pending_intents(self, request_id: str, revision: int) -> list[KV]:
        """Every intent key still carrying ``request_id`` at ``revision``."""
        found: list[KV] = []
        for prefix in (self.ks.delete_topics_prefix, self.ks.reassignments_prefix):
            kvs, _ = await self.store.range(prefix, revision)
            found += [kv for kv in kvs if intent_request_id(self.ks, kv) == request_id]
        election = await self.store.get(self.ks.election(request_id), revision)
        if election is not None and intent_request_id(self.ks, election) == request_id:
            found.append(election)
        return found

    async def get_operation(self, request_id: str) -> OperationStatus:
        if not _REQUEST_ID.fullmatch(request_id):
            raise InvalidRequestError(
                common_pb2.ERROR_CODE_INVALID_REQUEST,
                "request_id must be 1 to 128 characters of letters, digits, '.', '_' or '-'",
                field="request_id",
            )
        kv, revision = await self.store.get_with_revision(self.ks.result(request_id))
        pending = await self.pending_intents(request_id, revision)
        if kv is None and not pending:
            raise NotFoundError(
                common_pb2.ERROR_CODE_OPERATION_NOT_FOUND,
                f"No operation with request id {request_id} is pending or has a result.",
            )
        result = metadata_pb2.AdminResult.FromString(kv.value) if kv is not None else None
        results = tuple(
            PartitionOutcome(topic, partition, outcome)
            for (topic, partition), outcome in result_outcomes(result).items()
        )
        return OperationStatus(
            request_id=request_id,
            completed=result is not None and not pending,
            results=results,
            completed_at_ms=result.completed_at_ms if result is not None else 0,
        )
