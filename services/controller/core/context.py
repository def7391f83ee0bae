"""ControllerContext: the controller's in-memory view of the cluster (Kafka's ControllerContext).

Nothing here is authoritative: etcd is. The context is rebuilt from etcd on failover and kept warm
from watches, and it changes only through the ``apply_*`` methods, which the event loop calls
after the matching etcd commit succeeded (decide, commit, apply). Decisions read it through the
query methods and never mutate it.

The context also notes which partitions' broker-visible state (leader/ISR, replicas, topic id,
deletion, replica liveness) changed since a consumer last asked (``take_metadata_changes``), so
the UpdateMetadata encoding cache re-encodes only those (see ``metadata_cache``). A broker's
liveness moving changes the offline replicas of the partitions it holds a replica of, and no
others; those are found when the changes are read, from the partitions kept by broker below
(re-encoding every partition instead took ~8 s at a million).

Queries that a failover runs over every partition avoid per-call rebuilding: the live broker sets
and the sorted partition list are kept up to date by the ``apply_*`` methods. So are the two
cluster-wide counts the metrics read every second (offline partitions, partitions not led by
their preferred replica), as Kafka keeps them: the ``apply_*`` methods note which partitions
changed, and a count re-examines only those (a walk of a million partitions took the event
loop's thread for most of a second). Partitions by leader, by the brokers assigned a replica of
them, and the New/Offline partitions are kept as indexes for the same reason: a broker failure,
a controlled shutdown and a liveness change each asked for one by a walk of every assignment.

Broker liveness follows modern Kafka: a broker is *registered* while its lease-backed key exists;
``live_broker_ids`` excludes brokers in controlled shutdown, ``live_or_shutting_down_broker_ids``
includes them. A replica is *online* when its broker is live and the replica is not on a failed
log directory; only online replicas may lead or join an ISR (KIP-841).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from services.controller.core.model import (
    BrokerInfo,
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.core.plan import StateChangePlan
from services.controller.core.states import PartitionState, ReplicaState

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
_NEW_OR_OFFLINE = frozenset({PartitionState.NEW, PartitionState.OFFLINE})


class ControllerContext:
    """The cluster as the controller last saw it; see the module docstring for the rules."""

    def __init__(
        self, controller_id: int = -1, controller_epoch: int = 0, *, unclean_default: bool = False
    ) -> None:
        self._controller_id = controller_id
        self._controller_epoch = controller_epoch
        self._unclean_default = unclean_default
        self._brokers: dict[int, BrokerInfo] = {}
        self._shutting_down: set[int] = set()
        self._offline_dirs: dict[int, frozenset[TopicPartition]] = {}
        self._topic_ids: dict[str, str] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self._leadership: dict[TopicPartition, LeaderAndIsr] = {}
        self._partition_states: dict[TopicPartition, PartitionState] = {}
        self._replica_states: dict[PartitionReplica, ReplicaState] = {}
        self._to_delete: set[str] = set()
        self._ineligible: set[str] = set()
        # Derived, refreshed by the apply_* methods that change what they derive from.
        self._live: frozenset[int] = frozenset()
        self._live_or_shutting_down: frozenset[int] = frozenset()
        self._shutting_down_frozen: frozenset[int] = frozenset()
        self._sorted_partitions: tuple[TopicPartition, ...] | None = ()
        self._metadata_all_changed = True
        self._metadata_changed: set[TopicPartition] = set()
        self._liveness_moved: set[int] = set()  # their partitions are changed too
        # The kept counts (``offline_partition_count``, ``preferred_replica_imbalance_count``):
        # partitions changed since they were last brought up to date, the partitions counted,
        # and how many of those each topic has (topics queued for deletion are left out when
        # read).
        self._counts_stale: set[TopicPartition] = set()
        self._offline: set[TopicPartition] = set()
        self._offline_by_topic: dict[str, int] = {}
        self._imbalanced: set[TopicPartition] = set()
        self._imbalanced_by_topic: dict[str, int] = {}
        # Kept indexes for what a broker failure or shutdown asks: partitions by their leader
        # (NO_LEADER included), and those New or Offline. Each is a walk of every partition
        # otherwise: about a second of a broker failure's CPU at 1,000,000 partitions.
        self._led_by: dict[int, set[TopicPartition]] = {}
        self._new_or_offline: set[TopicPartition] = set()
        # Partitions by the brokers assigned a replica of them, for the same walks (a shutdown,
        # a failure, a broker's liveness moving): lists, not sets, as a million partitions at
        # RF 3 are three million entries (~25 MiB as lists, ~130 MB as sets). A partition
        # leaving a broker's replicas is noted in ``_unhosted`` and dropped from the list when
        # it is next read; one coming back while still noted is only un-noted (it is in the
        # list). So a list holds each partition once, and exactly the broker's once compacted.
        self._hosted: dict[int, list[TopicPartition]] = {}
        self._unhosted: dict[int, set[TopicPartition]] = {}

    # ---- controller ----------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        return self._controller_id

    @property
    def controller_epoch(self) -> int:
        return self._controller_epoch

    # ---- brokers ---------------------------------------------------------------------------
    @property
    def brokers(self) -> Mapping[int, BrokerInfo]:
        """Every registered broker, shutting down or not."""
        return MappingProxyType(self._brokers)

    def broker_epoch(self, broker_id: int) -> int:
        info = self._brokers.get(broker_id)
        return info.epoch if info is not None else -1

    @property
    def live_or_shutting_down_broker_ids(self) -> frozenset[int]:
        return self._live_or_shutting_down

    @property
    def shutting_down_broker_ids(self) -> frozenset[int]:
        return self._shutting_down_frozen

    @property
    def live_broker_ids(self) -> frozenset[int]:
        """Registered brokers that are not shutting down: the ones that may lead."""
        return self._live

    def is_replica_online(
        self, broker_id: int, tp: TopicPartition, *, include_shutting_down: bool = False
    ) -> bool:
        live = self._live_or_shutting_down if include_shutting_down else self._live
        if broker_id not in live:
            return False
        offline = self._offline_dirs.get(broker_id)
        return offline is None or tp not in offline

    def replica_online_check(
        self, tp: TopicPartition, *, include_shutting_down: bool = False
    ) -> Callable[[int], bool]:
        """``is_replica_online(r, tp, ...)`` as a predicate on ``r`` alone, for checking every
        replica of one partition; with no failed log directory anywhere it is the live set's own
        ``__contains__``, which a batch over every partition calls several times each."""
        live = self._live_or_shutting_down if include_shutting_down else self._live
        dirs = self._offline_dirs
        if not dirs:
            return live.__contains__
        return lambda r: r in live and (r not in dirs or tp not in dirs[r])

    def is_eligible_isr_member(self, broker_id: int, tp: TopicPartition) -> bool:
        """KIP-841: only an online replica on a broker not shutting down may join an ISR."""
        return self.is_replica_online(broker_id, tp)

    # ---- topics and partitions -------------------------------------------------------------
    @property
    def all_topics(self) -> frozenset[str]:
        """A copy of every topic's name: O(topics). To ask after one topic, ``has_topic``."""
        return frozenset(self._topic_ids)

    def has_topic(self, topic: str) -> bool:
        return topic in self._topic_ids

    @property
    def topic_count(self) -> int:
        return len(self._topic_ids)

    def topic_id(self, topic: str) -> str:
        return self._topic_ids.get(topic, "")

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return MappingProxyType(self._topic_configs.get(topic, {}))

    def is_unclean_leader_election_enabled(self, topic: str) -> bool:
        configs = self._topic_configs.get(topic)
        value = configs.get(UNCLEAN_LEADER_ELECTION_ENABLE) if configs else None
        return self._unclean_default if value is None else value.strip().lower() == "true"

    def all_partitions(self) -> tuple[TopicPartition, ...]:
        """Every partition with an assignment, sorted (kept until partitions come or go)."""
        if self._sorted_partitions is None:
            self._sorted_partitions = tuple(sorted(self._assignments))
        return self._sorted_partitions

    def partition_count(self) -> int:
        return len(self._assignments)

    def partitions_for_topic(self, topic: str) -> tuple[TopicPartition, ...]:
        return tuple(sorted(tp for tp in self._assignments if tp.topic == topic))

    def assignment(self, tp: TopicPartition) -> ReplicaAssignment | None:
        return self._assignments.get(tp)

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        """The full assigned replica list, preferred first; empty if unknown."""
        a = self._assignments.get(tp)
        return a.replicas if a is not None else ()

    def leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        return self._leadership.get(tp)

    def partitions_on_broker(self, broker_id: int) -> tuple[TopicPartition, ...]:
        """The partitions ``broker_id`` is assigned a replica of, sorted."""
        return tuple(self._hosted_by(broker_id))

    def _hosted_by(self, broker_id: int) -> list[TopicPartition]:
        """``broker_id``'s hosted list, compacted and sorted in place (kept so: sorting an
        already sorted list is a pass over it)."""
        hosted = self._hosted.get(broker_id)
        if hosted is None:
            return []
        gone = self._unhosted.pop(broker_id, None)
        if gone:
            hosted[:] = [tp for tp in hosted if tp not in gone]
        hosted.sort()
        if not hosted:
            del self._hosted[broker_id]
        return hosted

    def partitions_led_by(self, broker_id: int) -> tuple[TopicPartition, ...]:
        return tuple(sorted(self._led_by.get(broker_id, ())))

    def partitions_with_offline_leader(self) -> tuple[TopicPartition, ...]:
        """Assigned partitions with leader/ISR state whose leader is not online (not live,
        shutting down, NO_LEADER, or its replica on a failed log directory), sorted; topics
        queued for deletion included."""
        out: list[TopicPartition] = []
        live, dirs, assigned = self._live, self._offline_dirs, self._assignments
        for leader, tps in self._led_by.items():
            if leader not in live:
                out.extend(tp for tp in tps if tp in assigned)
            elif leader in dirs:
                failed = dirs[leader]
                out.extend(tp for tp in tps if tp in failed and tp in assigned)
        return tuple(sorted(out))

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> tuple[PartitionReplica, ...]:
        """Every replica assigned to one of ``broker_ids``, sorted by partition then broker."""
        ids = sorted(frozenset(broker_ids))
        if len(ids) == 1:
            return tuple(PartitionReplica(tp, ids[0]) for tp in self._hosted_by(ids[0]))
        return tuple(sorted(PartitionReplica(tp, b) for b in ids for tp in self._hosted_by(b)))

    def replicas_for_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[PartitionReplica, ...]:
        """The assigned replicas of ``tps``, sorted by partition then broker."""
        out: list[PartitionReplica] = []
        assignments = self._assignments
        for tp in sorted(dict.fromkeys(tps)):  # input order kept: often sorted already
            a = assignments.get(tp)
            if a is not None:
                out.extend(PartitionReplica(tp, r) for r in sorted(a.replicas))
        return tuple(out)

    def replicas_for_topic(self, topic: str) -> tuple[PartitionReplica, ...]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def online_and_offline_replicas(
        self,
    ) -> tuple[tuple[PartitionReplica, ...], tuple[PartitionReplica, ...]]:
        """Every assigned replica split by ``is_replica_online`` (shutting down counts online)."""
        online: list[PartitionReplica] = []
        offline: list[PartitionReplica] = []
        live, dirs = self._live_or_shutting_down, self._offline_dirs
        assignments = self._assignments
        for tp in self.all_partitions():
            for r in sorted(assignments[tp].replicas):
                up = r in live and (r not in dirs or tp not in dirs[r])
                (online if up else offline).append(PartitionReplica(tp, r))
        return tuple(online), tuple(offline)

    def partitions_being_reassigned(self) -> tuple[TopicPartition, ...]:
        return tuple(sorted(tp for tp, a in self._assignments.items() if a.is_being_reassigned))

    # ---- states --------------------------------------------------------------------------
    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self._partition_states.get(tp, PartitionState.NON_EXISTENT)

    def replica_state(self, replica: PartitionReplica) -> ReplicaState:
        return self._replica_states.get(replica, ReplicaState.NON_EXISTENT)

    def partitions_in_state(self, *states: PartitionState) -> tuple[TopicPartition, ...]:
        wanted = frozenset(states)
        of = self._partition_states
        if wanted <= _NEW_OR_OFFLINE:
            return tuple(sorted(tp for tp in self._new_or_offline if of[tp] in wanted))
        return tuple(sorted(tp for tp, s in of.items() if s in wanted))

    def replicas_in_state(self, topic: str, *states: ReplicaState) -> tuple[PartitionReplica, ...]:
        wanted = frozenset(states)
        return tuple(
            sorted(r for r, s in self._replica_states.items() if r.topic == topic and s in wanted)
        )

    def offline_partition_count(self) -> int:
        """OfflinePartitionsCount: Offline partitions of topics not queued for deletion."""
        self._bring_counts_up_to_date()
        return _counted(self._offline, self._offline_by_topic, self._to_delete)

    def preferred_replica_imbalance_count(self) -> int:
        """Partitions not led by their preferred replica (Kafka's PreferredReplicaImbalanceCount).

        Only partitions with leader/ISR state of topics not queued for deletion count. While a
        reassignment is still adding the preferred replica, the partition counts as imbalanced
        only until that replica joins the ISR, as in Kafka.
        """
        self._bring_counts_up_to_date()
        return _counted(self._imbalanced, self._imbalanced_by_topic, self._to_delete)

    def _bring_counts_up_to_date(self) -> None:
        stale, self._counts_stale = self._counts_stale, set()
        offline_state = PartitionState.OFFLINE
        states, leadership, assignments = (
            self._partition_states,
            self._leadership,
            self._assignments,
        )
        for tp in stale:
            _recount(tp, states.get(tp) is offline_state, self._offline, self._offline_by_topic)
            lai, a = leadership.get(tp), assignments.get(tp)
            imbalanced = False
            if lai is not None and a is not None and a.replicas:
                preferred = a.replicas[0]
                if preferred in a.adding:  # a reassignment still adding it: until in the ISR
                    imbalanced = preferred not in lai.isr
                else:
                    imbalanced = lai.leader != preferred
            _recount(tp, imbalanced, self._imbalanced, self._imbalanced_by_topic)

    # ---- topic deletion --------------------------------------------------------------------
    @property
    def topics_to_be_deleted(self) -> frozenset[str]:
        return frozenset(self._to_delete)

    @property
    def topics_ineligible_for_deletion(self) -> frozenset[str]:
        return frozenset(self._ineligible)

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self._to_delete

    def is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        return topic in self._ineligible

    # ---- mutation (only after a successful etcd commit or watch event) ----------------------
    def apply_controller(self, controller_id: int, controller_epoch: int) -> None:
        self._controller_id = controller_id
        self._controller_epoch = controller_epoch

    def apply_broker_registered(self, info: BrokerInfo) -> None:
        self._brokers[info.id] = info
        self._brokers_changed()

    def apply_broker_removed(self, broker_id: int) -> None:
        self._brokers.pop(broker_id, None)
        self._shutting_down.discard(broker_id)
        self._offline_dirs.pop(broker_id, None)
        self._brokers_changed()

    def apply_broker_shutting_down(self, broker_id: int) -> None:
        self._shutting_down.add(broker_id)
        self._brokers_changed()

    def apply_offline_replicas(self, broker_id: int, tps: Iterable[TopicPartition]) -> None:
        """Replace the set of ``broker_id``'s replicas that sit on failed log directories."""
        new = frozenset(tps)
        self._metadata_changed.update(new ^ self._offline_dirs.get(broker_id, frozenset()))
        self._offline_dirs[broker_id] = new

    def _brokers_changed(self) -> None:
        was_live = self._live
        self._live_or_shutting_down = frozenset(self._brokers)
        self._live = frozenset(self._brokers.keys() - self._shutting_down)
        self._shutting_down_frozen = frozenset(self._shutting_down)
        # UpdateMetadata's offline replicas are those not on a live broker (shutting down
        # counts offline, as in Kafka); a broker's epoch is in the request's header, not here.
        self._liveness_moved.update(was_live ^ self._live)

    def apply_topic(
        self,
        topic: str,
        topic_id: str,
        assignments: Mapping[int, ReplicaAssignment],
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Add or update a topic and its partitions' assignments (existing partitions kept)."""
        if self._topic_ids.get(topic, topic_id) != topic_id:
            self._metadata_topic_changed(topic)
        self._topic_ids[topic] = topic_id
        if configs is not None:
            self._topic_configs[topic] = dict(configs)
        for p, a in assignments.items():
            self.apply_assignment(TopicPartition(topic, p), a)

    def apply_topic_config(self, topic: str, configs: Mapping[str, str]) -> None:
        self._topic_configs[topic] = dict(configs)

    def apply_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        old = self._assignments.get(tp)
        if old is None:
            self._sorted_partitions = None
            self._host(tp, (), assignment.replicas)
        elif old is not assignment and old.replicas != assignment.replicas:
            self._host(tp, old.replicas, assignment.replicas)
        self._assignments[tp] = assignment
        self._metadata_changed.add(tp)
        self._counts_stale.add(tp)

    def apply_leader_and_isr(self, tp: TopicPartition, leader_and_isr: LeaderAndIsr) -> None:
        old = self._leadership.get(tp)
        if old is None or old.leader != leader_and_isr.leader:
            self._lead(tp, None if old is None else old.leader, leader_and_isr.leader)
        self._leadership[tp] = leader_and_isr
        self._metadata_changed.add(tp)
        self._counts_stale.add(tp)

    def apply_partition_state(self, tp: TopicPartition, state: PartitionState) -> None:
        self._counts_stale.add(tp)
        if state in _NEW_OR_OFFLINE:
            self._new_or_offline.add(tp)
        else:
            self._new_or_offline.discard(tp)
        if state is PartitionState.NON_EXISTENT:
            self._partition_states.pop(tp, None)
        else:
            self._partition_states[tp] = state

    def apply_replica_state(self, replica: PartitionReplica, state: ReplicaState) -> None:
        if state is ReplicaState.NON_EXISTENT:
            self._replica_states.pop(replica, None)
        else:
            self._replica_states[replica] = state

    def apply_topic_deletion_queued(self, topic: str) -> None:
        self._to_delete.add(topic)
        self._metadata_topic_changed(topic)  # UpdateMetadata now says LeaderDuringDelete

    def apply_topic_deletion_eligibility(self, topic: str, *, ineligible: bool) -> None:
        if ineligible:
            self._ineligible.add(topic)
        else:
            self._ineligible.discard(topic)

    def apply_remove_topic(self, topic: str) -> None:
        """Forget a deleted topic entirely (Kafka's ``removeTopic``)."""
        self._topic_ids.pop(topic, None)
        self._topic_configs.pop(topic, None)
        self._to_delete.discard(topic)
        self._ineligible.discard(topic)
        for tp, lai in [(tp, lai) for tp, lai in self._leadership.items() if tp.topic == topic]:
            self._lead(tp, lai.leader, None)
        for tp, a in [(tp, a) for tp, a in self._assignments.items() if tp.topic == topic]:
            self._host(tp, a.replicas, ())
        for d in (self._assignments, self._leadership, self._partition_states):
            for tp in [tp for tp in d if tp.topic == topic]:
                del d[tp]
                self._metadata_changed.add(tp)
                self._counts_stale.add(tp)
                self._new_or_offline.discard(tp)
        self._sorted_partitions = None
        for r in [r for r in self._replica_states if r.topic == topic]:
            del self._replica_states[r]

    def apply_plan(
        self,
        plan: StateChangePlan,
        committed_partition_epochs: Mapping[TopicPartition, int] | None = None,
    ) -> None:
        """Apply a plan whose writes were committed; the commit's mod revisions become epochs.

        Everything is checked before anything changes, so a bad call leaves the context as it was.
        """
        epochs = committed_partition_epochs or {}
        if plan.controller_epoch != self._controller_epoch:
            raise ValueError(
                f"plan decided under controller epoch {plan.controller_epoch}, "
                f"context is at {self._controller_epoch}"
            )
        missing = [str(w.tp) for w in plan.writes if w.tp not in epochs]
        if missing:
            raise ValueError(f"no committed partition epoch for written partitions {missing}")
        # The loops below are ``apply_leader_and_isr``, ``apply_partition_state`` and
        # ``apply_replica_state`` inlined: a broker failure applies tens of thousands.
        leadership, changed, stale = self._leadership, self._metadata_changed, self._counts_stale
        for w in plan.writes:
            tp = w.tp
            old = leadership.get(tp)
            new = w.leader_and_isr
            if old is None or old.leader != new.leader:
                self._lead(tp, None if old is None else old.leader, new.leader)
            leadership[tp] = new.with_epochs(partition_epoch=epochs[tp])
            changed.add(tp)
            stale.add(tp)
        for change in plan.assignment_changes:
            self.apply_assignment(change.tp, change.assignment)
        partition_states = self._partition_states
        new_or_offline = self._new_or_offline
        for pt in plan.partition_transitions:
            stale.add(pt.tp)
            if pt.to_state in _NEW_OR_OFFLINE:
                new_or_offline.add(pt.tp)
            else:
                new_or_offline.discard(pt.tp)
            if pt.to_state is PartitionState.NON_EXISTENT:
                partition_states.pop(pt.tp, None)
            else:
                partition_states[pt.tp] = pt.to_state
        replica_states = self._replica_states
        for rt in plan.replica_transitions:
            if rt.to_state is ReplicaState.NON_EXISTENT:
                replica_states.pop(rt.replica, None)
            else:
                replica_states[rt.replica] = rt.to_state

    def _host(self, tp: TopicPartition, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        """Move ``tp`` in the hosted index from brokers ``old`` to brokers ``new``."""
        for b in old:
            if b not in new:
                self._unhosted.setdefault(b, set()).add(tp)
        for b in new:
            if b in old:
                continue
            gone = self._unhosted.get(b)
            if gone is not None and tp in gone:
                gone.discard(tp)  # still in the list: noted gone, and back before a read
            else:
                hosted = self._hosted.get(b)
                if hosted is None:
                    self._hosted[b] = hosted = []
                hosted.append(tp)

    def _lead(self, tp: TopicPartition, old: int | None, new: int | None) -> None:
        """Move ``tp`` in the leader index from ``old`` to ``new`` (None: not indexed)."""
        if old is not None:
            tps = self._led_by[old]
            tps.discard(tp)
            if not tps:
                del self._led_by[old]
        if new is not None:
            tps = self._led_by.get(new)
            if tps is None:
                self._led_by[new] = tps = set()
            tps.add(tp)

    # ---- change tracking for the UpdateMetadata cache --------------------------------------
    def _metadata_topic_changed(self, topic: str) -> None:
        self._metadata_changed.update(tp for tp in self._assignments if tp.topic == topic)

    def metadata_changes_pending(self) -> int:
        """How many partitions the next ``take_metadata_changes`` names, without taking them
        (the brokers whose liveness moved are turned into their partitions here already)."""
        if self._metadata_all_changed:
            return len(self._assignments)
        self._note_liveness_moves()
        return len(self._metadata_changed)

    def take_metadata_changes(self) -> tuple[bool, frozenset[TopicPartition]]:
        """``(everything, partitions)`` whose UpdateMetadata state may have changed since the
        previous call (``everything``: all of them, as for a context just built); resets both.

        A partition listed may also be gone (its topic was removed).
        """
        everything = self._metadata_all_changed
        if everything:
            self._liveness_moved.clear()
        else:
            self._note_liveness_moves()
        changed = frozenset(self._metadata_changed)
        self._metadata_all_changed = False
        self._metadata_changed.clear()
        return everything, changed

    def _note_liveness_moves(self) -> None:
        """Mark changed every partition with a replica on a broker whose liveness moved."""
        moved = self._liveness_moved
        if moved:
            for b in moved:
                self._metadata_changed.update(self._hosted_by(b))
            moved.clear()


def _recount(
    tp: TopicPartition, counted: bool, members: set[TopicPartition], by_topic: dict[str, int]
) -> None:
    """Make ``tp``'s membership of a kept count ``counted``."""
    if counted == (tp in members):
        return
    if counted:
        members.add(tp)
        by_topic[tp.topic] = by_topic.get(tp.topic, 0) + 1
    else:
        members.discard(tp)
        left = by_topic[tp.topic] - 1
        if left:
            by_topic[tp.topic] = left
        else:
            del by_topic[tp.topic]


def _counted(members: set[TopicPartition], by_topic: dict[str, int], excluded: set[str]) -> int:
    return len(members) - sum(by_topic.get(topic, 0) for topic in excluded)
