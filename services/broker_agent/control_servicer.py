"""The BrokerControlService servicer: the controller's LeaderAndIsr, StopReplica and
UpdateMetadata, translated to the domain (``control_convert``) and handed to a
``control_state.ControlState`` — the real broker's ``ReplicaManager`` or a simulated broker's
replicas, through the same code. The controller's requests are checked whole: any malformed
partition fails them with INVALID_ARGUMENT and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from leasehold import metadata_digest
from leasehold.broker.v1 import control_pb2, control_pb2_grpc
from leasehold.errors import InvalidRequestError
from leasehold.heap import BULK_PARTITIONS, HeapFreezer
from leasehold.validation import topic_name_problem
from services.broker_agent import control_convert
from services.broker_agent.control_state import ControlState
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    StopReplica,
    UpdateMetadata,
)

T = TypeVar("T")
Request = TypeVar("Request", LeaderAndIsr, StopReplica, UpdateMetadata)
ControlRequestPb = (
    control_pb2.LeaderAndIsrRequest
    | control_pb2.StopReplicaRequest
    | control_pb2.UpdateMetadataRequest
)
# Control requests naming more partitions than this are decoded and validated on a worker
# thread: 100,000 partitions take most of a CPU-second, which must not stall the event loop
# (gRPC, fetchers, the etcd lease keep-alive). The thread still shares the GIL, handing it
# back to the loop every few milliseconds, which makes the decode itself 2-3 times slower
# while fetchers run: 10,000 partitions (about 50 ms inline) are decoded on the loop.
DECODE_OFF_LOOP_ABOVE = 20_000


async def _decode(size: int, decode: Callable[[], T]) -> T:
    if size > DECODE_OFF_LOOP_ABOVE:
        return await asyncio.to_thread(decode)
    return decode()


@contextlib.contextmanager
def _collector_paused(heap: HeapFreezer, partitions: int) -> Iterator[None]:
    """No automatic cyclic collection while a bulk control request is decoded and applied.

    A 10,000-partition LeaderAndIsr allocates a few hundred thousand containers, most of which
    live on (partition states, fetch states): each time the allocations cross the collector's
    thresholds it walks them again (tens of milliseconds, ``bench.broker_micro``), on the
    loop the controller's next request waits for. The request's garbage is freed by reference
    counting anyway, and ``HeapFreezer.settle`` right after collects what is young once and
    freezes the rest. Only when the freezer runs (the agent's main enables it), for requests it
    settles after, and never re-enabling a collector someone else disabled: a request that
    overlaps another's pause leaves it to that one.
    """
    if not heap.enabled or partitions < BULK_PARTITIONS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _result_fields(result: ControlResult) -> dict[str, Any]:
    """The response fields of a LeaderAndIsr / StopReplica result (encoded as ``_decode``)."""
    return await _decode(
        len(result.partition_errors), lambda: control_convert.control_result_fields(result)
    )


def _check_digest_only(request: UpdateMetadata) -> None:
    """A digest-only UpdateMetadata stands for the states the broker holds: it cannot also
    carry changes (their effect on the digest would be the broker's guess). Live brokers named
    as a change need the digest of the set they change."""
    base = request.live_brokers_base
    if base is not None and len(base) != metadata_digest.DIGEST_SIZE:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            f"live_brokers_base must be {metadata_digest.DIGEST_SIZE} bytes, got {len(base)}",
        )
    if base is None and request.removed_brokers:
        raise InvalidRequestError(
            Code.INVALID_REQUEST, "removed_brokers needs live_brokers_base (the set it changes)"
        )
    if not request.metadata_digest:
        return
    if len(request.metadata_digest) != metadata_digest.DIGEST_SIZE:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            f"metadata_digest must be {metadata_digest.DIGEST_SIZE} bytes, "
            f"got {len(request.metadata_digest)}",
        )
    if request.partitions or request.deleted_topics:
        raise InvalidRequestError(
            Code.INVALID_REQUEST,
            "an UpdateMetadata with metadata_digest must not carry partition states or "
            "deleted topics",
        )


def _check_partitions(pairs: Iterable[tuple[str, int]]) -> None:
    seen: set[tuple[str, int]] = set()
    names: set[str] = set()  # each topic name is checked once, not once per partition
    for topic, partition in pairs:
        if topic not in names:
            problem = topic_name_problem(topic)
            if problem is not None:
                # Names reach file paths (<data-dir>/<topic>-<p>): refuse anything illegal.
                raise InvalidRequestError(Code.INVALID_REQUEST, f"invalid topic: {problem}")
            names.add(topic)
        if partition < 0:
            raise InvalidRequestError(
                Code.INVALID_REQUEST, f"partition must be >= 0, got {topic}-{partition}"
            )
        if (topic, partition) in seen:
            raise InvalidRequestError(
                Code.INVALID_REQUEST, f"partition {topic}-{partition} is listed twice"
            )
        seen.add((topic, partition))


def decode_update_metadata(request: control_pb2.UpdateMetadataRequest) -> UpdateMetadata:
    """An UpdateMetadata in the domain, checked whole (INVALID_ARGUMENT for any malformed
    part). What it yields depends on nothing but the request."""
    domain = control_convert.update_metadata_from_pb(request)
    _check_partitions((s.topic, s.partition) for s in domain.partitions)
    _check_digest_only(domain)
    return domain


class BrokerControlServicer(control_pb2_grpc.BrokerControlServiceServicer):
    """The controller's requests. After one touching thousands of partitions the surviving
    objects are frozen (``leasehold.heap``), so the next big request does not pay a full
    collection of the whole heap.

    ``decode_update_metadata`` turns an UpdateMetadata into the domain: by default
    :func:`decode_update_metadata`; simulated brokers sharing a process give one that decodes
    each request body once for all of them (``simulation.sharing``)."""

    def __init__(
        self,
        replicas: ControlState,
        heap: HeapFreezer | None = None,
        *,
        decode_update_metadata: Callable[
            [control_pb2.UpdateMetadataRequest], UpdateMetadata
        ] = decode_update_metadata,
    ) -> None:
        self._replicas = replicas
        self._heap = heap or HeapFreezer(enabled=False)
        self._decode_update_metadata = decode_update_metadata

    async def LeaderAndIsr(
        self, request: control_pb2.LeaderAndIsrRequest, context
    ) -> control_pb2.LeaderAndIsrResponse:
        def decode() -> LeaderAndIsr:
            domain = control_convert.leader_and_isr_from_pb(request)
            _check_partitions((s.topic, s.partition) for s in domain.partitions)
            return domain

        fields = await self._handle(
            request, decode, self._replicas.become_leader_or_follower, _result_fields
        )
        return control_pb2.LeaderAndIsrResponse(**fields)

    async def StopReplica(
        self, request: control_pb2.StopReplicaRequest, context
    ) -> control_pb2.StopReplicaResponse:
        def decode() -> StopReplica:
            domain = control_convert.stop_replica_from_pb(request)
            _check_partitions((s.topic, s.partition) for s in domain.partitions)
            return domain

        fields = await self._handle(request, decode, self._replicas.stop_replicas, _result_fields)
        return control_pb2.StopReplicaResponse(**fields)

    async def UpdateMetadata(
        self, request: control_pb2.UpdateMetadataRequest, context
    ) -> control_pb2.UpdateMetadataResponse:
        def decode() -> UpdateMetadata:
            return self._decode_update_metadata(request)

        async def answer(result: ControlResult) -> control_pb2.UpdateMetadataResponse:
            return control_pb2.UpdateMetadataResponse(
                error_code=int(result.error), error_message=result.message
            )

        return await self._handle(request, decode, self._replicas.update_metadata, answer)

    async def _handle(
        self,
        request: ControlRequestPb,
        decode: Callable[[], Request],
        apply: Callable[[Request], Awaitable[ControlResult]],
        answer: Callable[[ControlResult], Awaitable[T]],
    ) -> T:
        """One control request: ahead of the data plane (``control_priority``), decoded
        (off the loop when large) and applied without the cyclic collector, the survivors then
        frozen, and its answer built, all before the data plane may run again (at once if the
        controller has nothing else queued for this broker: ``nothing_queued``)."""
        size = len(request.partition_states)
        with self._replicas.priority.control(linger=not request.nothing_queued):
            with _collector_paused(self._heap, size):
                domain = await _decode(size, decode)
                result = await apply(domain)
            self._heap.settle_after(len(domain.partitions))
            return await answer(result)
