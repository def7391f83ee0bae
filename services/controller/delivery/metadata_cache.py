"""Every partition's UpdateMetadata state kept encoded, so a failover's first request is cheap.

A new controller must tell every broker about every partition before anything else (seed 003:
UpdateMetadata before any LeaderAndIsr). Building that request from the context costs a few
microseconds per partition, seconds at 100,000 partitions, all of it between the epoch bump and
the moment brokers learn the new epoch. So the hot standby keeps each partition's state encoded
(``wire.update_metadata_body`` of that one state) and re-encodes only what the context reports
changed (``ControllerContext.take_metadata_changes``) each time it has applied a watch batch.
Taking over then costs a join of the cached bytes and one small header per broker.

The cache reads the context through ``update_metadata_state``, the function the request batch
uses, so both say the same thing about a partition.

It also keeps the digest of the states a broker caches after applying them all (every entry
but those of topics being deleted, which brokers drop: ``leasehold.metadata_digest``). The
failover sends each broker that digest alone first (``digest_first_update_metadata``): a
broker the old controller kept up to date already holds exactly these states and takes the new
epoch without decoding the cluster again; any other broker gets every partition.
"""

from __future__ import annotations

import functools

from leasehold import metadata_digest
from services.controller.core import (
    LEADER_DURING_DELETE,
    BrokerRequests,
    ControllerContext,
    TopicPartition,
    UpdateMetadataPartitionState,
    update_metadata_state,
)
from services.controller.delivery import wire


