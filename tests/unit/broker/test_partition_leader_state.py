"""A new (or re-elected) leader's follower states and high watermark, on a real log."""

from __future__ import annotations

import pytest

from services.broker_agent.log import LogManager, Record
from services.broker_agent.model import LeaderAndIsrPartition, TopicPartition
from services.broker_agent.partition import Partition
from services.broker_agent.replica_state import FollowerState

NOW = 5_000


@pytest.fixture
def partition(tmp_path):
    logs = LogManager(tmp_path)
    yield Partition(TopicPartition("t", 0), 1, logs, lambda: NOW, 30_000)
    logs.close()


def leader_state(
    epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3)
) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition("t", 0, 1, epoch, isr, replicas, partition_epoch=epoch)


def test_a_new_leader_knows_nothing_of_its_followers(partition):
    partition.make_leader(leader_state(1, (1, 2)))
    assert partition.followers == {
        2: FollowerState(2, last_caught_up_ms=NOW),  # in the ISR: caught up now
        3: FollowerState(3, last_caught_up_ms=0),
    }
    assert (partition.leader_epoch_start_offset, partition.log.epoch_pairs()) == (0, [(1, 0)])


def test_a_re_elected_leader_keeps_its_followers_offsets(partition):
    partition.make_leader(leader_state(1, (1, 2)))
    partition.append_as_leader(
        [Record(b"a"), Record(b"b")], current_leader_epoch=1, required_acks=1, min_insync_replicas=1
    )
    partition.followers[2] = FollowerState(2, 2, 0, 100, 2, 100, 9, 1)
    partition.make_leader(leader_state(2, (1, 3)))
    assert partition.followers == {
        2: FollowerState(2, 2, 0, 0, 2, 100, 9, 1),  # out of the ISR now: caught up at 0
        3: FollowerState(3, last_caught_up_ms=NOW),
    }
    assert (partition.leader_epoch_start_offset, partition.log.epoch_pairs()) == (
        2,
        [(1, 0), (2, 2)],
    )


@pytest.mark.parametrize(
    ("appended", "hw", "follower_end", "expected_hw", "moved"),
    [
        (0, 0, -1, 0, False),  # an empty log: the watermark is at its end already
        (3, 3, -1, 3, False),  # at the end: nothing can move it (however far behind the ISR)
        (3, 0, -1, 0, False),  # an ISR follower that has not fetched holds it
        (3, 0, 2, 2, True),
        (3, 1, 3, 3, True),
        (3, 2, 1, 2, False),  # never backwards
    ],
)
def test_the_high_watermark_moves_up_to_the_slowest_isr_member(
    partition, appended, hw, follower_end, expected_hw, moved
):
    partition.make_leader(leader_state(1, (1, 2), replicas=(1, 2)))
    for _ in range(appended):
        partition.log.append_as_leader([Record(b"r")], 1)
    partition.log.update_high_watermark(hw)
    partition.followers[2] = FollowerState(2, follower_end, last_caught_up_ms=NOW)
    assert partition.maybe_increment_high_watermark() is moved
    assert partition.log.high_watermark == expected_hw


class Session:
    def __init__(self, last_ms: int) -> None:
        self.last_ms = last_ms

    def last_fetch_ms(self) -> int | None:
        return self.last_ms


def test_an_append_credits_followers_idle_at_the_end_with_their_sessions_last_request(partition):
    partition.make_leader(leader_state(1, (1, 2, 3)))
    partition.followers[2] = FollowerState(2, 0, 0, 100, 0, 100)  # idle at the end (0)
    partition.followers[3] = FollowerState(3, -1, 0, 100)  # has not fetched: not at the end
    partition.note_session_fetch(2, Session(4_000))
    partition.note_session_fetch(3, Session(4_000))
    partition.append_as_leader(
        [Record(b"a")], current_leader_epoch=1, required_acks=1, min_insync_replicas=1
    )
    assert [partition.followers[r].last_caught_up_ms for r in (2, 3)] == [4_000, 100]


def test_sessions_of_replicas_moved_away_or_of_a_former_leader_are_dropped(partition):
    partition.make_leader(leader_state(1, (1, 2, 3)))
    for replica in (2, 3):
        partition.note_session_fetch(replica, Session(4_000))
    partition.make_leader(leader_state(2, (1, 2), replicas=(1, 2)))
    assert list(partition.session_fetches) == [2]
    partition.make_follower(LeaderAndIsrPartition("t", 0, 2, 3, (1, 2), (1, 2)))
    assert partition.session_fetches == {}
