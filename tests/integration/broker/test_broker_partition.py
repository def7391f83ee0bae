"""A leader Partition over a real log: high watermark, ISR proposals and AlterPartition answers,
acks=all outcomes, and the follower-side append."""

from __future__ import annotations

import pytest

from services.broker_agent.log import LogManager, Record, build_batch
from services.broker_agent.model import Code, LeaderAndIsrPartition, TopicPartition
from services.broker_agent.partition import Partition, PartitionError

TP = TopicPartition("p", 0)
LAG = 1_000


class Clock:
    now = 50_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def leader(tmp_path):
    manager = LogManager(tmp_path)
    clock = Clock()

    def make(isr=(1, 2, 3), replicas=(1, 2, 3), epoch=1, eligible=lambda b: True):
        partition = Partition(TP, 1, manager, clock, LAG)
        partition.isr_eligible = eligible
        partition.local_broker_epoch = lambda: 10
        partition.make_leader(
            LeaderAndIsrPartition("p", 0, 1, epoch, tuple(isr), tuple(replicas), partition_epoch=7)
        )
        return partition, clock

    yield make
    manager.close()


def append(partition, *values, acks=-1, min_isr=1, epoch=-1):
    return partition.append_as_leader(
        [Record(v) for v in values],
        current_leader_epoch=epoch,
        required_acks=acks,
        min_insync_replicas=min_isr,
    )


