"""A follower's per-partition fetch state and the pure rules that move it (seed 001 §2).

A partition inside a fetcher is Truncating (it must first find where its log stops agreeing
with the leader's) or Fetching (it appends what the leader sends), and either may be Delayed
after an error. Truncation follows KIP-101/KIP-279: ask the leader where our latest epoch ends
and cut there, stepping down one epoch at a time when the leader answers with an epoch we do not
know; only a log with no epoch information falls back to the high watermark. These functions
decide; the fetcher task performs the I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from services.broker_agent.model import UNDEFINED_EPOCH, UNDEFINED_OFFSET, Code


class Phase(Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"


class PartitionFetchState(NamedTuple):
    """Kafka's PartitionFetchState: where to fetch next, under which epoch, and any backoff.

    An immutable named tuple rather than a frozen dataclass (several times cheaper to build):
    a fetcher replaces a partition's state on every move, and a LeaderAndIsr making 5,000
    followers builds two per partition before they fetch. Change one with ``_replace``.
    """

    fetch_offset: int
    current_leader_epoch: int
    phase: Phase
    lag: int | None = None
    delayed_until_ms: int = 0

    def is_delayed(self, now_ms: int) -> bool:
        return self.delayed_until_ms > now_ms

    def is_ready_for_fetch(self, now_ms: int) -> bool:
        return self.phase is Phase.FETCHING and not self.is_delayed(now_ms)

    def is_truncating(self, now_ms: int) -> bool:
        return self.phase is Phase.TRUNCATING and not self.is_delayed(now_ms)

    @property
    def is_replica_in_sync(self) -> bool:
        return self.lag is not None and self.lag <= 0

    def delayed(self, now_ms: int, backoff_ms: int) -> PartitionFetchState:
        # Built directly rather than with ``_replace`` (several times slower): a fetcher whose
        # leader died delays every one of its partitions each round.
        return PartitionFetchState(
            self.fetch_offset,
            self.current_leader_epoch,
            self.phase,
            self.lag,
            now_ms + backoff_ms,
        )


@dataclass(frozen=True)
class EpochEndOffset:
    """The leader's answer to OffsetsForLeaderEpoch (or a fetch's diverging epoch)."""

    epoch: int
    end_offset: int


@dataclass(frozen=True)
class OffsetTruncation:
    """Truncate to ``offset``; ``completed`` False means ask the leader again afterwards."""

    offset: int
    completed: bool


def initial_state(
    existing: PartitionFetchState | None,
    *,
    init_offset: int,
    leader_epoch: int,
    unepoched_end: int | None = None,
) -> PartitionFetchState | None:
    """The state of a partition being added to a fetcher (Kafka's addPartitions).

    - already fetching under the same leader epoch: keep it as it is (nothing changed);
    - unknown initial offset (negative): None — the caller must ask the leader for its offsets
      and truncate (``resolve_out_of_range``);
    - a local log without leader-epoch entries that ends at or below ``init_offset``
      (``unepoched_end``: its log end offset; None when it has entries or is not known):
      Fetching from its end at once. Its truncation would be to the high watermark
      (``truncateToHighWatermark``: no epoch to ask the leader about), which cuts nothing
      there, so the fetcher's truncation round would only arrive at this same state;
    - otherwise Truncating from ``init_offset`` (the local high watermark).
    """
    if existing is not None and existing.current_leader_epoch == leader_epoch:
        return existing
    if init_offset < 0:
        return None
    if unepoched_end is not None and 0 <= unepoched_end <= init_offset:
        return PartitionFetchState(unepoched_end, leader_epoch, Phase.FETCHING)
    return PartitionFetchState(init_offset, leader_epoch, Phase.TRUNCATING)


def truncation_for(
    leader: EpochEndOffset,
    *,
    fetch_offset: int,
    replica_leo: int,
    follower_end_offset_for: Callable[[int], tuple[int, int] | None],
) -> OffsetTruncation:
    """Where to truncate, given the leader's end offset for our latest epoch.

    Kafka's getOffsetTruncationState.

    ``follower_end_offset_for(epoch)`` is our own epoch cache's ``(epoch, end offset)`` for the
    largest epoch <= ``epoch``, or None when we know no such epoch.

    - leader knows no end offset: fall back to the fetch offset (our high watermark);
    - leader gives an offset but no epoch: the smaller of that and our end;
    - we do not know the epoch the leader answered with: cut to the end of our largest smaller
      epoch and ask again (not completed);
    - otherwise: the smallest of the leader's end offset, our end offset for that epoch, and our
      log end.
    """
    if leader.end_offset == UNDEFINED_OFFSET:
        return OffsetTruncation(min(fetch_offset, replica_leo), True)
    if leader.epoch == UNDEFINED_EPOCH:
        return OffsetTruncation(min(leader.end_offset, replica_leo), True)
    ours = follower_end_offset_for(leader.epoch)
    if ours is None:
        return OffsetTruncation(min(leader.end_offset, replica_leo), True)
    our_epoch, our_end = ours
    if our_epoch != leader.epoch:
        return OffsetTruncation(min(our_end, replica_leo), False)
    return OffsetTruncation(min(leader.end_offset, our_end, replica_leo), True)


def known_end(epoch_and_end: tuple[int, int]) -> tuple[int, int] | None:
    """An epoch cache answer as ``truncation_for`` wants it: None when the end is unknown."""
    return None if epoch_and_end[1] < 0 else epoch_and_end


@dataclass(frozen=True)
class OutOfRangeResolution:
    """How to recover from OFFSET_OUT_OF_RANGE (Kafka's fetchOffsetAndTruncate)."""

    fetch_offset: int
    lag: int
    truncate_to: int | None = None
    truncate_fully_at: int | None = None


def resolve_out_of_range(
    *, replica_leo: int, leader_leo: int, leader_log_start: int
) -> OutOfRangeResolution:
    """Pick a new fetch offset from the leader's log end and log start offsets.

    - the leader ends before us (an unclean election left it shorter): cut our log to the
      leader's end and fetch from there;
    - otherwise fetch from the larger of our end and the leader's start; if the leader's start
      is past our end (we were down while it deleted old segments), drop everything and start
      a fresh log at the leader's start.
    """
    if leader_leo < replica_leo:
        return OutOfRangeResolution(fetch_offset=leader_leo, lag=0, truncate_to=leader_leo)
    fetch_offset = max(leader_log_start, replica_leo)
    truncate_fully_at = leader_log_start if leader_log_start > replica_leo else None
    return OutOfRangeResolution(
        fetch_offset=fetch_offset,
        lag=max(0, leader_leo - fetch_offset),
        truncate_fully_at=truncate_fully_at,
    )


@dataclass(frozen=True)
class FetcherSettings:
    """Kafka's replica.fetch.* settings as one fetcher task uses them."""

    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 10 * 1024 * 1024
    partition_max_bytes: int = 1024 * 1024
    backoff_ms: int = 1_000
    flush: bool = True  # fsync appended data before reporting it in the next fetch


class ErrorAction(Enum):
    """What the fetcher does with a partition whose fetch answered an error."""

    BACKOFF = "backoff"  # keep it, retry after replica.fetch.backoff.ms
    RESET_OFFSET = "reset_offset"  # ask the leader's offsets, truncate (out of range)
    FENCED = "fenced"  # our epoch is stale: stop and await a new LeaderAndIsr
    FAIL = "fail"  # local storage failed: stop fetching the partition


def action_for_error(code: Code, *, request_epoch: int, state_epoch: int) -> ErrorAction:
    """The per-error handling of processFetchRequest and of the truncation phase.

    FENCED_LEADER_EPOCH means the leader has a newer epoch than the one we asked with. If our
    state still has that epoch, we wait for the controller to tell us about the new one; if our
    state moved on meanwhile, the answer is about an old request and we just retry.
    """
    if code == Code.OFFSET_OUT_OF_RANGE:
        return ErrorAction.RESET_OFFSET
    if code == Code.FENCED_LEADER_EPOCH:
        return ErrorAction.FENCED if request_epoch == state_epoch else ErrorAction.BACKOFF
    if code == Code.KAFKA_STORAGE_ERROR:
        return ErrorAction.FAIL
    # UNKNOWN_LEADER_EPOCH (the leader has not caught up with our epoch yet),
    # NOT_LEADER_OR_FOLLOWER (leadership moving), UNKNOWN_TOPIC_OR_PARTITION (being created or
    # deleted), CORRUPT_MESSAGE and anything unexpected: back off and retry.
    return ErrorAction.BACKOFF


def after_append(
    state: PartitionFetchState, *, next_offset: int, leader_hw: int
) -> PartitionFetchState:
    """Fetching continues from ``next_offset``; lag is the distance to the leader's watermark."""
    return PartitionFetchState(
        next_offset, state.current_leader_epoch, state.phase, max(0, leader_hw - next_offset), 0
    )


def fetcher_id(topic_hash: int, partition: int, num_fetchers: int) -> int:
    """Kafka's ``abs(31 * topic.hashCode + partition) % num.replica.fetchers``."""
    value = (31 * topic_hash + partition) & 0xFFFFFFFF
    if value >= 0x80000000:
        value -= 0x1_0000_0000
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
    magnitude = 0 if value == -0x80000000 else abs(value)
    return magnitude % num_fetchers
