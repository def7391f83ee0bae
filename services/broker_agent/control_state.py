"""The broker's control-plane state and the handling of the controller's requests up to the
point where they touch logs (seed 001 §2-3).

``ControlState`` keeps what every control request is checked against (the broker epoch, the
controller epoch it last accepted, the etcd fence, the metadata cache) and runs, under one lock
(Kafka's ``replicaStateChangeLock``), the fences of LeaderAndIsr, StopReplica and UpdateMetadata,
each partition's decision (``control``), UpdateMetadata into the cache (digest check included),
and the per-partition answers. What a decision does to a replica is left to the hooks:

- ``_apply_leader_and_isr`` gets a request that passed the fences; it calls :func:`classify`
  (the per-partition leader-epoch decision) and changes roles;
- ``_stop_partitions`` gets the StopReplica partitions that passed their checks;
- ``_metadata_deleted`` gets the partitions an UpdateMetadata removed.

The real broker's ``ReplicaManager`` implements them with logs and fetchers; a simulated broker
(``services.broker_agent.simulation``) keeps a leader and an epoch per partition and nothing
else. Both answer a request through this code, so a simulated fleet exercises the controller
with the real broker's answers. Nothing here imports logs, fetchers or client services.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from services.broker_agent.control import (
    Hosted,
    Transition,
    check_request,
    leader_and_isr_decision,
    stop_replica_decision,
)
from services.broker_agent.control_fence import ControlFence
from services.broker_agent.control_priority import ControlPriority
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import (
    Code,
    ControlResult,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    StopReplica,
    StopReplicaPartition,
    TopicPartition,
    UpdateMetadata,
)

log = logging.getLogger("services.broker_agent.state_change")

# A huge control request yields the event loop this often (partitions), so that gRPC calls,
# fetchers and the etcd lease keep-alive keep running while it is applied.
YIELD_EVERY = 256
_NONE = Code.NONE
_LEAD = Transition.BECOME_LEADER

Errors = dict[TopicPartition, Code]


class Replica(Protocol):
    """What the decisions read of a hosted replica."""

    @property
    def leader_epoch(self) -> int: ...
    @property
    def is_leader(self) -> bool: ...


class Deciding(Protocol):
    """What the per-partition LeaderAndIsr decisions read of a broker's control state."""

    broker_id: int
    shutting_down: bool
    fence: ControlFence | None

    @property
    def partitions(self) -> Mapping[TopicPartition, Replica]: ...
    def hosting(self, tp: TopicPartition, partition: Replica | None) -> Hosted: ...


