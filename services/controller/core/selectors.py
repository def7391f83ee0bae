"""The partition leader selectors of seed 000 section 4.2, as pure functions.

Each takes the partition's current ``LeaderAndIsr`` plus exactly what its rule needs (the assigned
replicas, a liveness predicate, the shutting-down brokers, whether unclean election is allowed)
and returns either an ``ElectionResult`` or an ``ElectionFailure``. Nothing here reads the
controller context or raises for an expected outcome: "no eligible leader" is an answer.

Liveness is a predicate per broker id (KRaft's ``isAcceptableLeader``) so the caller decides what
"online" means. The partition state machine passes "registered, not shutting down and the replica
not on an offline log dir"; that is also what keeps shutting-down or dead brokers out of every
ISR the selectors build (KIP-841).

Every selector except the no-op bumps the leader epoch by one, as ZooKeeper-era Kafka does for
every controller-made change. The result keeps the input's ``controller_epoch`` and
``partition_epoch``; the state machine stamps its own controller epoch and uses the partition
epoch as the compare-and-set token of the write.

``recipients`` are the brokers that must receive the new LeaderAndIsr, per selector exactly as the
seed sends them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from services.controller.core.model import LeaderAndIsr

IsOnline = Callable[[int], bool]


class ElectionError(Enum):
    """Why no leader was chosen. Names follow Kafka's (KIP-460) error codes."""

    NO_REPLICAS_ASSIGNED = "NO_REPLICAS_ASSIGNED"
    ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
    ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"


class ElectionResult(NamedTuple):
    """A chosen leader and ISR and who must be told.

    ``unclean`` is True when the leader came from outside the ISR (possible data loss); such a
    result always has ``leader_and_isr.recovering`` set (KIP-704). A named tuple: a broker
    failure makes one per partition the broker led, at a quarter of a frozen dataclass's cost.
    """

    leader_and_isr: LeaderAndIsr
    recipients: tuple[int, ...]
    unclean: bool = False


@dataclass(frozen=True)
class ElectionFailure:
    error: ElectionError
    reason: str = field(compare=False)


Election = ElectionResult | ElectionFailure


def elect_offline(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online: IsOnline,
    unclean_allowed: bool,
) -> Election:
    """OfflinePartitionLeaderSelector: the first live ISR member in assignment order leads.

    The new ISR is the old ISR minus the replicas that are not online. With no live ISR member
    and ``unclean_allowed`` the first live assigned replica leads alone (ISR = [leader]) and the
    partition becomes RECOVERING. LeaderAndIsr goes to every live assigned replica.
    """
    if not assignment:
        return ElectionFailure(ElectionError.NO_REPLICAS_ASSIGNED, "no replicas assigned")
    # List comprehensions and a plain loop: a broker failure runs this for every partition the
    # broker led.
    live = tuple([r for r in assignment if is_online(r)])
    isr = current.isr
    for r in live:
        if r in isr:
            new_isr = tuple([i for i in isr if is_online(i)])
            return ElectionResult(current.new_leader_and_isr(r, new_isr), live)
    if not live:
        return ElectionFailure(
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"no assigned replica of {list(assignment)} is online",
        )
    if not unclean_allowed:
        return ElectionFailure(
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"no ISR member of {list(current.isr)} is online and unclean leader election is "
            f"disabled (live assigned replicas {list(live)})",
        )
    leader = live[0]
    return ElectionResult(
        current.new_recovering_leader_and_isr(leader, (leader,)), live, unclean=True
    )


def elect_reassigned(
    current: LeaderAndIsr,
    target_replicas: Sequence[int],
    is_online: IsOnline,
) -> Election:
    """ReassignedPartitionLeaderSelector: the first target replica that is online and in the ISR.

    The ISR is kept. LeaderAndIsr goes to every target replica (the seed's RAR).
    """
    if not target_replicas:
        return ElectionFailure(ElectionError.NO_REPLICAS_ASSIGNED, "target replica list is empty")
    leader = next((r for r in target_replicas if is_online(r) and r in current.isr), None)
    if leader is None:
        return ElectionFailure(
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"none of the target replicas {list(target_replicas)} is online and in the ISR "
            f"{list(current.isr)}",
        )
    return ElectionResult(current.new_leader(leader), tuple(target_replicas))


def elect_preferred(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online: IsOnline,
) -> Election:
    """PreferredReplicaPartitionLeaderSelector: the first assigned replica, if online and in ISR.

    Fails with ELECTION_NOT_NEEDED when it already leads. The ISR is kept. LeaderAndIsr goes to
    every assigned replica.
    """
    if not assignment:
        return ElectionFailure(ElectionError.NO_REPLICAS_ASSIGNED, "no replicas assigned")
    preferred = assignment[0]
    if current.leader == preferred:
        return ElectionFailure(
            ElectionError.ELECTION_NOT_NEEDED, f"preferred replica {preferred} already leads"
        )
    if not (is_online(preferred) and preferred in current.isr):
        return ElectionFailure(
            ElectionError.PREFERRED_LEADER_NOT_AVAILABLE,
            f"preferred replica {preferred} is not online or not in the ISR {list(current.isr)}",
        )
    return ElectionResult(current.new_leader(preferred), tuple(assignment))


def elect_controlled_shutdown(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    is_online_or_shutting_down: IsOnline,
    shutting_down: Collection[int],
) -> Election:
    """ControlledShutdownLeaderSelector: move leadership off brokers that are shutting down.

    The new ISR is the old one minus shutting-down brokers; the leader is the first assigned
    replica that is online, not shutting down and in that ISR. LeaderAndIsr goes to every
    assigned replica that is online or shutting down (the shutting-down one must learn it is no
    longer leader).
    """
    # List comprehensions and a plain loop: this runs once per partition the broker leads.
    live_or_shutting_down = tuple([r for r in assignment if is_online_or_shutting_down(r)])
    new_isr = tuple([r for r in current.isr if r not in shutting_down])
    leader = None
    for r in live_or_shutting_down:
        if r in new_isr:
            leader = r
            break
    if leader is None:
        return ElectionFailure(
            ElectionError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"no replica in ISR {list(current.isr)} besides shutting-down brokers "
            f"{sorted(shutting_down)}",
        )
    return ElectionResult(current.new_leader_and_isr(leader, new_isr), live_or_shutting_down)


def elect_noop(current: LeaderAndIsr, assignment: Sequence[int]) -> Election:
    """NoOpLeaderSelector: keep leader, ISR and epochs; resend them to every assigned replica."""
    return ElectionResult(current, tuple(assignment))
