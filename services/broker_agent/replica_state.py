"""What a partition leader knows about its followers, and the decisions it makes from that.

A follower's fetch offset is its log end offset: everything below it is on the follower's disk.
From those offsets the leader derives the high watermark (the smallest log end offset in the ISR —
nothing above it is acknowledged or visible to consumers), which followers may join the ISR
(caught up to the high watermark and to the start of the leader's current epoch) and which must
leave it (not caught up for ``replica.lag.time.max.ms``). These are Kafka's ``ReplicaState`` and
``Partition`` rules, kept pure so the tests can table them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple, Protocol

UNKNOWN_OFFSET = -1


class FollowerState(NamedTuple):
    """The leader's view of one follower replica (Kafka's ReplicaState).

    An immutable named tuple rather than a frozen dataclass: a broker taking leadership of
    5,000 partitions builds 10,000 of these in one LeaderAndIsr, and a leader replaces one on
    every follower fetch; a frozen dataclass costs several times more to build.
    """

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    # When the follower was last known to hold everything the leader held.
    last_caught_up_ms: int = 0
    # The leader's log end offset and the time at the previous fetch.
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    broker_epoch: int = -1
    # The high watermark the follower was last told; a waiting fetch returns when it moves.
    last_sent_hw: int = UNKNOWN_OFFSET


def after_fetch(
    state: FollowerState,
    *,
    fetch_offset: int,
    log_start_offset: int,
    fetch_ms: int,
    leader_leo: int,
    broker_epoch: int,
) -> FollowerState:
    """The state after a follower fetched from ``fetch_offset`` at ``fetch_ms``.

    A fetch at the leader's end means caught up now. A fetch at or past the leader's end as of
    the previous fetch means the follower was caught up at that previous fetch time: it read
    everything the leader had then. Otherwise the caught-up time does not move.
    """
    caught_up = state.last_caught_up_ms
    if fetch_offset >= leader_leo:
        caught_up = max(caught_up, fetch_ms)
    elif state.last_fetch_leader_leo >= 0 and fetch_offset >= state.last_fetch_leader_leo:
        caught_up = max(caught_up, state.last_fetch_ms)
    return FollowerState(
        broker_id=state.broker_id,
        log_end_offset=fetch_offset,
        log_start_offset=log_start_offset,
        last_caught_up_ms=caught_up,
        last_fetch_leader_leo=leader_leo,
        last_fetch_ms=fetch_ms,
        broker_epoch=broker_epoch,
        last_sent_hw=state.last_sent_hw,
    )


class SessionFetch(Protocol):
    """A follower's incremental fetch session as one partition sees it (fetch_session)."""

    def last_fetch_ms(self) -> int | None:
        """The session's last request (a fetch of this partition at its cached offset), or
        None once the partition left the session."""
        ...


def caught_up_in_session(
    followers: Mapping[int, FollowerState],
    sessions: Mapping[int, SessionFetch],
    leader_leo: int,
) -> dict[int, FollowerState]:
    """Follower states to replace just before the leader's end moves on from ``leader_leo``.

    A follower in a fetch session omits a partition while its offset does not change, yet
    each of its requests is a fetch of that partition (Kafka records every session partition
    on every request). So a follower whose recorded end is ``leader_leo`` was caught up at its
    session's last request; once the end moves, that time is what ages towards the shrink.
    Recording it here, rather than on every request, keeps idle partitions free of work.
    """
    changed = {}
    for broker_id, session in sessions.items():
        state = followers.get(broker_id)
        if state is None or state.log_end_offset < leader_leo:
            continue
        seen = session.last_fetch_ms()
        if seen is None or seen <= state.last_caught_up_ms:
            continue
        changed[broker_id] = state._replace(
            last_caught_up_ms=seen,
            last_fetch_leader_leo=leader_leo,
            last_fetch_ms=max(seen, state.last_fetch_ms),
        )
    return changed


