"""AlterPartition validation (KIP-497 / KIP-841), pure: exact error per case."""

from __future__ import annotations

import pytest

from leasehold.common.v1 import common_pb2 as E
from leasehold.controller.v1 import controller_pb2
from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from services.controller.flows.alter_partition import validate, validate_broker

TP = TopicPartition("t", 0)
CURRENT = LeaderAndIsr(1, 5, (1, 2), 3, partition_epoch=100)


def _ctx() -> ControllerContext:
    ctx = ControllerContext(9, 3)
    for b, epoch in ((1, 10), (2, 20), (3, 30), (4, 40), (5, 50)):
        ctx.apply_broker_registered(BrokerInfo(b, "h", 1, "", epoch))
    ctx.apply_broker_shutting_down(4)
    ctx.apply_broker_removed(5)
    ctx.apply_topic("t", "tid", {0: ReplicaAssignment((1, 2, 3, 4, 5))})
    ctx.apply_leader_and_isr(TP, CURRENT)
    return ctx


def _data(isr, *, le=5, pe=100, epochs=None, recovering=False, partition=0):
    epochs = epochs or {}
    return controller_pb2.AlterPartitionPartition(
        partition=partition,
        leader_epoch=le,
        partition_epoch=pe,
        leader_recovery_state=(
            E.LEADER_RECOVERY_STATE_RECOVERING if recovering else E.LEADER_RECOVERY_STATE_RECOVERED
        ),
        new_isr_with_epochs=[
            controller_pb2.BrokerState(broker_id=b, broker_epoch=epochs.get(b, -1)) for b in isr
        ],
    )


CASES = [
    # (case, sender, topic id, data, expected error, expected new ISR or None)
    ("expand", 1, "", _data([1, 2, 3]), E.ERROR_CODE_NONE, (1, 2, 3)),
    ("shrink", 1, "tid", _data([1], epochs={1: 10}), E.ERROR_CODE_NONE, (1,)),
    ("no change", 1, "", _data([1, 2]), E.ERROR_CODE_NONE, None),
    (
        "unknown partition",
        1,
        "",
        _data([1], partition=7),
        E.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION,
        None,
    ),
    ("other topic id", 1, "zzz", _data([1]), E.ERROR_CODE_UNKNOWN_TOPIC_ID, None),
    ("not leader", 2, "", _data([1, 2]), E.ERROR_CODE_NOT_LEADER_OR_FOLLOWER, None),
    ("fenced leader epoch", 1, "", _data([1], le=4), E.ERROR_CODE_FENCED_LEADER_EPOCH, None),
    ("unknown leader epoch", 1, "", _data([1], le=6), E.ERROR_CODE_UNKNOWN_LEADER_EPOCH, None),
    ("old partition epoch", 1, "", _data([1], pe=99), E.ERROR_CODE_INVALID_UPDATE_VERSION, None),
    ("new partition epoch", 1, "", _data([1], pe=101), E.ERROR_CODE_INVALID_UPDATE_VERSION, None),
    # A retry of an already-applied change (stale partition epoch, same ISR): success, no write.
    ("retry already applied", 1, "", _data([1, 2], pe=99), E.ERROR_CODE_NONE, None),
    (
        "retry but recovery differs",
        1,
        "",
        _data([1, 2], pe=99, recovering=True),
        E.ERROR_CODE_INVALID_UPDATE_VERSION,
        None,
    ),
    ("leader missing", 1, "", _data([2, 3]), E.ERROR_CODE_INVALID_REQUEST, None),
    ("duplicate", 1, "", _data([1, 2, 2]), E.ERROR_CODE_INVALID_REQUEST, None),
    ("unassigned", 1, "", _data([1, 6]), E.ERROR_CODE_INVALID_REQUEST, None),
    (
        "recovering with isr",
        1,
        "",
        _data([1, 2], recovering=True),
        E.ERROR_CODE_INVALID_REQUEST,
        None,
    ),
    ("back to recovering", 1, "", _data([1], recovering=True), E.ERROR_CODE_INVALID_REQUEST, None),
    ("shutting down", 1, "", _data([1, 4]), E.ERROR_CODE_INELIGIBLE_REPLICA, None),
    ("dead", 1, "", _data([1, 5]), E.ERROR_CODE_INELIGIBLE_REPLICA, None),
    (
        "stale replica epoch",
        1,
        "",
        _data([1, 3], epochs={3: 29}),
        E.ERROR_CODE_INELIGIBLE_REPLICA,
        None,
    ),
    ("matching epochs", 1, "", _data([1, 3], epochs={1: 10, 3: 30}), E.ERROR_CODE_NONE, (1, 3)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_validate(case):
    _, sender, topic_id, data, error, isr = case
    d = validate(_ctx(), sender, "t", topic_id, data)
    assert d.error == error, d.message
    assert (d.new.isr if d.new is not None else None) == isr
    if d.new is not None:  # AlterPartition never changes the leader or its epoch
        assert (d.new.leader, d.new.leader_epoch, d.new.partition_epoch) == (1, 5, 100)


def test_a_recovering_leader_reports_recovered():
    ctx = _ctx()
    ctx.apply_leader_and_isr(TP, LeaderAndIsr(1, 5, (1,), 3, 100, recovering=True))
    assert validate(ctx, 1, "t", "", _data([1], recovering=True)).new is None
    d = validate(ctx, 1, "t", "", _data([1, 2]))
    assert d.error == 0 and d.new.isr == (1, 2) and not d.new.recovering


@pytest.mark.parametrize(
    ("broker", "epoch", "expected"),
    [(1, 10, 0), (1, -1, 0), (1, 9, E.ERROR_CODE_STALE_BROKER_EPOCH),
     (1, 11, E.ERROR_CODE_STALE_BROKER_EPOCH), (5, 50, E.ERROR_CODE_STALE_BROKER_EPOCH)],
)  # fmt: skip
def test_validate_broker(broker, epoch, expected):
    assert validate_broker(_ctx(), broker, epoch)[0] == expected