def test_high_watermark_is_the_smallest_isr_offset(leader):
    partition, clock = leader()
    append(partition, b"a", b"b")
    append(partition, b"c")
    assert partition.log.high_watermark == 0
    partition.record_follower_fetch(2, 3, 0, 11)
    assert partition.log.high_watermark == 0  # broker 3 has not fetched yet
    partition.record_follower_fetch(3, 2, 0, 12)
    assert partition.log.high_watermark == 2
    partition.record_follower_fetch(3, 3, 0, 12)
    assert partition.log.high_watermark == 3
    assert partition.acks_all_outcome(3, 1, 2) == Code.NONE
    assert partition.acks_all_outcome(4, 1, 2) is None
    assert partition.acks_all_outcome(3, 1, 4) == Code.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_leader_epoch_start_and_epoch_checks(leader):
    partition, _ = leader(epoch=4)
    append(partition, b"a")
    partition.make_leader(LeaderAndIsrPartition("p", 0, 1, 6, (1,), (1, 2, 3)))
    assert partition.leader_epoch_start_offset == 1
    assert partition.log.end_offset_for_epoch(4) == (4, 1)
    assert partition.log.end_offset_for_epoch(6) == (6, 1)
    for epoch, code in ((5, Code.FENCED_LEADER_EPOCH), (7, Code.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(PartitionError) as caught:
            append(partition, b"x", epoch=epoch)
        assert caught.value.code == code
    # ISR is [1] now: the leader alone moves the watermark.
    append(partition, b"b", epoch=6)
    assert partition.log.high_watermark == 2
    assert partition.acks_all_outcome(2, 4, 1) == Code.NOT_LEADER_OR_FOLLOWER


def test_not_enough_replicas_refuses_before_appending(leader):
    partition, _ = leader(isr=(1,))
    with pytest.raises(PartitionError) as caught:
        append(partition, b"a", min_isr=2)
    assert caught.value.code == Code.NOT_ENOUGH_REPLICAS
    assert partition.log.log_end_offset == 0
    assert append(partition, b"a", acks=1, min_isr=2).first_offset == 0


def test_expansion_proposal_and_controller_answers(leader):
    partition, clock = leader(isr=(1, 2), eligible=lambda b: b != 4, replicas=(1, 2, 3, 4))
    append(partition, b"a")
    partition.record_follower_fetch(2, 1, 0, 21)
    assert partition.log.high_watermark == 1
    assert partition.propose_expansion() is None  # 3 and 4 never fetched
    partition.record_follower_fetch(4, 1, 0, 24)  # caught up but ineligible (fenced)
    assert partition.propose_expansion() is None
    partition.record_follower_fetch(3, 1, 0, 23)
    proposal = partition.propose_expansion()
    assert proposal.new_isr == (1, 2, 3)
    assert proposal.broker_epochs == ((1, 10), (2, 21), (3, 23))
    assert (proposal.leader_epoch, proposal.partition_epoch) == (1, 7)
    assert partition.maximal_isr == {1, 2, 3}
    assert partition.propose_expansion() is None  # one change in flight at a time
    # A transient error lets us propose again.
    assert not partition.complete_isr_change(proposal, error=Code.NOT_CONTROLLER)
    assert partition.pending is None
    proposal = partition.propose_expansion()
    # A stale-state error keeps it pending until a LeaderAndIsr arrives.
    assert not partition.complete_isr_change(proposal, error=Code.INVALID_UPDATE_VERSION)
    assert partition.pending is proposal
    partition.pending = None
    proposal = partition.propose_expansion()
    assert partition.complete_isr_change(
        proposal, error=Code.NONE, isr=(1, 2, 3), leader_epoch=1, partition_epoch=8
    )
    assert (partition.isr, partition.partition_epoch, partition.pending) == ((1, 2, 3), 8, None)


def test_shrink_proposal_removes_lagging_members_only(leader):
    partition, clock = leader()
    append(partition, b"a")
    partition.record_follower_fetch(2, 1, 0, 21)
    partition.record_follower_fetch(3, 0, 0, 23)
    clock.now += LAG + 1
    proposal = partition.propose_shrink()
    assert proposal.new_isr == (1, 2)
    # While the shrink is pending the old ISR still holds the watermark.
    assert partition.maximal_isr == {1, 2, 3}
    assert partition.log.high_watermark == 0
    assert partition.complete_isr_change(
        proposal, error=Code.NONE, isr=(1, 2), leader_epoch=1, partition_epoch=8
    )
    assert partition.log.high_watermark == 1
    # An answer for an older leader epoch is not applied.
    partition.record_follower_fetch(2, 0, 0, 21)
    clock.now += LAG + 1
    append(partition, b"b")
    proposal = partition.propose_shrink()
    assert not partition.complete_isr_change(
        proposal, error=Code.NONE, isr=(1,), leader_epoch=0, partition_epoch=9
    )
    assert partition.isr == (1, 2)


def test_follower_appends_verbatim_and_adopts_the_leaders_watermark(tmp_path):
    manager = LogManager(tmp_path)
    try:
        follower = Partition(TP, 2, manager, Clock(), LAG)
        follower.make_follower(LeaderAndIsrPartition("p", 0, 1, 3, (1, 2), (1, 2)))
        data = build_batch(0, 3, [Record(b"a"), Record(b"b")], 1_000)
        info = follower.append_fetched(3, 0, data, leader_hw=1, leader_start=0)
        assert (info.first_offset, info.last_offset) == (0, 1)
        assert follower.log.high_watermark == 1
        assert follower.log.read(0, 1 << 20).records == data
        with pytest.raises(PartitionError) as caught:
            follower.append_fetched(3, 0, data, leader_hw=2, leader_start=0)
        assert caught.value.code == Code.OFFSET_OUT_OF_RANGE
        with pytest.raises(PartitionError) as caught:
            follower.append_fetched(2, 2, data, leader_hw=2, leader_start=0)
        assert caught.value.code == Code.FENCED_LEADER_EPOCH
    finally:
        manager.close()


def test_unclean_leader_marks_the_partition_recovered_before_growing_the_isr(tmp_path):
    manager = LogManager(tmp_path)
    try:
        partition = Partition(TP, 1, manager, Clock(), LAG)
        partition.make_leader(
            LeaderAndIsrPartition("p", 0, 1, 2, (1,), (1, 2), leader_recovery_state=2)
        )
        partition.record_follower_fetch(2, 0, 0, 5)
        assert partition.propose_expansion() is None  # no growth while RECOVERING
        proposal = partition.propose_recovered()
        assert (proposal.new_isr, proposal.leader_recovery_state) == ((1,), 1)
        assert partition.complete_isr_change(
            proposal, error=Code.NONE, isr=(1,), leader_epoch=2, partition_epoch=1
        )
        assert partition.propose_recovered() is None
        assert partition.propose_expansion().new_isr == (1, 2)
    finally:
        manager.close()
