"""RequestBatch: Kafka's ControllerBrokerRequestBatch as a pure accumulator.

One batch collects, per broker, the LeaderAndIsr partition states, StopReplica partitions and
UpdateMetadata partitions a state change needs, then ``build()`` hands back one ``BrokerRequests``
value per broker (plain dataclasses; the channel layer turns them into protobuf and sends them in
the order LeaderAndIsr, UpdateMetadata, StopReplica, as Kafka does) and empties the batch.

Rules kept from Kafka:

* ``new_batch()`` refuses to start while requests of the previous batch are still pending: they
  would otherwise be sent with the next batch's decisions or silently lost.
* A LeaderAndIsr for a partition also queues UpdateMetadata for it to every registered broker.
* A partition added twice for one broker keeps the latest state, and stays ``is_new`` (or
  ``delete``) once any add said so.
* Partitions of a topic queued for deletion go out in UpdateMetadata with leader -2
  (LeaderDuringDelete), and in StopReplica with leader epoch -2 (EpochDuringDelete).
* UpdateMetadata partition states are shared: every broker that gets UpdateMetadata in a batch
  gets all of them. A partition with no leader/ISR state yet is left out.
* Brokers that are not registered when the batch is built are dropped, as the channel manager
  drops requests to brokers it has no channel for. (A bounced broker is registered again by
  then: its new incarnation gets the StopReplica of the failure half, as in Kafka.)
* A plan's LeaderAndIsr for a partition whose very state (the same applied ``LeaderAndIsr`` and
  assignment objects) already went to the same brokers earlier in the controller event is left
  out, with its UpdateMetadata: the replica step of a broker failure re-sends every state its
  elections just sent, which brokers would decode and ignore (equal leader epoch). The memory
  lasts until ``end_event``.

The batch reads the context when a request is added, which in the decide-commit-apply cycle is
after the plan was applied, so the requests carry the committed partition epochs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from services.controller.core.context import ControllerContext
from services.controller.core.model import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    NO_EPOCH,
    BrokerInfo,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.core.plan import (
    LeaderAndIsrIntent,
    StateChangePlan,
    StopReplicaIntent,
    UpdateMetadataIntent,
)


class IllegalStateError(Exception):
    """A batch was started while the previous one still had unsent requests."""


# The per-partition request states are named tuples: a failover at 100,000 partitions creates
# hundreds of thousands of them, and a frozen dataclass's __init__ costs several times more.
class LeaderAndIsrPartitionState(NamedTuple):
    tp: TopicPartition
    topic_id: str
    leader_and_isr: LeaderAndIsr
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    is_new: bool


class StopReplicaPartitionState(NamedTuple):
    tp: TopicPartition
    leader_epoch: int
    delete: bool


class UpdateMetadataPartitionState(NamedTuple):
    tp: TopicPartition
    topic_id: str
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True)
class BrokerRequests:
    """Everything one broker gets from one batch.

    An empty ``leader_and_isr`` or ``stop_replica`` means "do not send that request";
    ``update_metadata`` is None when no UpdateMetadata is due (an empty tuple is a valid
    UpdateMetadata carrying only the live brokers).
    """

    broker_id: int
    broker_epoch: int
    controller_id: int
    controller_epoch: int
    leader_and_isr: tuple[LeaderAndIsrPartitionState, ...]
    live_leaders: tuple[BrokerInfo, ...]
    stop_replica: tuple[StopReplicaPartitionState, ...]
    update_metadata: tuple[UpdateMetadataPartitionState, ...] | None
    live_brokers: tuple[BrokerInfo, ...]


def update_metadata_state(
    ctx: ControllerContext, tp: TopicPartition
) -> UpdateMetadataPartitionState | None:
    """What UpdateMetadata says about ``tp`` now; None while it has no leader/ISR state yet
    (nothing a broker could serve). Shared by the batch and the failover's encoded cache."""
    return next(_update_metadata_states(ctx, (tp,)), None)