class UpdateMetadataCache:
    def __init__(self) -> None:
        self._entries: dict[TopicPartition, bytes] = {}
        self._hashes: dict[TopicPartition, int] = {}  # of the entries brokers keep
        self._digest = 0
        self._order: tuple[TopicPartition, ...] | None = ()  # sorted keys; None when stale
        # The joined entries, in pages of the size given (None: one page); cleared when stale.
        self._bodies: dict[int | None, list[tuple[bytes, int]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def held(self) -> Held:
        """What a broker holds once it took this cache's digest or every partition of it."""
        return Held(dict(self._entries))

    def refresh(self, ctx: ControllerContext) -> int:
        """Re-encode the partitions ``ctx`` changed since the last refresh; how many."""
        everything, changed = ctx.take_metadata_changes()
        if everything:
            targets: tuple[TopicPartition, ...] | frozenset[TopicPartition] = ctx.all_partitions()
            stale = self._entries.keys() - set(targets)
            if stale:
                self._entries = {tp: b for tp, b in self._entries.items() if tp not in stale}
                gone = [self._hashes.pop(tp, 0) for tp in stale]
                self._digest = metadata_digest.combine(self._digest, removed=sum(gone))
                self._order = None
        else:
            targets = changed
        entries, hashes = self._entries, self._hashes
        state_hash = metadata_digest.state_hash
        digest = self._digest
        for tp in targets:
            state = update_metadata_state(ctx, tp)
            digest -= hashes.pop(tp, 0)
            if state is None:
                if entries.pop(tp, None) is not None:
                    self._order = None
                continue
            if tp not in entries:
                self._order = None
            encoded = wire.update_metadata_state_bytes(state)
            entries[tp] = wire.update_metadata_entry(encoded)
            if state.leader != LEADER_DURING_DELETE:
                hashes[tp] = added = state_hash(encoded)
                digest += added
        self._digest = metadata_digest.combine(digest)
        if targets:
            self._bodies.clear()
        return len(targets)

    def digest(self) -> bytes:
        """The digest of the states a broker caches once it has applied every entry."""
        return metadata_digest.to_bytes(self._digest)

    def body(self) -> bytes:
        """All cached partition states, in partition order, ready to follow a header."""
        return self.bodies(None)[0][0]

    def bodies(self, page: int | None) -> list[tuple[bytes, int]]:
        """``body()`` cut into pages of at most ``page`` states (None: one page), each with how
        many states it holds."""
        found = self._bodies.get(page)
        if found is None:
            if self._order is None:
                self._order = tuple(sorted(self._entries))
            entries, order = self._entries, self._order
            size = page or max(1, len(order))
            found = self._bodies[page] = [
                (b"".join([entries[tp] for tp in order[i : i + size]]), len(order[i : i + size]))
                for i in range(0, len(order), size)
            ] or [(b"", 0)]
        return found

    def full_update_metadata(
        self, ctx: ControllerContext, controller_host: str, controller_port: int
    ) -> dict[int, wire.EncodedRequest]:
        """Per registered broker, UpdateMetadata naming every partition that has a leader/ISR
        state (what ``RequestBatch.add_update_metadata(all brokers, all partitions)`` sends),
        stamped with the context's controller id and epoch and the broker's epoch, in one
        request."""
        self.refresh(ctx)
        return {
            header.broker_id: self.full_pages(header, controller_host, controller_port, None)[0]
            for header in headers(ctx)
        }

    def full_pages(
        self, header: BrokerRequests, controller_host: str, controller_port: int, page: int | None
    ) -> list[wire.EncodedRequest]:
        """``header``'s UpdateMetadata naming every cached partition, in requests of at most
        ``page`` partitions: the first names every live broker, the others the same set as
        unchanged."""
        pages = self.bodies(page)
        unchanged = wire.LiveBrokers(wire.live_digest(header.live_brokers), ())
        return [
            wire.encoded_update_metadata(
                header, controller_host, controller_port, body, count, None if i == 0 else unchanged
            )
            for i, (body, count) in enumerate(pages)
        ]

    def lazy_full_update_metadata(
        self,
        ctx: ControllerContext,
        controller_host: str,
        controller_port: int,
        page: int | None = None,
    ) -> dict[int, list[wire.LazyRequest]]:
        """``full_pages`` per registered broker, each page encoded when it is sent (the
        states are joined once now and shared)."""
        self.refresh(ctx)
        bodies = self.bodies(page)
        out = {}
        for header in headers(ctx):
            unchanged = wire.LiveBrokers(wire.live_digest(header.live_brokers), ())
            out[header.broker_id] = [
                wire.LazyRequest(
                    functools.partial(
                        wire.encoded_update_metadata,
                        header,
                        controller_host,
                        controller_port,
                        body,
                        count,
                        None if i == 0 else unchanged,
                    ),
                    count,
                    header,
                )
                for i, (body, count) in enumerate(bodies)
            ]
        return out

    def digest_first_update_metadata(
        self,
        ctx: ControllerContext,
        controller_host: str,
        controller_port: int,
        page: int | None = None,
    ) -> dict[int, wire.DigestFirst]:
        """Per registered broker, UpdateMetadata digest-only first (the digest of every cached
        state, and of the live set), with ``full_pages`` to follow if the broker's cache
        differs: built then, not before (at a million partitions, tens of megabytes a broker)."""
        self.refresh(ctx)
        digest = self.digest()
        count = len(self._entries)
        out = {}
        for header in headers(ctx):
            out[header.broker_id] = wire.DigestFirst(
                wire.digest_update_metadata(header, controller_host, controller_port, digest),
                functools.partial(self.full_pages, header, controller_host, controller_port, page),
                partition_count=count,
            )
        return out


class Held:
    """What every broker the failover's UpdateMetadata reached holds: the partition states the
    cache had encoded then, except partitions sent since (``touched``).

    A new controller resends what brokers already know: the replica state machine's startup
    moves every replica Online -> Online, queueing LeaderAndIsr to its brokers and every
    partition's UpdateMetadata to every broker (Kafka's ``onControllerFailover``), and a
    starting broker's replicas do the same for their partitions. A broker that took the
    failover's digest (or was sent every partition after it) already holds those states: an
    UpdateMetadata state equal to the one it held then, of a partition no UpdateMetadata has
    named to such a broker since, is left out of its request (``unheld``). Brokers that joined
    later get everything, as before. At a million partitions and a thousand brokers this is
    the difference between a failover costing the brokers nothing and a billion decoded states.
    """

    __slots__ = ("entries", "touched")

    def __init__(self, entries: dict[TopicPartition, bytes]) -> None:
        self.entries = entries  # a copy: the cache moves on
        self.touched: set[TopicPartition] = set()

    def unheld(
        self, states: tuple[UpdateMetadataPartitionState, ...], entries: list[bytes]
    ) -> tuple[tuple[UpdateMetadataPartitionState, ...], list[bytes]]:
        """``states`` (with their encoded ``entries``, in order) a holder still needs; those
        are now ``touched``."""
        held, touched = self.entries, self.touched
        kept: list[UpdateMetadataPartitionState] = []
        kept_entries: list[bytes] = []
        for state, entry in zip(states, entries, strict=True):
            tp = state.tp
            if tp not in touched and held.get(tp) == entry:
                continue
            touched.add(tp)
            kept.append(state)
            kept_entries.append(entry)
        return tuple(kept), kept_entries


def headers(ctx: ControllerContext) -> list[BrokerRequests]:
    """An empty request per registered broker, stamped with its epoch, the controller's id
    and epoch, and every registered broker as live."""
    brokers = ctx.brokers
    live = tuple(brokers[b] for b in sorted(brokers))
    return [
        BrokerRequests(
            broker_id=info.id,
            broker_epoch=info.epoch,
            controller_id=ctx.controller_id,
            controller_epoch=ctx.controller_epoch,
            leader_and_isr=(),
            live_leaders=(),
            stop_replica=(),
            update_metadata=(),
            live_brokers=live,
        )
        for info in live
    ]
