"""``PlainDelivery``: the generated protobuf classes and nothing else (the package docstring).

Each broker's part of a batch is its LeaderAndIsr, UpdateMetadata and StopReplica built as
generated messages, queued together; a failover sends every broker every partition. What
reaches a broker is what the fast delivery sends (``tests/unit/controller/
test_delivery_oracle.py``), only slower to build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from services.controller.core import (
    BrokerRequests,
    ControllerContext,
    update_metadata_state,
)
from services.controller.delivery import wire
from services.controller.delivery.base import ChannelsOfTheTerm
from services.controller.delivery.channels import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    ChannelSettings,
)
from services.controller.delivery.channels import (
    pages as _pages,
)
from services.controller.delivery.metadata_cache import headers


class PlainDelivery(ChannelsOfTheTerm):
    metadata_cache = None

    def encode_batch(
        self,
        requests: Mapping[int, BrokerRequests],
        host: str,
        port: int,
        page: int = ChannelSettings.max_partitions_per_request,
    ) -> dict[int, tuple]:
        """Per broker: (kind, message) for each request it gets, a request naming more than
        ``page`` partitions as several."""
        out = {}
        for broker_id, req in requests.items():
            lais = [
                wire.leader_and_isr(replace(req, leader_and_isr=c))
                for c in _pages(req.leader_and_isr, page)
            ]
            ums = (
                []
                if req.update_metadata is None
                else [
                    wire.update_metadata(replace(req, update_metadata=c), host, port)
                    for c in _pages(req.update_metadata, page)
                ]
            )
            out[broker_id] = (
                *((LEADER_AND_ISR, r) for r in lais),
                *((UPDATE_METADATA, r) for r in ums),
                (STOP_REPLICA, wire.stop_replica(req)),
            )
        return out

    def send_batch(self, requests: Mapping[int, BrokerRequests]) -> bool:
        channels = self.channels
        if channels is None or not requests:
            return False
        s = channels.settings
        batch = self.encode_batch(requests, *_endpoint(s), s.max_partitions_per_request)
        for broker_id, parts in batch.items():
            channels.queue(broker_id, parts)
        return True

    def send_deleted_topics(self, ctx: ControllerContext, topics: Sequence[str]) -> None:
        if self.channels is not None:
            send_deleted_topics(self.channels, ctx, topics)

    async def push_metadata(self, ctx: ControllerContext) -> str:
        """Every partition with a state, in full, to every registered broker."""
        if self.channels is None:
            return "not sent (no channels)"
        states = tuple(
            s for tp in ctx.all_partitions() if (s := update_metadata_state(ctx, tp)) is not None
        )
        s = self.channels.settings
        host, port = _endpoint(s)
        for header in headers(ctx):
            for chunk in _pages(states, s.max_partitions_per_request):
                request = wire.update_metadata(replace(header, update_metadata=chunk), host, port)
                self.channels.send(
                    header.broker_id, UPDATE_METADATA, request, live_brokers=header.live_brokers
                )
        return f"of {len(states)} partitions queued in full"

    def brokers_up_to_date(self) -> frozenset[int]:
        """None known: every broker is sent everything, as Kafka's controller does."""
        return frozenset()

    def when_digest_answered(self, callback: Callable[[int, bool], None]) -> frozenset[int]:
        """None: no digest is sent."""
        return frozenset()

    def refresh_metadata(self, ctx: ControllerContext) -> None:
        ctx.take_metadata_changes()  # nothing is kept encoded: the changes need no tracking

    def reset_metadata(self) -> None:
        return None


def _endpoint(settings) -> tuple[str, int]:
    return settings.controller_host, settings.controller_port


def send_deleted_topics(channels, ctx: ControllerContext, topics: Sequence[str]) -> None:
    """UpdateMetadata with ``deleted_topics`` to every registered broker."""
    live = tuple(ctx.brokers[b] for b in sorted(ctx.brokers))
    s = channels.settings
    for info in live:
        request = wire.deleted_topics_update(
            controller_id=ctx.controller_id,
            controller_epoch=ctx.controller_epoch,
            broker_epoch=info.epoch,
            live_brokers=live,
            topics=topics,
            controller_host=s.controller_host,
            controller_port=s.controller_port,
        )
        channels.send(info.id, UPDATE_METADATA, request, live_brokers=live)