class ControlState(abc.ABC):
    """Fences, per-partition decisions and answers of the control requests (see module doc).

    ``partitions`` maps each hosted partition to its replica (anything with ``leader_epoch`` and
    ``is_leader``); ``hosting`` says whether one is hosted, and online.
    """

    def __init__(self, broker_id: int, metadata: MetadataCache) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.partitions: Mapping[TopicPartition, Replica] = {}
        self.controller_epoch = -1
        self.broker_epoch = -1
        self.shutting_down = False
        self._lock = asyncio.Lock()
        # Control requests go before data-plane work (``control_priority``, KIP-291).
        self.priority = ControlPriority()
        # What etcd shows of the controller epoch (``control_fence``), wired by the app; a test
        # playing the controller without etcd leaves it out.
        self.fence: ControlFence | None = None
        # Told of every applied LeaderAndIsr / StopReplica with its result, under the lock (the
        # group coordinator follows the leadership of __consumer_offsets this way).
        self.on_leader_and_isr: list[Callable[[LeaderAndIsr, ControlResult], None]] = []
        self.on_stop_replica: list[Callable[[StopReplica, ControlResult], None]] = []

    # ------------------------------------------------------------------ hooks

    def hosting(self, tp: TopicPartition, partition: Replica | None) -> Hosted:
        return Hosted.ONLINE if partition is not None else Hosted.NONE

    @abc.abstractmethod
    async def _apply_leader_and_isr(self, request: LeaderAndIsr) -> ControlResult:
        """Apply a LeaderAndIsr that passed the fences (its epoch already taken)."""

    @abc.abstractmethod
    async def _stop_partitions(self, stopping: list[StopReplicaPartition], errors: Errors) -> None:
        """Stop the replicas ``stopping`` (their checks passed), noting failures in ``errors``."""

    # ----------------------------------------------------------------- fences

    def hosted(self, tp: TopicPartition) -> Hosted:
        return self.hosting(tp, self.partitions.get(tp))

    def _check(self, controller_epoch: int, broker_epoch: int) -> Code:
        return check_request(
            request_controller_epoch=controller_epoch,
            known_controller_epoch=self.controller_epoch,
            request_broker_epoch=broker_epoch,
            current_broker_epoch=self.broker_epoch,
        )

    async def _refusal(
        self, what: str, request: LeaderAndIsr | StopReplica | UpdateMetadata
    ) -> ControlResult | None:
        """The answer to a request failing the fences (its own epochs, then etcd's), or None."""
        code = self._check(request.controller_epoch, request.broker_epoch)
        if code != Code.NONE:
            message = self._rejection(code, what, request.controller_epoch, request.broker_epoch)
            return ControlResult(code, message)
        if self.fence is not None:
            refused = await self.fence.check(what, request.controller_epoch, request.controller_id)
            if refused is not None:
                return ControlResult(*refused)
        return None

    def _rejection(self, code: Code, what: str, controller_epoch: int, broker_epoch: int) -> str:
        message = (
            f"{what} rejected: {code.name} (request controller epoch {controller_epoch}, "
            f"known {self.controller_epoch}; request broker epoch {broker_epoch}, "
            f"current {self.broker_epoch})"
        )
        log.warning(message)
        return message

    # --------------------------------------------------------------- requests

    async def become_leader_or_follower(self, request: LeaderAndIsr) -> ControlResult:
        """The fences, then ``_apply_leader_and_isr`` (which decides per partition)."""
        async with self._lock:
            refusal = await self._refusal("LeaderAndIsr", request)
            if refusal is not None:
                return refusal
            self.controller_epoch = request.controller_epoch
            result = await self._apply_leader_and_isr(request)
            for listener in self.on_leader_and_isr:
                listener(request, result)
            return result

    async def stop_replicas(self, request: StopReplica) -> ControlResult:
        async with self._lock:
            refusal = await self._refusal("StopReplica", request)
            if refusal is not None:
                return refusal
            self.controller_epoch = request.controller_epoch
            errors: Errors = {}
            stopping = []
            unconfirmed = (
                await self.fence.unconfirmed_deletions(request.partitions) if self.fence else ()
            )
            for ps in request.partitions:
                if ps.tp in unconfirmed:
                    errors[ps.tp] = Code.NOT_CONTROLLER
                    continue
                existing = self.partitions.get(ps.tp)
                code = stop_replica_decision(
                    hosted=self.hosting(ps.tp, existing),
                    current_leader_epoch=existing.leader_epoch if existing else -1,
                    request_leader_epoch=ps.leader_epoch,
                )
                errors[ps.tp] = code
                if code == Code.NONE:
                    stopping.append(ps)
            await self._stop_partitions(stopping, errors)
            result = ControlResult(Code.NONE, partition_errors=tuple(errors.items()))
            for listener in self.on_stop_replica:
                listener(request, result)
            return result

    async def update_metadata(self, request: UpdateMetadata) -> ControlResult:
        async with self._lock:
            refusal = await self._refusal("UpdateMetadata", request)
            if refusal is not None:
                return refusal
            if request.metadata_digest and request.metadata_digest != self.metadata.digest():
                return ControlResult(
                    Code.METADATA_DIGEST_MISMATCH,
                    f"UpdateMetadata of controller epoch {request.controller_epoch} expects "
                    f"metadata digest {request.metadata_digest.hex()}, the cache has "
                    f"{self.metadata.digest().hex()}: nothing applied, send every partition",
                )
            base = request.live_brokers_base
            if base is not None and base != self.metadata.brokers_digest():
                return ControlResult(
                    Code.METADATA_DIGEST_MISMATCH,
                    f"UpdateMetadata of controller epoch {request.controller_epoch} names the "
                    f"live brokers as a change from the set with digest {base.hex()}, the cache "
                    f"has {self.metadata.brokers_digest().hex()}: nothing applied, send every "
                    "live broker",
                )
            self.controller_epoch = request.controller_epoch
            deleted = self.metadata.update(request)
            self._metadata_deleted(deleted)
            return ControlResult(Code.NONE)

    @abc.abstractmethod
    def _metadata_deleted(self, deleted: list[TopicPartition]) -> None:
        """Partitions an UpdateMetadata removed from the cache (their waiters may care)."""


async def classify(
    state: Deciding,
    states: Iterable[LeaderAndIsrPartition],
    errors: Errors,
) -> tuple[list[LeaderAndIsrPartition], list[LeaderAndIsrPartition]]:
    """Split a LeaderAndIsr into partitions to lead and to follow; the rest get errors (the
    leader-epoch check, and a shutting-down broker refusing new leadership)."""
    to_lead: list[LeaderAndIsrPartition] = []
    to_follow: list[LeaderAndIsrPartition] = []
    partitions, hosting, broker_id = state.partitions, state.hosting, state.broker_id
    for count, s in enumerate(states, 1):
        if count % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        tp = s.tp
        existing = partitions.get(tp)
        decision = leader_and_isr_decision(
            s,
            hosted=hosting(tp, existing),
            current_leader_epoch=existing.leader_epoch if existing else -1,
            local_broker_id=broker_id,
        )
        if decision.error != _NONE:
            log.info("%s: LeaderAndIsr ignored: %s", tp, decision.error.name)
            errors[tp] = decision.error
        elif decision.transition is _LEAD:
            if state.shutting_down and not (existing and existing.is_leader):
                errors[tp] = Code.BROKER_SHUTTING_DOWN
            else:
                to_lead.append(s)
        else:
            to_follow.append(s)
    return to_lead, to_follow


async def confirmed(
    state: Deciding,
    to_lead: list[LeaderAndIsrPartition],
    to_follow: list[LeaderAndIsrPartition],
    errors: Errors,
) -> tuple[list[LeaderAndIsrPartition], list[LeaderAndIsrPartition]]:
    """Without TLS, a role change applies only if etcd shows it (``control_fence``)."""
    if state.fence is None or not (to_lead or to_follow):
        return to_lead, to_follow
    unconfirmed = await state.fence.unconfirmed_leaders([*to_lead, *to_follow])
    if not unconfirmed:
        return to_lead, to_follow
    errors.update(unconfirmed)
    return (
        [s for s in to_lead if s.tp not in unconfirmed],
        [s for s in to_follow if s.tp not in unconfirmed],
    )
