"""Replica placement exactly as Kafka's ``AdminUtils.assignReplicasToBrokers`` does it.

Operators move between Kafka and Leasehold and compare plans, so for the same broker list, the
same counts and the same start index/shift, every function here returns what Kafka returns, and
fails with Kafka's message where Kafka fails. (Kafka draws the random start index and shift from
``java.util.Random``; we draw them from the ``random.Random`` the caller passes, so a seeded
generator gives reproducible plans and tests.)

The algorithm in words:

- Rack-unaware: the leader of partition ``p`` is broker ``(p + start) % n``; follower ``j`` sits
  ``1 + (shift + j) % (n - 1)`` places after the leader; ``shift`` grows by one after every full
  round of ``n`` partitions, so the follower pattern changes from round to round.
- Rack-aware: the same walk over a broker list that alternates racks
  (:func:`rack_alternated_broker_list`), skipping a candidate whose rack already holds a replica
  while some rack holds none, and skipping a broker already used while some broker is unused.

Pure code: no I/O; randomness only through the ``rng`` argument.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError, LeaseholdError, PreconditionError
from leasehold.javacompat import (
    java_hash_set_order,
    java_int_hash,
    java_list_str,
    java_string_key,
)
from leasehold.validation import duplicates

_INVALID_PARTITIONS = common_pb2.ERROR_CODE_INVALID_PARTITIONS
_INVALID_RF = common_pb2.ERROR_CODE_INVALID_REPLICATION_FACTOR
_INVALID_ASSIGNMENT = common_pb2.ERROR_CODE_INVALID_REPLICA_ASSIGNMENT


@dataclass(frozen=True)
class BrokerMetadata:
    """A broker as placement sees it. ``rack`` ``None`` (or ``""``, proto3's unset) means none."""

    id: int
    rack: str | None = None

    def __post_init__(self) -> None:
        if self.rack == "":
            object.__setattr__(self, "rack", None)


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's replica assignment: partition id -> replicas, the first one the preferred leader.

    ``brokers`` is used in the order given (Kafka's callers sort by id first; see
    :func:`placement_brokers`). Rack-aware when every broker has a rack, rack-unaware when none
    has; a mix is an error. ``fixed_start_index < 0`` draws the start index and then the shift
    from ``rng`` (a fresh ``random.Random()`` if none is given); otherwise both equal it. Partition
    ids start at ``max(0, start_partition_id)``.
    """
    if n_partitions <= 0:
        raise InvalidRequestError(
            _INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )
    if replication_factor <= 0:
        raise InvalidRequestError(_INVALID_RF, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidRequestError(
            _INVALID_RF,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    ids = [b.id for b in brokers]
    repeated = duplicates(ids)
    if repeated:
        # Kafka never passes duplicates; with them its rack-aware walk divides by zero or
        # places a broker twice, so refuse up front, in the words of the reassign tool.
        shown = java_list_str(java_hash_set_order(repeated, java_int_hash))
        raise InvalidRequestError(
            _INVALID_ASSIGNMENT, f"Broker list contains duplicate entries: {shown}"
        )
    if rng is None and fixed_start_index < 0:
        rng = random.Random()
    racked = [b for b in brokers if b.rack is not None]
    if not racked:
        return _assign_rack_unaware(
            ids, n_partitions, replication_factor, fixed_start_index, start_partition_id, rng
        )
    if len(racked) != len(brokers):
        raise PreconditionError(
            _INVALID_ASSIGNMENT,
            "Not all brokers have rack information for replica rack aware assignment.",
        )
    return _assign_rack_aware(
        {b.id: b.rack for b in racked if b.rack is not None},
        n_partitions,
        replication_factor,
        fixed_start_index,
        start_partition_id,
        rng,
    )


def _start_and_shift(fixed_start_index: int, n: int, rng: random.Random | None) -> tuple[int, int]:
    """Kafka draws the start index first, then the shift, each uniform in ``[0, n)``."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    assert rng is not None
    start = rng.randrange(n)
    return start, rng.randrange(n)


def _replica_index(first: int, shift: int, replica: int, n: int) -> int:
    """Position of follower ``replica`` (0-based): never the leader's, cycling the other n-1."""
    return (first + 1 + (shift + replica) % (n - 1)) % n


def _assign_rack_unaware(
    ids: list[int],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    n = len(ids)
    start, shift = _start_and_shift(fixed_start_index, n, rng)
    result: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        replicas = [ids[first]]
        replicas += [ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        result[partition] = replicas
        partition += 1
    return result


def _assign_rack_aware(
    rack_of: dict[int, str],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    n = len(arranged)
    start, shift = _start_and_shift(fixed_start_index, n, rng)
    result: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # Take the candidate only if its rack is new (or every rack is used) and it is
                # new itself (or every broker is used).
                rack_ok = rack not in racks_used or len(racks_used) == num_racks
                broker_ok = broker not in brokers_used or len(brokers_used) == n
                if rack_ok and broker_ok:
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        result[partition] = replicas
        partition += 1
    return result


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: racks in (Java) string order, brokers by id within a rack.

    ``{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}`` gives
    ``[0, 3, 1, 5, 4, 2]``: a plain round robin over this list already spreads replicas across
    racks, which is what makes the rack-aware walk cheap.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=java_string_key)]
    result: list[int] = []
    depth = max((len(c) for c in columns), default=0)
    for row in range(depth):
        result.extend(column[row] for column in columns if row < len(column))
    return result


def placement_brokers(
    brokers: Sequence[BrokerMetadata],
    *,
    rack_aware: bool = True,
    only_ids: Collection[int] | None = None,
) -> list[BrokerMetadata]:
    """The broker list Kafka's admin paths hand to the placer: filtered, rack-checked, by id.

    ``only_ids`` keeps just those brokers (``--broker-list``; unknown ids are ignored, as in
    Kafka). With ``rack_aware`` a mix of racked and rackless brokers is an error; without it the
    racks are dropped.
    """
    chosen = [b for b in brokers if only_ids is None or b.id in only_ids]
    racked = sum(1 for b in chosen if b.rack is not None)
    if rack_aware and 0 < racked < len(chosen):
        raise PreconditionError(
            _INVALID_ASSIGNMENT,
            "Not all brokers have rack information. Add --disable-rack-aware in command line"
            " to make replica assignment without rack information.",
        )
    if not rack_aware:
        chosen = [BrokerMetadata(b.id) for b in chosen]
    return sorted(chosen, key=lambda b: b.id)


def new_partitions_assignment(
    brokers: Sequence[BrokerMetadata],
    existing: Mapping[int, Sequence[int]],
    total_count: int,
    rng: random.Random | None = None,
    *,
    topic: str = "",
) -> dict[int, list[int]]:
    """Replicas for the partitions added when a topic grows to ``total_count`` partitions.

    As Kafka's ``createNewPartitionsAssignment``: keep the replication factor of partition 0,
    number the new partitions from the existing count, and start the walk at the first broker
    whose id is at least partition 0's leader (index 0 if none), so that growth continues the
    topic's original pattern. The start index is therefore fixed and ``rng`` is never consulted;
    it is accepted so that callers can treat creation and growth alike.
    """
    replicas0 = existing.get(0)
    if not replicas0:
        shown = {p: list(r) for p, r in sorted(existing.items())}
        raise LeaseholdError(
            common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            f"missing. Assignment: {shown}",
        )
    to_add = total_count - len(existing)
    if to_add <= 0:
        raise InvalidRequestError(
            _INVALID_PARTITIONS,
            f"The number of partitions for a topic can only be increased. Topic {topic} "
            f"currently has {len(existing)} partitions, {total_count} would not be an increase.",
        )
    start = next((i for i, b in enumerate(brokers) if b.id >= replicas0[0]), 0)
    return assign_replicas_to_brokers(brokers, to_add, len(replicas0), start, len(existing), rng)


def propose_reassignment(
    current: Mapping[str, Mapping[int, Sequence[int]]],
    brokers: Sequence[BrokerMetadata],
    rng: random.Random | None = None,
) -> dict[str, dict[int, list[int]]]:
    """``kafka-reassign-partitions --generate``: a fresh placement for each topic's partitions.

    Each topic keeps its partition count and replication factor (taken from its lowest
    partition) and is placed from a random start over ``brokers``, as Kafka does. Topics are
    visited in name order so that one seeded ``rng`` gives one plan.
    """
    if rng is None:
        rng = random.Random()
    proposed: dict[str, dict[int, list[int]]] = {}
    for topic in sorted(current, key=java_string_key):
        partitions = current[topic]
        if not partitions:
            continue
        replication_factor = len(partitions[min(partitions)])
        proposed[topic] = assign_replicas_to_brokers(
            brokers, len(partitions), replication_factor, rng=rng
        )
    return proposed