def reset_for_leadership(
    state: FollowerState | None, broker_id: int, *, in_isr: bool, now_ms: int, new_leader: bool
) -> FollowerState:
    """A follower's state when this broker becomes (or is re-confirmed as) leader.

    ISR members count as caught up now, so they are not shrunk out before their first fetch;
    others start at 0 so they never hold the high watermark back. A broker that just became
    leader knows nothing of its followers' offsets; one that stays leader keeps them.
    """
    caught_up = now_ms if in_isr else 0
    if new_leader or state is None:
        # Positional (keywords cost a dict per call): unknown offsets, caught up at caught_up.
        return FollowerState(broker_id, UNKNOWN_OFFSET, UNKNOWN_OFFSET, caught_up)
    return state._replace(last_caught_up_ms=caught_up)


def is_caught_up(state: FollowerState, leader_leo: int, now_ms: int, max_lag_ms: int) -> bool:
    """Kafka's ``isCaughtUp``: at the leader's end, or caught up within the allowed lag."""
    if state.log_end_offset == leader_leo:
        return True
    return now_ms - state.last_caught_up_ms <= max_lag_ms


def new_high_watermark(
    *,
    leader_leo: int,
    current_hw: int,
    followers: Mapping[int, FollowerState],
    maximal_isr: Collection[int],
    now_ms: int,
    max_lag_ms: int,
    isr_eligible: Callable[[int], bool],
) -> int | None:
    """The advanced high watermark, or None when it does not move.

    The candidate is the smallest log end offset among the leader and the followers in the
    *maximal* ISR (the committed ISR plus any replica an in-flight AlterPartition is adding, so
    the watermark never passes a replica that may already count as in sync). A caught-up,
    eligible follower about to join the ISR also holds it back, as Kafka does, so that a
    replica entering the ISR is never below the watermark. The watermark never moves back.
    """
    candidate = leader_leo
    for broker_id, state in followers.items():
        if state.log_end_offset >= candidate:
            continue
        in_maximal = broker_id in maximal_isr
        joining = is_caught_up(state, leader_leo, now_ms, max_lag_ms) and isr_eligible(broker_id)
        if in_maximal or joining:
            candidate = state.log_end_offset
    if candidate > current_hw:
        return candidate
    return None


def can_join_isr(
    state: FollowerState, *, high_watermark: int, leader_epoch_start_offset: int
) -> bool:
    """Kafka's ``isFollowerInSync``: at or past the high watermark and the current epoch's start.

    The second condition keeps a follower out until it has fetched at least up to where this
    leader's epoch begins, so it cannot count towards acknowledgements of the new epoch while
    still holding a divergent tail from an older one.
    """
    leo = state.log_end_offset
    return leo >= high_watermark and leo >= leader_epoch_start_offset


def expansion_candidates(
    *,
    followers: Mapping[int, FollowerState],
    replicas: Collection[int],
    isr: Collection[int],
    high_watermark: int,
    leader_epoch_start_offset: int,
    isr_eligible: Callable[[int], bool],
) -> list[int]:
    """Followers that may be added to the ISR now, in broker-id order."""
    return sorted(
        broker_id
        for broker_id, state in followers.items()
        if broker_id in replicas
        and broker_id not in isr
        and isr_eligible(broker_id)
        and can_join_isr(
            state,
            high_watermark=high_watermark,
            leader_epoch_start_offset=leader_epoch_start_offset,
        )
    )


def out_of_sync_replicas(
    *,
    leader_id: int,
    isr: Collection[int],
    followers: Mapping[int, FollowerState],
    leader_leo: int,
    now_ms: int,
    max_lag_ms: int,
) -> list[int]:
    """ISR members (other than the leader) that have not caught up within ``max_lag_ms``.

    A member without any state (never fetched since this broker led) counts from time 0 and is
    therefore out of sync once the lag time has passed since leadership began, which
    ``reset_for_leadership`` sets up.
    """
    out = []
    for broker_id in isr:
        if broker_id == leader_id:
            continue
        state = followers.get(broker_id)
        if state is None or not is_caught_up(state, leader_leo, now_ms, max_lag_ms):
            out.append(broker_id)
    return sorted(out)
