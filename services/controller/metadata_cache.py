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
"""

from __future__ import annotations

from services.controller import wire
from services.controller.core import (
    BrokerRequests,
    ControllerContext,
    TopicPartition,
    update_metadata_state,
)


class UpdateMetadataCache:
    def __init__(self) -> None:
        self._entries: dict[TopicPartition, bytes] = {}
        self._order: tuple[TopicPartition, ...] | None = ()  # sorted keys; None when stale
        self._body: bytes | None = b""  # the joined entries; None when stale

    def __len__(self) -> int:
        return len(self._entries)

    def refresh(self, ctx: ControllerContext) -> int:
        """Re-encode the partitions ``ctx`` changed since the last refresh; how many."""
        everything, changed = ctx.take_metadata_changes()
        if everything:
            targets: tuple[TopicPartition, ...] | frozenset[TopicPartition] = ctx.all_partitions()
            stale = self._entries.keys() - set(targets)
            if stale:
                self._entries = {tp: b for tp, b in self._entries.items() if tp not in stale}
                self._order = None
        else:
            targets = changed
        entries = self._entries
        for tp in targets:
            state = update_metadata_state(ctx, tp)
            if state is None:
                if entries.pop(tp, None) is not None:
                    self._order = None
                continue
            if tp not in entries:
                self._order = None
            entries[tp] = wire.update_metadata_body((state,))
        if targets:
            self._body = None
        return len(targets)

    def body(self) -> bytes:
        """All cached partition states, in partition order, ready to follow a header."""
        if self._body is None:
            if self._order is None:
                self._order = tuple(sorted(self._entries))
            entries = self._entries
            self._body = b"".join([entries[tp] for tp in self._order])
        return self._body

    def full_update_metadata(
        self, ctx: ControllerContext, controller_host: str, controller_port: int
    ) -> dict[int, wire.EncodedRequest]:
        """Per registered broker, UpdateMetadata naming every partition that has a leader/ISR
        state (what ``RequestBatch.add_update_metadata(all brokers, all partitions)`` sends),
        stamped with the context's controller id and epoch and the broker's epoch."""
        self.refresh(ctx)
        body = self.body()
        brokers = ctx.brokers
        live = tuple(brokers[b] for b in sorted(brokers))
        out: dict[int, wire.EncodedRequest] = {}
        for info in live:
            header = BrokerRequests(
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
            out[info.id] = wire.encoded_update_metadata(
                header, controller_host, controller_port, body, len(self._entries)
            )
        return out
