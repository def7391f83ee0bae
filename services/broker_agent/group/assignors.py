"""Server-side assignors (KIP-848): ``uniform`` and ``range``, pure functions of the group.

Both take every member's subscription and the current target (for stickiness) and return the
new target of every member; a partition is in at most one member's target, and only in the
target of a member subscribed to its topic.

- **uniform** (Kafka's default): as few moves as possible while the counts of members differ by
  at most one where subscriptions allow. Targets that are still valid are kept, partitions
  nobody holds go to the eligible member with the fewest, then partitions move one at a time
  from the most to the least loaded eligible member until no move evens the counts further.
- **range**: per topic, the subscribed members in member id order get consecutive ranges, the
  first ``partitions % members`` one partition more (Kafka's RangeAssignor), so members of
  co-partitioned topics get the same partition numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from services.broker_agent.group.model import TP, Partitions


@dataclass(frozen=True)
class MemberSubscription:
    topics: frozenset[str]
    rack_id: str | None = None


Assignor = Callable[
    [Mapping[str, MemberSubscription], Mapping[str, int], Mapping[str, Partitions]],
    dict[str, Partitions],
]


def uniform(
    members: Mapping[str, MemberSubscription],
    topics: Mapping[str, int],
    current: Mapping[str, Partitions],
) -> dict[str, Partitions]:
    """Balanced and sticky."""
    if not members:
        return {}
    names = sorted(members)
    subs = {m: members[m].topics for m in names}
    targets: dict[str, set[TP]] = {m: set() for m in names}
    taken: set[TP] = set()
    for m in names:  # 1. keep what is still valid
        for tp in sorted(current.get(m, ())):
            topic, partition = tp
            if tp not in taken and topic in subs[m] and 0 <= partition < topics.get(topic, 0):
                targets[m].add(tp)
                taken.add(tp)
    wanted = [
        (t, p)
        for t in sorted({t for s in subs.values() for t in s})
        for p in range(topics.get(t, 0))
    ]
    for tp in wanted:  # 2. what nobody holds, to the eligible member holding fewest
        if tp in taken:
            continue
        eligible = [m for m in names if tp[0] in subs[m]]
        receiver = min(eligible, key=lambda m: (len(targets[m]), m))
        targets[receiver].add(tp)
        taken.add(tp)
    _balance(names, subs, targets)
    return {m: frozenset(targets[m]) for m in names}


def _balance(names: list[str], subs: Mapping[str, frozenset[str]], targets: dict[str, set[TP]]):
    """Move one partition at a time from a fuller member to an emptier eligible one while
    their counts differ by more than one."""
    homogeneous = len({subs[m] for m in names}) == 1
    while True:
        order = sorted(names, key=lambda m: (len(targets[m]), m))
        move: tuple[str, str, TP] | None = None
        for receiver in order:
            for donor in reversed(order):
                if len(targets[donor]) - len(targets[receiver]) <= 1:
                    break
                movable = [tp for tp in targets[donor] if tp[0] in subs[receiver]]
                if movable:
                    move = (donor, receiver, max(movable))
                    break
            if move is not None or homogeneous:
                break
        if move is None:
            return
        donor, receiver, tp = move
        targets[donor].discard(tp)
        targets[receiver].add(tp)


def range_(
    members: Mapping[str, MemberSubscription],
    topics: Mapping[str, int],
    current: Mapping[str, Partitions],
) -> dict[str, Partitions]:
    """Kafka's range: per topic, consecutive ranges in member id order."""
    targets: dict[str, set[TP]] = {m: set() for m in members}
    for topic in sorted({t for s in members.values() for t in s.topics}):
        count = topics.get(topic, 0)
        subscribed = sorted(m for m, s in members.items() if topic in s.topics)
        if not count or not subscribed:
            continue
        per, extra = divmod(count, len(subscribed))
        start = 0
        for i, m in enumerate(subscribed):
            size = per + (1 if i < extra else 0)
            targets[m].update((topic, p) for p in range(start, start + size))
            start += size
    return {m: frozenset(ps) for m, ps in targets.items()}


ASSIGNORS: Mapping[str, Assignor] = {"uniform": uniform, "range": range_}
