"""The fencing and per-partition rules of the control requests (seed 001 §3, KIP-380)."""

from __future__ import annotations

import pytest

from services.broker_agent.control import (
    Hosted,
    PartitionDecision,
    Transition,
    check_request,
    is_broker_epoch_stale,
    leader_and_isr_decision,
    leader_epoch_check,
    stop_replica_decision,
)
from services.broker_agent.model import Code, LeaderAndIsrPartition, TopicPartition

LOCAL = 1


@pytest.mark.parametrize(
    ("request_epoch", "current", "stale"),
    [
        (-1, 50, False),  # unknown epoch: never stale
        (50, 50, False),
        (49, 50, True),
        (51, 50, False),  # the controller learned our new epoch first
        (0, -1, False),
    ],
)
def test_broker_epoch_staleness(request_epoch, current, stale):
    assert is_broker_epoch_stale(request_epoch, current) is stale


@pytest.mark.parametrize(
    ("req_ctrl", "known_ctrl", "req_broker", "cur_broker", "expected"),
    [
        (3, 3, 10, 10, Code.NONE),
        (4, 3, 10, 10, Code.NONE),
        (2, 3, 10, 10, Code.STALE_CONTROLLER_EPOCH),
        (3, 3, 9, 10, Code.STALE_BROKER_EPOCH),
        (2, 3, 9, 10, Code.STALE_BROKER_EPOCH),  # broker epoch is checked first
        (1, -1, -1, 10, Code.NONE),
    ],
)
def test_whole_request_fencing(req_ctrl, known_ctrl, req_broker, cur_broker, expected):
    assert (
        check_request(
            request_controller_epoch=req_ctrl,
            known_controller_epoch=known_ctrl,
            request_broker_epoch=req_broker,
            current_broker_epoch=cur_broker,
        )
        == expected
    )


def state(leader: int, epoch: int, replicas=(1, 2, 3)) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition("t", 0, leader, epoch, tuple(replicas), tuple(replicas))


@pytest.mark.parametrize(
    ("request_state", "hosted", "current_epoch", "expected"),
    [
        (state(1, 0), Hosted.NONE, -1, PartitionDecision(Transition.BECOME_LEADER)),
        (state(2, 0), Hosted.NONE, -1, PartitionDecision(Transition.BECOME_FOLLOWER)),
        (state(1, 5), Hosted.ONLINE, 4, PartitionDecision(Transition.BECOME_LEADER)),
        (state(3, 5), Hosted.ONLINE, 4, PartitionDecision(Transition.BECOME_FOLLOWER)),
        (state(1, 4), Hosted.ONLINE, 4, PartitionDecision(error=Code.STALE_CONTROLLER_EPOCH)),
        (state(1, 3), Hosted.ONLINE, 4, PartitionDecision(error=Code.STALE_CONTROLLER_EPOCH)),
        (
            state(2, 5, replicas=(2, 3)),
            Hosted.ONLINE,
            4,
            PartitionDecision(error=Code.UNKNOWN_TOPIC_OR_PARTITION),
        ),
        (
            state(2, 5, replicas=(2, 3)),
            Hosted.NONE,
            -1,
            PartitionDecision(error=Code.UNKNOWN_TOPIC_OR_PARTITION),
        ),
        (state(1, 5), Hosted.OFFLINE, 4, PartitionDecision(error=Code.KAFKA_STORAGE_ERROR)),
        # A stale epoch is reported as stale even if we are no longer a replica.
        (
            state(2, 3, replicas=(2, 3)),
            Hosted.ONLINE,
            4,
            PartitionDecision(error=Code.STALE_CONTROLLER_EPOCH),
        ),
    ],
)
def test_leader_and_isr_partition_decision(request_state, hosted, current_epoch, expected):
    got = leader_and_isr_decision(
        request_state, hosted=hosted, current_leader_epoch=current_epoch, local_broker_id=LOCAL
    )
    assert got == expected


@pytest.mark.parametrize(
    ("hosted", "current", "requested", "expected"),
    [
        (Hosted.ONLINE, 4, 4, Code.NONE),
        (Hosted.ONLINE, 4, 5, Code.NONE),
        (Hosted.ONLINE, 4, 3, Code.FENCED_LEADER_EPOCH),
        (Hosted.ONLINE, 4, -1, Code.NONE),  # no epoch: no check
        (Hosted.ONLINE, 4, -2, Code.NONE),  # topic deletion sentinel
        (Hosted.NONE, -1, 3, Code.NONE),  # leftover files are still deleted
        (Hosted.OFFLINE, 4, 5, Code.KAFKA_STORAGE_ERROR),
    ],
)
def test_stop_replica_partition_decision(hosted, current, requested, expected):
    got = stop_replica_decision(
        hosted=hosted, current_leader_epoch=current, request_leader_epoch=requested
    )
    assert got == expected


@pytest.mark.parametrize(
    ("requested", "current", "expected"),
    [
        (-1, 7, Code.NONE),
        (7, 7, Code.NONE),
        (6, 7, Code.FENCED_LEADER_EPOCH),
        (8, 7, Code.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_client_leader_epoch_check(requested, current, expected):
    assert leader_epoch_check(requested, current) == expected


def test_topic_partitions_are_tuples_keyed_like_the_log_managers_pairs():
    tp = TopicPartition("t", 3)
    assert (tp == ("t", 3), hash(tp) == hash(("t", 3)), {("t", 3): 1}[tp], str(tp)) == (
        True,
        True,
        1,
        "t-3",
    )
    assert sorted([TopicPartition("t", 10), TopicPartition("s", 2), TopicPartition("t", 2)]) == [
        ("s", 2),
        ("t", 2),
        ("t", 10),
    ]


def test_a_leader_and_isr_state_carries_its_topic_partition():
    state = LeaderAndIsrPartition("t", 4, 1, 7, (1, 2), (1, 2))
    assert state.tp == TopicPartition("t", 4) and isinstance(state.tp, TopicPartition)
    assert state == LeaderAndIsrPartition("t", 4, 1, 7, (1, 2), (1, 2))
    assert "tp=" not in repr(state)
