"""``FastDelivery``: the default delivery, with every speed mechanism (the package docstring).

* **Encoding once.** A batch's partition states are encoded once for every broker that gets
  them, from pieces kept per value (``channels.send_batch``, ``wire``).
* **Digest-first metadata.** The standby keeps every partition's UpdateMetadata state encoded
  (``metadata_cache``), so a failover's first request costs a join. Each broker is first sent
  only the new epoch, the live brokers and the digest of the states it should hold
  (``leasehold.metadata_digest``): a broker the old controller kept up to date takes it at
  once; any other gets every partition right after, before anything queued behind.
* **Sent once per event.** A state equal to one already queued to the same broker in the same
  controller event is left out (``sent_states``).
* **Held since the failover.** A broker the failover's UpdateMetadata reached is not sent again
  a state it holds from it (``metadata_cache.Held``): the replica state machine's startup
  resends every partition, as Kafka's does.
* **``nothing_queued`` and turns.** A request is marked ``nothing_queued`` when nothing follows
  it, unless a flow announced more (``expect_more``: a broker failure's election chunks), so
  brokers hold their data plane only while control requests keep coming
  (``services.broker_agent.control_priority``); long computations give the senders turns
  (``give_calls_a_turn``) and wait until gRPC has taken what is queued (``wait_issued``).
* **Garbage collection.** The cyclic collector is paused while a bulk change allocates its
  short-lived containers (``bulk_change``), and what a long event built is frozen after it
  (``after_event``, ``leasehold.heap``), so later collections do not walk it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence

from leasehold import channels as grpc_channels
from services.controller.core import BrokerRequests, ControllerContext
from services.controller.delivery.base import ChannelsOfTheTerm
from services.controller.delivery.channels import UPDATE_METADATA, ControllerChannelManager
from services.controller.delivery.metadata_cache import UpdateMetadataCache
from services.controller.delivery.plain import send_deleted_topics
from services.controller.delivery.wire import DigestFirst

log = logging.getLogger(__name__)

# How long the failover waits for gRPC to take its UpdateMetadata, and for the brokers to
# settle it, before computing on anyway.
ISSUE_TIMEOUT_S = 0.5
# An event handled for at least this long is a bulk change of the context: freeze after it.
BULK_EVENT_S = 0.05


class FastDelivery(ChannelsOfTheTerm):
    def __init__(
        self,
        channel_factory: Callable[[], ControllerChannelManager],
        *,
        digest_first: bool = True,
    ) -> None:
        super().__init__(channel_factory)
        self.metadata_cache = UpdateMetadataCache()
        self._pushed: dict[int, DigestFirst] = {}  # the failover's UpdateMetadata per broker
        # False (``--delivery full``): a failover sends every broker every partition, as
        # Kafka's controller does; the same encoding, for comparing the two.
        self.digest_first = digest_first

    # ---- requests --------------------------------------------------------------------------
    def send_batch(self, requests: Mapping[int, BrokerRequests]) -> bool:
        if self.channels is None or not requests:
            return False
        self.channels.send_batch(requests)
        return True

    def send_deleted_topics(self, ctx: ControllerContext, topics: Sequence[str]) -> None:
        if self.channels is not None:
            send_deleted_topics(self.channels, ctx, topics)

    def event_done(self) -> None:
        if self.channels is not None:
            self.channels.forget_sent()

    async def push_metadata(self, ctx: ControllerContext) -> str:
        """Every partition to every registered broker, digest-first from the cache, on the
        wire and settled (or ``ISSUE_TIMEOUT_S`` twice). Returns what happened, for the log."""
        channels = self.channels
        if channels is None:
            return "not sent (no channels)"
        s = channels.settings
        cache = self.metadata_cache
        if not self.digest_first:
            return await self._push_in_full(ctx)
        # The collector stays out until every request is on the wire: at a million partitions
        # its young collections took half of the ~170 ms before the first request left.
        with self.bulk_change():
            requests = cache.digest_first_update_metadata(
                ctx, s.controller_host, s.controller_port, s.max_partitions_per_request
            )
            live = tuple(ctx.brokers[b] for b in sorted(ctx.brokers))
            queued = []
            for b, r in requests.items():
                if channels.send(b, UPDATE_METADATA, r, live_brokers=live):
                    channels.now_holds(b)
                    queued.append(r)
            self._pushed = requests
            settled = await channels.wait_issued(ISSUE_TIMEOUT_S)
        # Every broker reached holds these states once its request is answered: what the
        # failover resends of them is left out (``metadata_cache.Held``). Copied once the
        # requests have left (a million entries, 50-150 ms), from the cache as it was when
        # they were built: only this handler refreshes it, and it has not gone on yet.
        channels.held_states = cache.held()
        # Answered (a broker kept up to date by the old controller takes the digest in a few
        # milliseconds) or, for a broker whose cache differs, sent in full.
        if settled and queued:
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(r.settled.wait() for r in queued)), ISSUE_TIMEOUT_S
                )
            except TimeoutError:
                settled = False
        in_full = sorted(b for b, r in requests.items() if r.in_full)
        return (
            f"(digest {cache.digest().hex()} of {len(cache)} partitions) "
            f"{'settled' if settled else 'still queued or unanswered'} to {len(requests)} "
            f"brokers; sent in full to brokers {in_full or 'none'}"
        )

    def brokers_up_to_date(self) -> frozenset[int]:
        """Brokers that took the failover's digest as their cache's: they had applied every
        UpdateMetadata of the old controller, and so every LeaderAndIsr queued before each of
        them (a broker's requests are answered in order, LeaderAndIsr before the UpdateMetadata
        of the same change). Those not yet answered are not counted."""
        return frozenset(b for b, r in self._pushed.items() if r.in_full is False)

    def when_digest_answered(self, callback: Callable[[int, bool], None]) -> frozenset[int]:
        """Brokers sent the failover's digest that have not answered it yet: as each does,
        ``callback(broker_id, in_full)`` runs (``in_full``: its cache differed)."""
        waiting = []
        for b, r in self._pushed.items():
            if r.in_full is None:
                r.when_answered(functools.partial(callback, b))
                waiting.append(b)
        return frozenset(waiting)

    async def _push_in_full(self, ctx: ControllerContext) -> str:
        """Every partition to every registered broker in full (no digest first), paged, each
        page encoded as it leaves; on the wire (``ISSUE_TIMEOUT_S`` at most)."""
        channels = self.channels
        assert channels is not None
        s = channels.settings
        cache = self.metadata_cache
        pages = cache.lazy_full_update_metadata(
            ctx, s.controller_host, s.controller_port, s.max_partitions_per_request
        )
        live = tuple(ctx.brokers[b] for b in sorted(ctx.brokers))
        channels.held_states = cache.held()
        for b, requests in pages.items():
            for request in requests:
                channels.send(b, UPDATE_METADATA, request, live_brokers=live)
            channels.now_holds(b)
        settled = await channels.wait_issued(ISSUE_TIMEOUT_S)
        return (
            f"(every one of {len(cache)} partitions, in full) "
            f"{'on the wire' if settled else 'still queued'} to {len(pages)} brokers"
        )

    # ---- the standby's metadata ------------------------------------------------------------
    def refresh_metadata(self, ctx: ControllerContext) -> None:
        self.metadata_cache.refresh(ctx)

    def reset_metadata(self) -> None:
        self.metadata_cache = UpdateMetadataCache()

    # ---- pacing ----------------------------------------------------------------------------
    def expect_more(self) -> Callable[[], None]:
        if self.channels is None:
            return super().expect_more()
        return self.channels.expect_more()

    async def give_calls_a_turn(self) -> None:
        await grpc_channels.give_calls_a_turn()

    async def wait_issued(self, timeout_s: float, *, idle_only: bool = False) -> bool:
        if self.channels is None:
            return True
        return await self.channels.wait_issued(timeout_s, idle_only=idle_only)

    def queued_marks(self) -> dict[int, int]:
        return {} if self.channels is None else self.channels.queued_marks()

    async def wait_answered(
        self,
        timeout_s: float,
        upto: Mapping[int, int] | None = None,
        *,
        quiet_s: float | None = None,
    ) -> bool:
        if self.channels is None:
            return True
        return await self.channels.wait_answered(timeout_s, upto, quiet_s=quiet_s)

    def unanswered(self, upto: Mapping[int, int]) -> frozenset[int]:
        return frozenset() if self.channels is None else self.channels.unanswered(upto)

    @contextlib.contextmanager
    def bulk_change(self) -> Iterator[None]:
        """Keep the cyclic garbage collector out of a large state change's critical path (a
        controlled shutdown's answer, a broker failure's elections).

        Moving leadership of 10,000 partitions allocates some 100,000 short-lived containers
        (elections, plan entries, records, request states); each crossing of the collector's
        thresholds would scan the controller's whole long-lived heap (every partition's context
        entries), several times per request. Reference counting frees those objects anyway;
        the collection is left for after. A collector already disabled stays disabled."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if was_enabled:
                gc.enable()

    def after_event(self, seconds: float) -> None:
        if seconds >= BULK_EVENT_S:
            self.heap.settle()
        self.heap.maintain()