def _update_metadata_states(
    ctx: ControllerContext, tps: Iterable[TopicPartition]
) -> Iterator[UpdateMetadataPartitionState]:
    """``update_metadata_state`` for many partitions (those with a state), each topic's id and
    deletion looked up once: a broker failure's batches carry every partition it touched."""
    leadership = ctx.leader_and_isr
    replicas_of = ctx.replicas
    online_check = ctx.replica_online_check
    topics: dict[str, tuple[str, bool]] = {}
    for tp in tps:
        lai = leadership(tp)
        if lai is None:
            continue
        topic = tp.topic
        facts = topics.get(topic)
        if facts is None:
            facts = topics[topic] = (ctx.topic_id(topic), ctx.is_topic_queued_for_deletion(topic))
        replicas = replicas_of(tp)
        online = online_check(tp)
        yield UpdateMetadataPartitionState(
            tp,
            facts[0],
            lai.controller_epoch,
            LEADER_DURING_DELETE if facts[1] else lai.leader,
            lai.leader_epoch,
            lai.isr,
            lai.partition_epoch,
            replicas,
            tuple([r for r in replicas if not online(r)]),
        )


class RequestBatch:
    def __init__(self, ctx: ControllerContext) -> None:
        self._ctx = ctx
        self._leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self._stop_replica: dict[int, dict[TopicPartition, StopReplicaPartitionState]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        # This event's LeaderAndIsr states by partition: (state, assignment, recipients).
        self._event_states: dict[
            TopicPartition, tuple[LeaderAndIsr, ReplicaAssignment, frozenset[int]]
        ] = {}

    @property
    def has_pending(self) -> bool:
        return bool(
            self._leader_and_isr
            or self._stop_replica
            or self._update_metadata_brokers
            or self._update_metadata
        )

    def new_batch(self) -> None:
        if self.has_pending:
            raise IllegalStateError(
                "the previous request batch was not sent: "
                f"LeaderAndIsr for brokers {sorted(self._leader_and_isr)}, "
                f"StopReplica for brokers {sorted(self._stop_replica)}, "
                f"UpdateMetadata for brokers {sorted(self._update_metadata_brokers)}"
            )

    def end_event(self) -> None:
        """The controller event is over: forget which states it queued (module docstring)."""
        self._event_states.clear()

    def clear(self) -> None:
        self._leader_and_isr.clear()
        self._stop_replica.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata.clear()

    def add_leader_and_isr(
        self,
        brokers: Iterable[int],
        tp: TopicPartition,
        leader_and_isr: LeaderAndIsr,
        assignment: ReplicaAssignment,
        is_new: bool = False,
    ) -> None:
        self._add_leader_and_isr(brokers, tp, leader_and_isr, assignment, is_new)
        self.add_update_metadata(self._ctx.live_or_shutting_down_broker_ids, (tp,))

    def _add_leader_and_isr(
        self,
        brokers: Iterable[int],
        tp: TopicPartition,
        leader_and_isr: LeaderAndIsr,
        assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        # One immutable state shared by every recipient; a broker whose earlier add said
        # ``is_new`` gets its own copy that keeps saying so.
        state = LeaderAndIsrPartitionState(
            tp,
            self._ctx.topic_id(tp.topic),
            leader_and_isr,
            assignment.replicas,
            assignment.adding,
            assignment.removing,
            is_new,
        )
        by_broker = self._leader_and_isr
        for broker in brokers:
            if broker < 0:
                continue
            per_broker = by_broker.get(broker)
            if per_broker is None:
                per_broker = by_broker[broker] = {}
            previous = per_broker.get(tp)
            if not is_new and previous is not None and previous.is_new:
                per_broker[tp] = state._replace(is_new=True)
            else:
                per_broker[tp] = state

    def add_stop_replica(self, brokers: Iterable[int], tp: TopicPartition, delete: bool) -> None:
        if self._ctx.is_topic_queued_for_deletion(tp.topic):
            leader_epoch = EPOCH_DURING_DELETE
        else:
            lai = self._ctx.leader_and_isr(tp)
            leader_epoch = lai.leader_epoch if lai is not None else NO_EPOCH
        for broker in brokers:
            if broker < 0:
                continue
            per_broker = self._stop_replica.setdefault(broker, {})
            previous = per_broker.get(tp)
            per_broker[tp] = StopReplicaPartitionState(
                tp, leader_epoch, delete or (previous is not None and previous.delete)
            )

    def add_update_metadata(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        self._update_metadata_brokers.update(b for b in brokers if b >= 0)
        states = self._update_metadata
        for state in _update_metadata_states(self._ctx, partitions):
            states[state.tp] = state

    def add_plan(self, plan: StateChangePlan) -> None:
        """Queue an applied plan's requests, reading leader/ISR and assignment from the context.

        Each LeaderAndIsr also queues UpdateMetadata for its partition to every registered
        broker; those are gathered and computed once per partition for the whole plan.
        """
        fan_out: dict[TopicPartition, None] = {}
        leadership = self._ctx.leader_and_isr
        assignment_of = self._ctx.assignment
        event_states = self._event_states
        for intent in plan.requests:
            if isinstance(intent, LeaderAndIsrIntent):
                tp = intent.tp
                lai = leadership(tp)
                if lai is None:
                    raise IllegalStateError(
                        f"LeaderAndIsr queued for {tp}, which has no applied state; "
                        "apply the plan before queueing its requests"
                    )
                assignment = assignment_of(tp) or ReplicaAssignment(())
                if not intent.is_new:
                    queued = event_states.get(tp)
                    if (
                        queued is not None
                        and queued[0] is lai
                        and queued[1] is assignment
                        and queued[2].issuperset(intent.brokers)
                    ):
                        continue  # this very state already went to them in this event
                    event_states[tp] = (lai, assignment, frozenset(intent.brokers))
                self._add_leader_and_isr(intent.brokers, tp, lai, assignment, intent.is_new)
                fan_out[tp] = None
            elif isinstance(intent, StopReplicaIntent):
                self.add_stop_replica(intent.brokers, intent.tp, intent.delete)
            elif isinstance(intent, UpdateMetadataIntent):
                self.add_update_metadata(intent.brokers, intent.partitions)
        if fan_out:
            self.add_update_metadata(self._ctx.live_or_shutting_down_broker_ids, fan_out)

    def build(self) -> dict[int, BrokerRequests]:
        """One value per registered broker that has anything to receive; empties the batch."""
        ctx = self._ctx
        registered = ctx.brokers
        live_brokers = tuple(registered[b] for b in sorted(registered))
        um_states = tuple(self._update_metadata[tp] for tp in sorted(self._update_metadata))
        targets = set(self._leader_and_isr) | set(self._stop_replica)
        targets |= self._update_metadata_brokers
        out: dict[int, BrokerRequests] = {}
        for broker in sorted(targets):
            if broker not in registered:
                continue
            lai_states = tuple(s for _, s in sorted(self._leader_and_isr.get(broker, {}).items()))
            leader_ids = {s.leader_and_isr.leader for s in lai_states}
            live_leaders = tuple(registered[b] for b in sorted(leader_ids) if b in registered)
            out[broker] = BrokerRequests(
                broker_id=broker,
                broker_epoch=registered[broker].epoch,
                controller_id=ctx.controller_id,
                controller_epoch=ctx.controller_epoch,
                leader_and_isr=lai_states,
                live_leaders=live_leaders,
                stop_replica=tuple(
                    s for _, s in sorted(self._stop_replica.get(broker, {}).items())
                ),
                update_metadata=um_states if broker in self._update_metadata_brokers else None,
                live_brokers=live_brokers,
            )
        self.clear()
        return out
