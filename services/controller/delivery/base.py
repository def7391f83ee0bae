"""What both deliveries share: the term's per-broker channels (``channels``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

from leasehold.heap import HeapFreezer
from services.controller.core import BrokerInfo
from services.controller.delivery.channels import ControllerChannelManager


class ChannelsOfTheTerm:
    """Opens the channels when a term starts and closes them when it ends; broker changes in
    between go to them."""

    def __init__(self, channel_factory: Callable[[], ControllerChannelManager]) -> None:
        self._factory = channel_factory
        self.channels: ControllerChannelManager | None = None
        self.heap = HeapFreezer(enabled=False)  # the service's main enables it

    def open(self, brokers: Iterable[BrokerInfo], *, held: bool) -> None:
        """A channel to every broker; ``held``: nothing leaves until ``release``."""
        self.channels = self._factory()
        if held:
            self.channels.hold()
        for info in brokers:
            self.channels.add_broker(info)

    async def close(self) -> None:
        if self.channels is not None:
            channels, self.channels = self.channels, None
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

    async def wait_answered(self, timeout_s: float, upto: Mapping[int, int] | None = None) -> bool:
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
