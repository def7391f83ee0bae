"""The controller's role through an etcd outage, on its event handler (no etcd touched):
brokers held live for the grace and carried on when they come back from the same process, the
ones that do not come back dead after it; a suspended office answers brokers NOT_CONTROLLER."""

from __future__ import annotations

import asyncio

from bench.controller_micro import RecordingChannels
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2
from leasehold.etcd.keys import Keyspace
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.controller import Controller
from services.controller.core import BrokerInfo
from services.controller.statelog import StateChangeLog

GRACE = 4.0


def broker(bid: int, epoch: int) -> BrokerInfo:
    return BrokerInfo(bid, "127.0.0.1", 9000 + bid, "", epoch, f"proc-{bid}")


class _Store:
    ks = Keyspace("t")
    mirror: dict = {}

    def clear_fence(self) -> None:
        pass


class Clock:
    now = 500.0

    def __call__(self) -> float:
        return self.now


def _controller(tmp_path) -> tuple[Controller, Clock]:
    c = Controller(
        ControllerConfig(controller_id=1, broker_grace_s=GRACE),
        _Store(),  # type: ignore[arg-type]
        StateChangeLog(str(tmp_path / "sc.log"), controller_id=1),
        lambda: [],
        RecordingChannels,
    )
    c.put = lambda e: None
    clock = Clock()
    c.office.grace._clock = clock
    return c, clock


async def test_standby_holds_brokers_through_the_outage_and_grace(tmp_path):
    c, clock = _controller(tmp_path)
    await c.handle(ev.BrokerChange(tuple(broker(b, 10 + b) for b in (1, 2, 3)), ()))
    await c.handle(ev.EtcdReachability(False))
    clock.now += 15
    await c.handle(ev.EtcdReachability(True))
    await c.handle(ev.BrokerChange((), (1, 2, 3)))  # etcd expired every lease on resuming
    assert set(c.ctx.brokers) == {1, 2, 3}, "held live during the grace"
    await c.handle(ev.BrokerChange((broker(1, 51), broker(2, 52)), ()))
    assert {b: i.epoch for b, i in c.ctx.brokers.items()} == {1: 51, 2: 52, 3: 13}
    await c.handle(ev.GraceExpired())
    assert set(c.ctx.brokers) == {1, 2, 3}, "the grace is not over yet"
    clock.now += GRACE + 0.1
    await c.handle(ev.GraceExpired())
    assert set(c.ctx.brokers) == {1, 2}, "broker 3 never came back: dead"


async def test_without_an_outage_a_deregistration_is_a_death(tmp_path):
    c, _ = _controller(tmp_path)
    await c.handle(ev.BrokerChange(tuple(broker(b, 10 + b) for b in (1, 2)), ()))
    await c.handle(ev.BrokerChange((), (2,)))
    assert set(c.ctx.brokers) == {1}


async def test_a_suspended_office_answers_brokers_not_controller(tmp_path):
    c, _ = _controller(tmp_path)
    c.role.elected(1, 1, 0.0)
    c.role.activate()
    await c.handle(ev.Suspend(c.role.campaign))
    assert c.office.suspended
    future = asyncio.get_running_loop().create_future()
    await c.handle(ev.AlterPartition(controller_pb2.AlterPartitionRequest(broker_id=1), future))
    assert future.result().error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    await c.handle(ev.Resign("the controller lease was lost"))
    assert not c.office.suspended and not c.active


async def test_a_stale_suspend_is_ignored(tmp_path):
    c, _ = _controller(tmp_path)
    c.role.elected(1, 1, 0.0)
    c.role.activate()
    await c.handle(ev.Suspend(c.role.campaign - 1))
    assert not c.office.suspended
