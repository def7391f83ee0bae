"""What both deliveries share: the term's per-broker channels (``channels``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

from leasehold.heap import HeapFreezer
from services.controller.core import BrokerInfo
from services.controller.delivery.channels import ControllerChannelManager


class ChannelsOfTheTerm:
    """Opens the channels when a term starts and closes them when it ends; broker changes in
    between go to them. A standby keeps channels to the registered brokers connected
    (``keep_ready``), and the term it wins starts on them."""

    def __init__(self, channel_factory: Callable[[], ControllerChannelManager]) -> None:
        self._factory = channel_factory
        self.channels: ControllerChannelManager | None = None
        # A standby's channels, connected ahead of a failover; nothing is sent on them.
        self._ready: ControllerChannelManager | None = None
        self.heap = HeapFreezer(enabled=False)  # the service's main enables it

    def open(self, brokers: Iterable[BrokerInfo], *, held: bool) -> None:
        """A channel to every broker (the standby's, where it kept them); ``held``: nothing
        leaves until ``release``."""
        channels, self._ready = self._ready, None
        if channels is None:
            channels = self._factory()
        self.channels = channels
        if held:
            channels.hold()
        else:
            channels.release()
        channels.track(brokers)

    def keep_ready(self, brokers: Iterable[BrokerInfo]) -> None:
        """Out of office: channels to exactly ``brokers``, connected now, and their control
        streams open, so that a failover's first requests to them neither wait for 1,000
        connections nor go unary while the streams open. Nothing is sent on them."""
        if self.channels is not None:
            return
        if self._ready is None:
            self._ready = self._factory()
            self._ready.hold()
        self._ready.track(brokers)

    async def close(self) -> None:
        """Close the term's channels and the standby's."""
        both, self.channels, self._ready = (self.channels, self._ready), None, None
        for channels in both:
            if channels is not None:
                await channels.close()

    def add_broker(self, info: BrokerInfo) -> None:
        if self.channels is not None:
            self.channels.add_broker(info)

    def remove_broker(self, broker_id: int) -> None:
        if self.channels is not None:
            self.channels.remove_broker(broker_id)

    def update_broker(self, info: BrokerInfo) -> None:
        if self.channels is not None:
            self.channels.update_broker(info)

    def hold(self) -> None:
        if self.channels is not None:
            self.channels.hold()

    def release(self) -> None:
        if self.channels is not None:
            self.channels.release()

    # Pacing a delivery may leave out: none by default.
    def expect_more(self) -> Callable[[], None]:
        return _nothing

    async def give_calls_a_turn(self) -> None:
        return None

    async def wait_issued(self, timeout_s: float, *, idle_only: bool = False) -> bool:
        return True

    def queued_marks(self) -> dict[int, int]:
        return {}

    async def wait_answered(
        self,
        timeout_s: float,
        upto: Mapping[int, int] | None = None,
        *,
        quiet_s: float | None = None,
    ) -> bool:
        return True

    def unanswered(self, upto: Mapping[int, int]) -> frozenset[int]:
        return frozenset()

    def bulk_change(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def after_event(self, seconds: float) -> None:
        return None

    def event_done(self) -> None:
        return None


def _nothing() -> None:
    return None
