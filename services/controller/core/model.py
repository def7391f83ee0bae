"""Frozen value types the controller's pure core passes around.

They mirror Kafka's controller vocabulary (TopicPartition, PartitionAndReplica, LeaderAndIsr,
ReplicaAssignment) so the seeds map onto this code name for name, with two Leasehold twists:

* ``LeaderAndIsr.partition_epoch`` is the etcd mod revision of the partition-state key (the
  zkVersion of the seeds, ARCHITECTURE §3). Every partition-state write compares it, so a value
  read from the context is also the compare-and-set token for the next write. 0 means "never
  written": etcd reports mod revision 0 for a key that does not exist.
* ``LeaderAndIsr.recovering`` is KIP-704's leader recovery state: set by an unclean election
  until the new leader has rebuilt the high watermark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

NO_LEADER = -1
"""Leader id of a partition that has no leader."""
LEADER_DURING_DELETE = -2
"""Leader id UpdateMetadata carries for a partition whose topic is being deleted."""
INITIAL_LEADER_EPOCH = 0
PARTITION_EPOCH_UNWRITTEN = 0
"""The partition epoch (etcd mod revision) of a state key that does not exist yet."""
NO_EPOCH = -1
"""StopReplica leader epoch when the controller knows none."""
EPOCH_DURING_DELETE = -2
"""StopReplica leader epoch for a topic queued for deletion: overrides any epoch (KIP-570)."""


# Replica lists and ISRs repeat across partitions (a cluster of B brokers has far fewer
# distinct ones than partitions): one tuple of each kept, so a million partitions do not hold
# millions of equal tuples. Bounded; past the bound new tuples are simply not shared.
_SHARED: dict[tuple[int, ...], tuple[int, ...]] = {}
SHARED_MAX = 200_000


def shared_ints(values: tuple[int, ...]) -> tuple[int, ...]:
    """``values`` (a tuple of ints), or the equal tuple already shared."""
    found = _SHARED.get(values)
    if found is not None:
        return found
    if len(_SHARED) < SHARED_MAX:
        _SHARED[values] = values
    return values


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return shared_ints(tuple(map(int, values)))


def _derived_leader_and_isr(
    leader: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    controller_epoch: int,
    partition_epoch: int,
    recovering: bool,
) -> LeaderAndIsr:
    """A ``LeaderAndIsr`` from fields that are already valid (``isr`` a tuple of ints).

    Skips the frozen dataclass ``__init__`` (one ``object.__setattr__`` per field plus the ISR
    normalisation), about a quarter of its cost: a controlled shutdown or failover at 10,000
    partitions derives several values per partition (elect, stamp, expected epoch, apply).
    """
    value = object.__new__(LeaderAndIsr)
    value.__dict__.update(
        leader=leader,
        leader_epoch=leader_epoch,
        isr=isr,
        controller_epoch=controller_epoch,
        partition_epoch=partition_epoch,
        recovering=recovering,
    )
    return value


class TopicPartition(NamedTuple):
    """One partition of one topic; ordered by (topic, partition) so plans are deterministic.

    A named tuple rather than a dataclass: the controller hashes, compares and sorts these
    millions of times on a 100,000-partition failover, and tuple hashing and ordering run in C
    where a dataclass's generated ``__hash__``/``__eq__``/``__lt__`` run Python per call.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionReplica(NamedTuple):
    """The copy of ``tp`` hosted by broker ``replica`` (Kafka's PartitionAndReplica); ordered by
    (topic, partition, replica). A named tuple for the same reason as ``TopicPartition``."""

    tp: TopicPartition
    replica: int

    @property
    def topic(self) -> str:
        return self.tp.topic

    @property
    def partition(self) -> int:
        return self.tp.partition

    def __str__(self) -> str:
        return f"[{self.tp},replica={self.replica}]"


