"""The controller's events: everything the single event loop processes, one at a time.

Two families, as Kafka's ControllerEventManager has:

* Metadata events, made from etcd watch batches (never handled on the watch task):
  ``BrokerChange``, ``TopicChange`` (which includes partition additions, Kafka's
  PartitionModifications), ``PartitionStateChange``, ``ConfigChange``, ``TopicDeletion``,
  ``ReassignmentRequest``, ``ElectionRequest``, ``ControllerEpochChange``, then ``Synced`` with
  the batch's revision. All changes of one watch batch of the same kind travel in one event, so
  one admin call that wrote many keys becomes one decision and one batched commit. The watch
  task queues each batch undecoded, as a ``WatchDelivery``; the event loop decodes it into
  those events when it reaches it (see ``event_loop``), so decoding never competes with the
  event being handled.
* Control events: ``Elected`` / ``Resign`` / ``Suspend`` / ``Resume`` / ``EtcdReachability``
  from the election task, ``GraceExpired`` from the outage grace's timer, ``AutoRebalance`` and
  ``Heartbeat`` from their timers, ``AlterPartition`` / ``ControlledShutdown`` from the gRPC
  servicer (they carry a future the servicer awaits), ``StopReplicaResult`` from a broker
  channel, ``ResendLeaderAndIsr`` from brokers' late answers to the failover's UpdateMetadata,
  ``RetryTopicDeletion`` from the deletion manager's back-off timer, and
  ``RefreshStandbyCache`` from a standby's own timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from leasehold.controller.v1 import controller_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.controller.codec import StoredPartitionState
from services.controller.core import BrokerInfo, TopicPartition


class ControllerEvent:
    """Base class; ``name`` is what metrics and spans call the event."""

    @property
    def name(self) -> str:
        return type(self).__name__


# ---- metadata events (from the etcd watch) ------------------------------------------------------


@dataclass(frozen=True)
class BrokerChange(ControllerEvent):
    """Registrations created or changed (a new create revision is a bounce) and removed.

    ``resumed`` names registered brokers that lost their registration in an etcd outage and
    registered again from the same process: not a bounce (``role.OutageGrace``)."""

    registered: tuple[BrokerInfo, ...] = ()
    deregistered: tuple[int, ...] = ()
    resumed: tuple[int, ...] = ()
    # Wall-clock ms when the watch delivered the change (0: from a load, not a live watch).
    received_ms: int = field(default=0, compare=False)


@dataclass(frozen=True)
class TopicUpdate:
    topic: str
    assignment: metadata_pb2.TopicAssignment | None  # None: the topic key was deleted
    mod_revision: int


@dataclass(frozen=True)
class TopicChange(ControllerEvent):
    updates: tuple[TopicUpdate, ...]


class PartitionStateUpdate(NamedTuple):
    """A named tuple: a watch batch carries one per changed state (thousands at a time)."""

    tp: TopicPartition
    state: StoredPartitionState | None  # None: the state key was deleted
    mod_revision: int


@dataclass(frozen=True)
class PartitionStateChange(ControllerEvent):
    updates: tuple[PartitionStateUpdate, ...]


@dataclass(frozen=True)
class ConfigChange(ControllerEvent):
    """Topic config keys changed (entries None when deleted) and/or the cluster-wide default."""

    topics: tuple[tuple[str, dict[str, str] | None], ...] = ()
    cluster: dict[str, str] | None = None
    cluster_changed: bool = False


@dataclass(frozen=True)
class DeletionIntentUpdate:
    topic: str
    intent: metadata_pb2.TopicDeletion | None
    mod_revision: int


@dataclass(frozen=True)
class TopicDeletion(ControllerEvent):
    updates: tuple[DeletionIntentUpdate, ...]


@dataclass(frozen=True)
class ReassignmentIntentUpdate:
    tp: TopicPartition
    intent: metadata_pb2.ReassignmentIntent | None
    mod_revision: int


@dataclass(frozen=True)
class ReassignmentRequest(ControllerEvent):
    updates: tuple[ReassignmentIntentUpdate, ...]


@dataclass(frozen=True)
class ElectionIntentUpdate:
    request_id: str
    intent: metadata_pb2.ElectionIntent | None
    mod_revision: int


@dataclass(frozen=True)
class ElectionRequest(ControllerEvent):
    updates: tuple[ElectionIntentUpdate, ...]


@dataclass(frozen=True)
class ControllerEpochChange(ControllerEvent):
    epoch: int
    controller_id: int
    mod_revision: int


@dataclass(frozen=True)
class Synced(ControllerEvent):
    """Every change up to ``revision`` has been queued before this event."""

    revision: int


@dataclass(frozen=True)
class WatchDelivery(ControllerEvent):
    """A watch batch (or a reload's snapshot) as received, not yet decoded.

    ``expand`` (called once, on the event loop, in queue order) applies it to the watcher's
    mirror and returns the metadata events above, ending with ``Synced(revision)``.
    ``partition_states_only``: every change is a partition-state key (the echo of a controller
    commit, typically), which the event loop may hold back for a bounded time.
    """

    revision: int
    changes: int
    partition_states_only: bool
    expand: Callable[[], list[ControllerEvent]] = field(compare=False, repr=False)


# ---- control events ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Elected(ControllerEvent):
    """This candidate now holds the election key; the handler bumps the epoch (contract 3)."""

    election_key: bytes
    election_revision: int
    generation: int
    # Wall-clock ms when the campaign was won, and the TTL (ms) of the predecessor whose key
    # had to vanish first (0: nobody held the office, so no fault preceded the win).
    won_ms: int = field(default=0, compare=False)
    predecessor_ttl_ms: int = field(default=0, compare=False)
    # The ``controller.elected`` span's context: the failover's trace continues from it.
    trace_context: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Resign(ControllerEvent):
    reason: str
    done: asyncio.Future | None = field(default=None, compare=False)
    # The process is stopping: no standby context is rebuilt (at 100,000 partitions that took
    # seconds, all before the election key, and so the standby's turn, was released).
    stopping: bool = False


@dataclass(frozen=True)
class Suspend(ControllerEvent):
    """Our lease is not confirmed within the TTL: stop acting, keep the term (``role``)."""

    generation: int


@dataclass(frozen=True)
class Resume(ControllerEvent):
    """etcd confirmed the same lease and our election key still leads: carry on if the
    controller epoch is still ours (``role``)."""

    generation: int


@dataclass(frozen=True)
class EtcdReachability(ControllerEvent):
    """Our session could not reach etcd (``reachable`` False), or etcd answered again."""

    reachable: bool


@dataclass(frozen=True)
class GraceExpired(ControllerEvent):
    """The brokers' grace after an etcd outage may be over (``role.OutageGrace``)."""


@dataclass(frozen=True)
class RefreshStandbyCache(ControllerEvent):
    """A standby's deferred re-encoding of its UpdateMetadata cache is due (``controller``)."""


@dataclass(frozen=True)
class AutoRebalance(ControllerEvent):
    generation: int


@dataclass(frozen=True)
class Heartbeat(ControllerEvent):
    """Time for the active controller's ``heartbeat`` record (``flows.failover``)."""

    generation: int


@dataclass(frozen=True)
class ResendLeaderAndIsr(ControllerEvent):
    """Brokers answered the failover's UpdateMetadata after its replica startup, with metadata
    other than the old controller's: their LeaderAndIsr is due (``flows.failover``)."""

    generation: int


@dataclass(frozen=True)
class AlterPartition(ControllerEvent):
    request: controller_pb2.AlterPartitionRequest
    future: asyncio.Future = field(compare=False)


@dataclass(frozen=True)
class ControlledShutdown(ControllerEvent):
    request: controller_pb2.ControlledShutdownRequest
    future: asyncio.Future = field(compare=False)


@dataclass(frozen=True)
class StopReplicaResult(ControllerEvent):
    """A StopReplica(delete) answer from ``broker_id``: per partition error codes (0 = none)."""

    broker_id: int
    controller_epoch: int
    errors: tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True)
class RetryTopicDeletion(ControllerEvent):
    topics: tuple[str, ...]
    generation: int
