"""Follower fetch-state rules: adding partitions, truncation offsets, out-of-range, errors."""

from __future__ import annotations

import pytest

from leasehold.javacompat import java_string_hash
from services.broker_agent.follower.fetch_state import (
    EpochEndOffset,
    ErrorAction,
    OffsetTruncation,
    OutOfRangeResolution,
    PartitionFetchState,
    Phase,
    action_for_error,
    after_append,
    fetcher_id,
    initial_state,
    resolve_out_of_range,
    truncation_for,
)
from services.broker_agent.model import Code


def test_state_flags_follow_phase_and_delay():
    fetching = PartitionFetchState(5, 3, Phase.FETCHING)
    assert fetching.is_ready_for_fetch(100) and not fetching.is_truncating(100)
    delayed = fetching.delayed(100, 50)
    assert delayed.delayed_until_ms == 150
    assert not delayed.is_ready_for_fetch(149) and delayed.is_ready_for_fetch(150)
    truncating = PartitionFetchState(5, 3, Phase.TRUNCATING)
    assert truncating.is_truncating(0) and not truncating.is_ready_for_fetch(0)
    assert not PartitionFetchState(5, 3, Phase.FETCHING, lag=1).is_replica_in_sync
    assert PartitionFetchState(5, 3, Phase.FETCHING, lag=0).is_replica_in_sync
    assert not PartitionFetchState(5, 3, Phase.FETCHING).is_replica_in_sync


@pytest.mark.parametrize(
    ("existing", "init_offset", "epoch", "expected"),
    [
        # Same leader epoch: nothing changed, keep the existing state.
        (
            PartitionFetchState(40, 7, Phase.FETCHING, lag=0),
            12,
            7,
            PartitionFetchState(40, 7, Phase.FETCHING, lag=0),
        ),
        # New epoch: truncate first, from the high watermark.
        (
            PartitionFetchState(40, 6, Phase.FETCHING),
            12,
            7,
            PartitionFetchState(12, 7, Phase.TRUNCATING),
        ),
        (None, 12, 7, PartitionFetchState(12, 7, Phase.TRUNCATING)),
        # No valid offset: ask the leader (None).
        (None, -1, 7, None),
    ],
)
def test_initial_state(existing, init_offset, epoch, expected):
    assert initial_state(existing, init_offset=init_offset, leader_epoch=epoch) == expected


def epochs(*entries):
    """A follower epoch cache as ``follower_end_offset_for``: (epoch, start) entries, LEO."""
    *pairs, leo = entries

    def end_for(requested):
        known = [(e, s) for e, s in pairs if e <= requested]
        if not known:
            return None
        epoch = known[-1][0]
        later = [s for e, s in pairs if e > epoch]
        return epoch, (later[0] if later else leo)

    return end_for


@pytest.mark.parametrize(
    ("leader", "fetch_offset", "leo", "cache", "expected"),
    [
        # Leader has no answer: fall back to the high watermark (the fetch offset).
        (EpochEndOffset(-1, -1), 4, 9, epochs((1, 0), 9), OffsetTruncation(4, True)),
        # Offset without epoch (old protocol): min of it and our end.
        (EpochEndOffset(-1, 6), 4, 9, epochs((1, 0), 9), OffsetTruncation(6, True)),
        # Same epoch on both sides: min(leader end, our end of that epoch, our LEO).
        (EpochEndOffset(2, 7), 4, 9, epochs((1, 0), (2, 5), 9), OffsetTruncation(7, True)),
        (EpochEndOffset(2, 12), 4, 9, epochs((1, 0), (2, 5), 9), OffsetTruncation(9, True)),
        (
            EpochEndOffset(1, 8),
            4,
            9,
            epochs((1, 0), (2, 5), 9),
            OffsetTruncation(5, True),
        ),  # our epoch 1 ended at 5
        # KIP-279: leader answers an epoch we do not know (we have 1 and 3, it says 2): cut to
        # the end of our largest smaller epoch and ask again.
        (EpochEndOffset(2, 8), 4, 9, epochs((1, 0), (3, 6), 9), OffsetTruncation(6, False)),
        # The leader answers with an epoch older than all of ours: keep the leader's offset.
        (EpochEndOffset(0, 3), 4, 9, epochs((1, 2), 9), OffsetTruncation(3, True)),
    ],
)
def test_truncation_offset(leader, fetch_offset, leo, cache, expected):
    got = truncation_for(
        leader, fetch_offset=fetch_offset, replica_leo=leo, follower_end_offset_for=cache
    )
    assert got == expected


