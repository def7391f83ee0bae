"""How the controller's decisions reach the brokers: everything between a built request batch
and the bytes on each broker's channel, behind one interface (``BrokerDelivery``).

The controller's flows decide and queue requests (``RequestBatch``); a delivery encodes them,
keeps the per-broker channels (``channels``: one queue and one sender per broker, retries), and
paces the event loop around them. Two implementations:

* ``FastDelivery`` (the default): partition states encoded once per batch from cached pieces
  (``wire``); the standby's every-partition UpdateMetadata kept encoded (``metadata_cache``)
  and sent digest-first at failover; states already sent to a broker in the same event left
  out (``sent_states``); ``nothing_queued`` held back while a flow announces more
  (``expect_more``); senders given turns during long computations; the cyclic garbage
  collector paused during bulk changes and the heap frozen after them (``leasehold.heap``).
* ``PlainDelivery``: the generated protobuf classes, one request per broker and kind, every
  partition in full at failover, no pacing. It is the reference the fast one is tested against
  (``tests/unit/controller/test_delivery_oracle.py``: the same bytes on the wire), and can run a
  controller (``--delivery plain`` / ``LEASEHOLD_DELIVERY=plain``).

``--delivery full`` is the fast one sending every broker every partition at failover instead of
the digest first, as Kafka's controller does: what the scale benchmark compares digest-first
with.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from services.controller.config import DELIVERIES
from services.controller.core import BrokerInfo, BrokerRequests, ControllerContext
from services.controller.delivery.channels import ControllerChannelManager

ChannelFactory = Callable[[], ControllerChannelManager]


class BrokerDelivery(Protocol):
    channels: ControllerChannelManager | None

    # ---- the term's channels ---------------------------------------------------------------
    def open(self, brokers: Iterable[BrokerInfo], *, held: bool) -> None: ...
    def keep_ready(self, brokers: Iterable[BrokerInfo]) -> None: ...
    async def close(self) -> None: ...
    def add_broker(self, info: BrokerInfo) -> None: ...
    def remove_broker(self, broker_id: int) -> None: ...
    def update_broker(self, info: BrokerInfo) -> None: ...
    def hold(self) -> None: ...
    def release(self) -> None: ...

    # ---- requests --------------------------------------------------------------------------
    def send_batch(self, requests: Mapping[int, BrokerRequests]) -> bool: ...
    def send_deleted_topics(self, ctx: ControllerContext, topics: Sequence[str]) -> None: ...
    async def push_metadata(self, ctx: ControllerContext) -> str: ...
    def brokers_up_to_date(self) -> frozenset[int]: ...
    def when_digest_answered(self, callback: Callable[[int, bool], None]) -> frozenset[int]: ...
    def event_done(self) -> None: ...

    # ---- the standby's metadata ------------------------------------------------------------
    def refresh_metadata(self, ctx: ControllerContext) -> None: ...
    def reset_metadata(self) -> None: ...

    # ---- pacing ----------------------------------------------------------------------------
    def expect_more(self) -> Callable[[], None]: ...
    async def give_calls_a_turn(self) -> None: ...
    async def wait_issued(self, timeout_s: float, *, idle_only: bool = False) -> bool: ...
    def queued_marks(self) -> dict[int, int]: ...
    async def wait_answered(
        self,
        timeout_s: float,
        upto: Mapping[int, int] | None = None,
        *,
        quiet_s: float | None = None,
    ) -> bool: ...
    def unanswered(self, upto: Mapping[int, int]) -> frozenset[int]: ...
    def bulk_change(self) -> contextlib.AbstractContextManager: ...
    def after_event(self, seconds: float) -> None: ...


def make_delivery(kind: str, channel_factory: ChannelFactory) -> BrokerDelivery:
    from services.controller.delivery.fast import FastDelivery
    from services.controller.delivery.plain import PlainDelivery

    if kind == "plain":
        return PlainDelivery(channel_factory)
    if kind == "fast":
        return FastDelivery(channel_factory)
    if kind == "full":
        return FastDelivery(channel_factory, digest_first=False)
    raise ValueError(f"unknown delivery {kind!r}; one of {', '.join(DELIVERIES)}")
