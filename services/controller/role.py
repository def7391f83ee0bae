"""The controller's role through etcd outages: suspended office, and the brokers' grace after.

**Office.** The active controller acts only while etcd confirms its lease. When the lease is no
longer confirmed within the TTL (etcd unreachable, restarting, paused), the election task puts
``Suspend``: the controller stops acting — its broker channels hold every request, timer events
wait, AlterPartition and ControlledShutdown are answered NOT_CONTROLLER (brokers retry) — but
keeps its context. When etcd confirms the *same* lease again and our election key still leads,
the election task puts ``Resume``; the controller resumes office without a new epoch only if
``/controller_epoch`` is still the one it wrote (nothing newer holds the election), and resigns
otherwise. If etcd says the lease is gone, the election task resigns as before.

**Brokers' grace.** An etcd outage can cost brokers their sessions even though no broker failed
(leases expire while etcd is paused). From the moment this controller's own session is
unconfirmed until ``grace_s`` after etcd answers again, a broker registration that disappears is
*held*: the broker stays live in the context (leaders, ISRs and requests unchanged). A held
broker that registers again from the same process (the same ``incarnation_id``, a new broker
epoch) simply carries on: it is sent the metadata and its replicas' states, as a starting
broker is, and nothing is elected. A held broker that comes back as a new process is a bounce,
as it would be without an outage. One that has not come back when the grace ends is dead, and
its failure is handled then. A registration that survived the outage is never touched.

``OutageGrace`` is pure (an injected clock) and tested on its own; ``Controller`` calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from leasehold.clock import Clock
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2
from services.controller import events as ev
from services.controller.config import ControllerConfig
from services.controller.core import BrokerInfo, ControllerContext
from services.controller.core.role import ControllerRole
from services.controller.delivery import BrokerDelivery
from services.controller.events import (
    AlterPartition,
    BrokerChange,
    ControlledShutdown,
    ControllerEvent,
)
from services.controller.statelog import StateChangeLog
from services.controller.store import ControllerStore


class OfficeHost(Protocol):
    """What the office needs of the controller (``Controller`` is the one host)."""

    config: ControllerConfig
    ctx: ControllerContext
    role: ControllerRole
    time: Clock
    delivery: BrokerDelivery
    statelog: StateChangeLog
    store: ControllerStore
    put: Callable[[ControllerEvent], None]
    on_deposed: Callable[[], None]

    @property
    def epoch(self) -> int: ...
    @property
    def epoch_revision(self) -> int: ...
    async def dispatch(self, event: ControllerEvent) -> None: ...
    async def deactivate(self, reason: str, *, rebuild: bool = ...) -> None: ...


log = logging.getLogger(__name__)

# A suspended controller puts its deferred timer events back after this long.
SUSPENDED_RETRY_S = 0.5
# The grace timer fires this much after the grace ends (so ``expire`` finds it over).
GRACE_TIMER_SLACK_S = 0.05


@dataclass(frozen=True)
class GraceVerdict:
    """A broker change seen through the grace: what to act on, and who carries on."""

    change: BrokerChange
    held: tuple[int, ...] = ()  # deregistrations held back now
    resumed: tuple[int, ...] = ()  # held brokers back from the same process


class OutageGrace:
    def __init__(self, grace_s: float, clock: Callable[[], float]) -> None:
        self.grace_s = grace_s
        self._clock = clock
        self._unreachable_since: float | None = None
        self._until = float("-inf")
        self.held: dict[int, BrokerInfo] = {}

    def etcd_unreachable(self) -> None:
        """Our own session could not be confirmed: an outage is under way."""
        if self._unreachable_since is None:
            self._unreachable_since = self._clock()

    def etcd_reachable(self) -> float | None:
        """etcd answered again after an outage: the grace runs ``grace_s`` from now. Returns
        the seconds until it ends (None if there was no outage)."""
        if self._unreachable_since is None:
            return None
        self._unreachable_since = None
        self._until = self._clock() + self.grace_s
        return self.grace_s

    def in_grace(self) -> bool:
        return self._unreachable_since is not None or self._clock() < self._until

    def see(self, event: BrokerChange, known: Mapping[int, BrokerInfo]) -> GraceVerdict:
        """Hold deregistrations of known brokers during the grace; resolve held brokers that
        register again."""
        grace = self.in_grace()
        deregistered: list[int] = []
        held: list[int] = []
        for broker_id in event.deregistered:
            if grace and broker_id in known:
                self.held.setdefault(broker_id, known[broker_id])
                held.append(broker_id)
            elif broker_id not in self.held:
                deregistered.append(broker_id)
        resumed: list[int] = []
        for info in event.registered:
            old = self.held.pop(info.id, None)
            if old is None:
                continue
            if old.incarnation and old.incarnation == info.incarnation:
                resumed.append(info.id)
            else:  # another process took the id: the held incarnation is gone
                deregistered.append(info.id)
        change = BrokerChange(
            event.registered, tuple(deregistered), tuple(resumed), received_ms=event.received_ms
        )
        return GraceVerdict(change, tuple(held), tuple(resumed))

    def expire(self) -> tuple[int, ...]:
        """Once the grace is over: the held brokers that never came back (now dead)."""
        if self.in_grace() or not self.held:
            return ()
        dead = tuple(sorted(self.held))
        self.held.clear()
        return dead

    def seconds_left(self) -> float:
        return max(0.0, self._until - self._clock())


def answer_not_controller(event: ControllerEvent) -> None:
    """Answer a broker's request with NOT_CONTROLLER (it looks for the controller and
    retries): we are not, or not now, acting as the controller."""
    if isinstance(event, AlterPartition) and not event.future.done():
        event.future.set_result(
            controller_pb2.AlterPartitionResponse(error_code=common_pb2.ERROR_CODE_NOT_CONTROLLER)
        )
    elif isinstance(event, ControlledShutdown) and not event.future.done():
        event.future.set_result(
            controller_pb2.ControlledShutdownResponse(
                error_code=common_pb2.ERROR_CODE_NOT_CONTROLLER
            )
        )


class Office:
    """The role events of one controller (``Controller`` owns one): suspension, resumption,
    etcd reachability, the brokers' grace. ``intercept`` takes the events that are the role's
    own, and those a suspended controller must not act on now."""

    def __init__(self, c: OfficeHost) -> None:
        self.c = c
        self.grace = OutageGrace(grace_s=c.config.broker_grace_s, clock=c.time.now)

    async def intercept(self, event: ControllerEvent) -> bool:
        """Handle ``event`` if it is the role's; True if nothing else should."""
        c = self.c
        if isinstance(event, ev.Suspend):
            if event.generation == c.role.campaign:
                self._suspend()
        elif isinstance(event, ev.Resume):
            if event.generation == c.role.campaign:
                await self._resume()
        elif isinstance(event, ev.EtcdReachability):
            self._reachability(event.reachable)
        elif isinstance(event, ev.GraceExpired):
            dead = self.grace.expire()
            if dead:
                log.warning("brokers %s did not register again within the grace: dead", dead)
                await c.dispatch(BrokerChange((), dead))
        elif not self.suspended:
            return False
        elif isinstance(event, AlterPartition | ControlledShutdown):
            answer_not_controller(event)
        elif isinstance(event, ev.RetryTopicDeletion | ev.StopReplicaResult):
            c.time.call_later(SUSPENDED_RETRY_S, c.put, event)
        elif isinstance(event, ev.AutoRebalance):
            pass  # the scheduler puts the next one
        else:
            return False
        return True

    def through_grace(self, event: BrokerChange) -> BrokerChange:
        verdict = self.grace.see(event, self.c.ctx.brokers)
        if verdict.held:
            log.warning(
                "brokers %s deregistered during an etcd outage: held live for the grace "
                "(%.1f s after etcd answers)",
                list(verdict.held),
                self.grace.grace_s,
            )
        if verdict.resumed:
            log.info("brokers %s registered again after the etcd outage", list(verdict.resumed))
        return verdict.change

    def restore_held(self) -> BrokerChange | None:
        """Held brokers, to put back into a context rebuilt from the watch mirror (which no
        longer has their registrations)."""
        held = tuple(self.grace.held.values())
        return BrokerChange(held, ()) if held else None

    def _reachability(self, reachable: bool) -> None:
        if not reachable:
            self.grace.etcd_unreachable()
            return
        left = self.grace.etcd_reachable()
        if left is not None:
            log.info("etcd answers again; brokers' grace for %.1f s", left)
            self.c.time.call_later(left + GRACE_TIMER_SLACK_S, self.c.put, ev.GraceExpired())

    @property
    def suspended(self) -> bool:
        return self.c.role.suspended

    def _suspend(self) -> None:
        c = self.c
        if not c.role.suspend():
            return
        c.delivery.hold()
        log.warning("controller lease not confirmed: office suspended (epoch %d)", c.epoch)
        c.statelog.controller("suspended", c.epoch)

    async def _resume(self) -> None:
        """Resume if ``/controller_epoch`` is still the one we wrote; else resign."""
        c = self.c
        if not self.suspended:
            return
        if c.epoch_revision:
            kv = await c.store.client.get(c.store.ks.controller_epoch)
            if kv is None or kv.mod_revision != c.epoch_revision:
                log.warning("controller epoch moved while our office was suspended: deposed")
                await c.deactivate("a newer controller epoch was written during an etcd outage")
                c.on_deposed()
                return
        c.role.resume()
        c.delivery.release()
        log.warning("controller lease confirmed again: office resumed (epoch %d)", c.epoch)
        c.statelog.controller("resumed", c.epoch)