@pytest.mark.parametrize(
    ("replica_leo", "leader_leo", "leader_start", "expected"),
    [
        # Unclean election left the leader shorter: cut to its end.
        (50, 40, 0, OutOfRangeResolution(40, 0, truncate_to=40)),
        # We were down while the leader deleted old segments: start over at its log start.
        (10, 90, 30, OutOfRangeResolution(30, 60, truncate_fully_at=30)),
        # Our end is within the leader's range: keep our log, fetch from our end.
        (35, 90, 30, OutOfRangeResolution(35, 55)),
        (30, 30, 30, OutOfRangeResolution(30, 0)),
    ],
)
def test_out_of_range_resolution(replica_leo, leader_leo, leader_start, expected):
    got = resolve_out_of_range(
        replica_leo=replica_leo, leader_leo=leader_leo, leader_log_start=leader_start
    )
    assert got == expected


@pytest.mark.parametrize(
    ("code", "request_epoch", "state_epoch", "expected"),
    [
        (Code.OFFSET_OUT_OF_RANGE, 3, 3, ErrorAction.RESET_OFFSET),
        (Code.FENCED_LEADER_EPOCH, 3, 3, ErrorAction.FENCED),
        (Code.FENCED_LEADER_EPOCH, 3, 4, ErrorAction.BACKOFF),
        (Code.UNKNOWN_LEADER_EPOCH, 3, 3, ErrorAction.BACKOFF),
        (Code.NOT_LEADER_OR_FOLLOWER, 3, 3, ErrorAction.BACKOFF),
        (Code.UNKNOWN_TOPIC_OR_PARTITION, 3, 3, ErrorAction.BACKOFF),
        (Code.CORRUPT_MESSAGE, 3, 3, ErrorAction.BACKOFF),
        (Code.KAFKA_STORAGE_ERROR, 3, 3, ErrorAction.FAIL),
        (Code.UNKNOWN_SERVER_ERROR, 3, 3, ErrorAction.BACKOFF),
    ],
)
def test_error_actions(code, request_epoch, state_epoch, expected):
    got = action_for_error(code, request_epoch=request_epoch, state_epoch=state_epoch)
    assert got is expected


def test_after_append_moves_offset_and_lag_and_clears_delay():
    state = PartitionFetchState(10, 2, Phase.FETCHING, lag=7, delayed_until_ms=99)
    assert after_append(state, next_offset=15, leader_hw=20) == PartitionFetchState(
        15, 2, Phase.FETCHING, lag=5, delayed_until_ms=0
    )
    assert after_append(state, next_offset=15, leader_hw=12).lag == 0


@pytest.mark.parametrize(
    ("topic", "partition", "fetchers", "expected"),
    [
        # "t".hashCode() == 116: 31 * 116 + 2 = 3598.
        ("t", 2, 4, 3598 % 4),
        ("t", 2, 1, 0),
        # "hello".hashCode() == 99162322; 31 * it + 1 overflows int32 to -1220935313.
        ("hello", 1, 10, 1220935313 % 10),
    ],
)
def test_fetcher_id_is_kafkas(topic, partition, fetchers, expected):
    assert fetcher_id(java_string_hash(topic), partition, fetchers) == expected
