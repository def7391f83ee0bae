"""Whether a control request comes from the controller etcd shows holding its epoch
(``control.check_sender``, used by ``control_fence``)."""

from __future__ import annotations

import pytest

from services.broker_agent.control import check_sender
from services.broker_agent.model import Code

ETCD_EPOCH, HOLDER = 7, 2


@pytest.mark.parametrize(
    ("name", "epoch", "sender", "expected"),
    [
        ("the holder at etcd's epoch", 7, 2, Code.NONE),
        ("another controller at etcd's epoch", 7, 3, Code.NOT_CONTROLLER),
        ("an epoch etcd has not reached (forged 1000)", 1000, 2, Code.NOT_CONTROLLER),
        ("the next epoch, not yet won", 8, 2, Code.NOT_CONTROLLER),
        ("a deposed controller's epoch", 6, 1, Code.STALE_CONTROLLER_EPOCH),
        ("a superseded epoch claiming the holder", 6, 2, Code.STALE_CONTROLLER_EPOCH),
    ],
)
def test_check_sender(name, epoch, sender, expected):
    assert (
        check_sender(
            request_epoch=epoch,
            request_controller_id=sender,
            etcd_epoch=ETCD_EPOCH,
            etcd_holder=HOLDER,
        )
        == expected
    ), name