@dataclass(frozen=True)
class LeaderAndIsr:
    """The partition state the controller owns: leader, epochs and in-sync replicas.

    Lists passed for ``isr`` are turned into tuples so the value stays hashable and immutable.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int = PARTITION_EPOCH_UNWRITTEN
    recovering: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", _ints(self.isr))

    @classmethod
    def of_valid(
        cls,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        controller_epoch: int,
        partition_epoch: int = PARTITION_EPOCH_UNWRITTEN,
        recovering: bool = False,
    ) -> LeaderAndIsr:
        """A value from fields already of the right types (``isr`` a tuple of ints), without
        the constructor's normalisation: for a decoder that makes one per watched state."""
        return _derived_leader_and_isr(
            leader, leader_epoch, isr, controller_epoch, partition_epoch, recovering
        )

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        """A new leader and/or ISR: bumps the leader epoch and keeps the recovery state.

        ZooKeeper-era Kafka bumps the leader epoch on every controller-made change, including an
        ISR-only shrink, so followers always see a fresh epoch; we do the same.
        """
        return _derived_leader_and_isr(
            leader,
            self.leader_epoch + 1,
            _ints(isr),
            self.controller_epoch,
            self.partition_epoch,
            self.recovering,
        )

    def new_recovering_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        """As ``new_leader_and_isr`` but marks the partition RECOVERING (KIP-704)."""
        return replace(self.new_leader_and_isr(leader, isr), recovering=True)

    def new_leader(self, leader: int) -> LeaderAndIsr:
        """A new leader with the ISR unchanged."""
        return self.new_leader_and_isr(leader, self.isr)

    def same_decision_as(self, other: LeaderAndIsr) -> bool:
        """Equal apart from the partition epoch, i.e. writing ``other`` would change nothing."""
        return (
            self.leader == other.leader
            and self.leader_epoch == other.leader_epoch
            and self.isr == other.isr
            and self.controller_epoch == other.controller_epoch
            and self.recovering == other.recovering
        )

    def with_epochs(
        self, *, controller_epoch: int | None = None, partition_epoch: int | None = None
    ) -> LeaderAndIsr:
        """A copy with new controller and/or partition epochs: ``dataclasses.replace`` without
        its per-call field introspection, for the paths that stamp every partition of a batch."""
        return _derived_leader_and_isr(
            self.leader,
            self.leader_epoch,
            self.isr,
            self.controller_epoch if controller_epoch is None else controller_epoch,
            self.partition_epoch if partition_epoch is None else partition_epoch,
            self.recovering,
        )


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas, with KIP-455's adding/removing sets during a reassignment.

    ``replicas`` is the full set (origin plus adding), preferred leader first. ``adding`` and
    ``removing`` must be subsets of ``replicas``.
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = field(default_factory=tuple)
    removing: tuple[int, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", _ints(self.replicas))
        object.__setattr__(self, "adding", _ints(self.adding))
        object.__setattr__(self, "removing", _ints(self.removing))
        if len(set(self.replicas)) != len(self.replicas):
            raise ValueError(f"duplicate replicas in {self.replicas}")
        stray = (set(self.adding) | set(self.removing)) - set(self.replicas)
        if stray:
            raise ValueError(f"adding/removing replicas {sorted(stray)} not in {self.replicas}")

    @classmethod
    def of_distinct(cls, replicas: tuple[int, ...]) -> ReplicaAssignment:
        """No reassignment, from a tuple of distinct ints (not checked): what a standby
        composes for every watched partition state, without the constructor's checks. Equal
        ones are one object (immutable; partitions sharing replicas share it)."""
        found = _PLAIN_ASSIGNMENTS.get(replicas)
        if found is not None:
            return found
        value = object.__new__(cls)
        value.__dict__.update(replicas=shared_ints(replicas), adding=(), removing=())
        if len(_PLAIN_ASSIGNMENTS) < SHARED_MAX:
            _PLAIN_ASSIGNMENTS[replicas] = value
        return value

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """The replicas before the reassignment started (replicas minus adding)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas once the reassignment completes (replicas minus removing)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def preferred_replica(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    def reassign_to(self, target: Iterable[int]) -> ReplicaAssignment:
        """Start (or redirect) a reassignment towards ``target``, as Kafka's ``reassignTo``."""
        target_t = _ints(target)
        origin = self.origin_replicas
        full = tuple(dict.fromkeys(target_t + origin))
        return ReplicaAssignment(
            replicas=full,
            adding=tuple(r for r in full if r not in origin),
            removing=tuple(r for r in full if r not in target_t),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            replicas=tuple(r for r in self.replicas if r != replica),
            adding=tuple(r for r in self.adding if r != replica),
            removing=tuple(r for r in self.removing if r != replica),
        )

    def add_replica(self, replica: int) -> ReplicaAssignment:
        """Append ``replica`` if missing (NewReplica -> OnlineReplica repairs the assignment)."""
        if replica in self.replicas:
            return self
        return replace(self, replicas=(*self.replicas, replica))


_PLAIN_ASSIGNMENTS: dict[tuple[int, ...], ReplicaAssignment] = {}


@dataclass(frozen=True)
class BrokerInfo:
    """A registered broker: endpoint, rack and broker epoch (KIP-380: its key's create revision)."""

    id: int
    host: str
    port: int
    rack: str = ""
    epoch: int = -1
    incarnation: str = ""  # the registering process (BrokerRegistration.incarnation_id)
    # What the registration states about its lease (0 when not stated): when the broker
    # registered and the TTL of its session, so a lost registration dates the broker's last
    # confirmed keep-alive (the state-change log records both).
    registered_at_ms: int = 0
    session_ttl_ms: int = 0
