"""A broker never trusts a controller epoch it cannot see in etcd.

The broker watches ``/controller_epoch`` (the epoch and the controller that won it) and checks
every control request against it before the request may touch anything, the broker's own known
epoch included:

* an epoch **higher** than etcd's (after one fresh read: the watch may lag the controller's own
  bump) is refused with NOT_CONTROLLER: nobody won that epoch, so nobody may speak with it;
* an epoch **lower** than etcd's is STALE_CONTROLLER_EPOCH: its controller has been deposed;
* at etcd's epoch, a request naming another ``controller_id`` than the epoch's holder is
  NOT_CONTROLLER. Under mutual TLS the server's peer check has already bound ``controller_id``
  to the caller's certificate, so there the sender *is* the holder.

Without TLS (``--insecure``) a caller's ``controller_id`` is only a claim, and anyone who reads
etcd can claim the holder's id and epoch. So a plaintext broker also confirms, in etcd, what such
a request would make it do that cannot be undone by the next real request:

* a LeaderAndIsr leader change applies only if etcd's partition state has the same leader and
  leader epoch (the controller commits a state before it sends it), so a forged leader epoch
  jump cannot make a follower lead;
* a StopReplica that deletes a replica applies only if etcd shows the topic gone, queued for
  deletion, or no longer assigning the partition to this broker;
* a follower fetches from the address its leader registered in etcd, not from the one a
  LeaderAndIsr names, and AlterPartition and ControlledShutdown go to the controller etcd's
  election names, not to the one an UpdateMetadata names.

What a plaintext broker cannot check, and TLS is there for: an UpdateMetadata or a non-deleting
StopReplica claiming the holder's id at etcd's epoch (wrong metadata for clients, or a paused
follower, until the controller's next request; no data changes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from leasehold.etcd import EtcdClient, EtcdError, Keyspace
from leasehold.etcd.client import KV, WatchEvents
from leasehold.etcd.watch import load_then_watch
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.control import check_sender
from services.broker_agent.model import (
    Code,
    Endpoint,
    LeaderAndIsrPartition,
    StopReplicaPartition,
    TopicPartition,
)

log = logging.getLogger(__name__)

# Topics whose partitions a LeaderAndIsr names more of than this are read whole (one range).
RANGE_ABOVE = 16
READ_TIMEOUT_S = 5.0


class ControlFence:
    """The controller epoch and holder etcd shows (watched), and the checks built on them."""

    def __init__(
        self, etcd: EtcdClient, keyspace: Keyspace, broker_id: int, confirm_in_etcd: bool
    ) -> None:
        self._etcd = etcd
        self._keyspace = keyspace
        self._broker_id = broker_id
        # Without TLS: confirm leader changes and deletions in etcd as well.
        self.confirm_in_etcd = confirm_in_etcd
        self.epoch = 0
        self.holder = -1
        self.loaded = asyncio.Event()
        self._reading: asyncio.Task | None = None

    # ------------------------------------------------------------------ the epoch

    def _apply(self, value: bytes | None) -> None:
        if value is None:
            return  # the epoch key is never deleted; an empty cluster has none yet
        record = metadata_pb2.ControllerEpoch.FromString(value)
        if record.epoch >= self.epoch:
            self.epoch, self.holder = record.epoch, record.controller_id

    async def run(self) -> None:
        """Load the epoch key, then follow it (until cancelled)."""

        async def on_load(kvs: list[KV], _revision: int) -> None:
            for kv in kvs:
                if kv.key == self._keyspace.controller_epoch:
                    self._apply(kv.value)
            self.loaded.set()

        async def on_events(events: WatchEvents, _revision: int) -> None:
            for deleted, key, value in events.changes():
                if not deleted and key == self._keyspace.controller_epoch:
                    self._apply(value)

        await load_then_watch(self._etcd, self._keyspace.controller_epoch, on_load, on_events)

    async def _read(self) -> None:
        kv = await self._etcd.get(self._keyspace.controller_epoch)
        self._apply(kv.value if kv is not None else None)

    async def refresh(self) -> None:
        """One fresh read of the epoch key, shared by every request that needs it meanwhile."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._read())
        try:
            await asyncio.wait_for(asyncio.shield(self._reading), READ_TIMEOUT_S)
        except (EtcdError, TimeoutError) as exc:
            log.warning("cannot read the controller epoch from etcd: %s", exc)

    async def check(
        self, what: str, controller_epoch: int, controller_id: int
    ) -> tuple[Code, str] | None:
        """None if the sender holds ``controller_epoch`` in etcd, else the refusal (logged)."""
        if controller_epoch > self.epoch:
            await self.refresh()
        code = check_sender(
            request_epoch=controller_epoch,
            request_controller_id=controller_id,
            etcd_epoch=self.epoch,
            etcd_holder=self.holder,
        )
        if code == Code.NONE:
            return None
        if controller_epoch > self.epoch:
            reason = f"controller epoch {controller_epoch} is not in etcd"
        elif controller_epoch < self.epoch:
            reason = f"controller epoch {controller_epoch} was superseded"
        else:
            reason = f"controller {controller_id} does not hold epoch {controller_epoch}"
        message = (
            f"{what} refused ({code.name}): {reason} (etcd: epoch {self.epoch}, "
            f"held by controller {self.holder})"
        )
        log.warning(message)
        return code, message

    # ------------------------------------------------ confirmations (plaintext only)

    async def _states(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, bytes]:
        """Partition state values in etcd for ``tps`` (absent ones left out)."""
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        found: dict[TopicPartition, bytes] = {}
        ks = self._keyspace
        for topic, partitions in by_topic.items():
            if len(partitions) > RANGE_ABOVE:
                kvs, _ = await self._etcd.range_prefix(ks.partition_states_prefix(topic))
                for kv in kvs:
                    parsed = ks.parse_topic_key(kv.key)
                    if parsed is not None and parsed[1] is not None:
                        found[TopicPartition(topic, parsed[1])] = kv.value
                continue
            kvs = await asyncio.gather(
                *(self._etcd.get(ks.partition_state(topic, p)) for p in partitions)
            )
            for p, kv in zip(partitions, kvs, strict=True):
                if kv is not None:
                    found[TopicPartition(topic, p)] = kv.value
        return found

    async def unconfirmed_leaders(
        self, states: Sequence[LeaderAndIsrPartition]
    ) -> dict[TopicPartition, Code]:
        """The LeaderAndIsr partitions whose leader and leader epoch etcd does not show."""
        if not self.confirm_in_etcd or not states:
            return {}
        try:
            stored = await self._states(s.tp for s in states)
        except EtcdError as exc:
            log.warning("cannot confirm %d leader change(s) in etcd: %s", len(states), exc)
            return {s.tp: Code.NOT_CONTROLLER for s in states}
        refused: dict[TopicPartition, Code] = {}
        for s in states:
            value = stored.get(s.tp)
            state = metadata_pb2.PartitionState.FromString(value) if value is not None else None
            if state is None or (state.leader, state.leader_epoch) != (s.leader, s.leader_epoch):
                seen = "none" if state is None else f"{state.leader}@{state.leader_epoch}"
                log.warning(
                    "%s: LeaderAndIsr leader %d@%d refused: etcd shows %s",
                    s.tp,
                    s.leader,
                    s.leader_epoch,
                    seen,
                )
                refused[s.tp] = Code.FENCED_LEADER_EPOCH
        return refused

    async def leader_endpoints(self, leader_ids: Iterable[int]) -> tuple[Endpoint, ...]:
        """Where each of ``leader_ids`` registered in etcd (unregistered ones left out)."""
        ids = sorted(leader_ids)
        try:
            kvs = await asyncio.gather(*(self._etcd.get(self._keyspace.broker(b)) for b in ids))
        except EtcdError as exc:
            log.warning("cannot read leader registrations from etcd: %s", exc)
            return ()
        out = []
        for kv in kvs:
            if kv is not None:
                reg = metadata_pb2.BrokerRegistration.FromString(kv.value)
                out.append(Endpoint(reg.broker_id, reg.host, reg.port, reg.rack))
        return tuple(out)

    async def unconfirmed_deletions(
        self, partitions: Sequence[StopReplicaPartition]
    ) -> set[TopicPartition]:
        """Deleting StopReplica partitions that etcd still assigns to this broker."""
        deleting = [p for p in partitions if p.delete]
        if not self.confirm_in_etcd or not deleting:
            return set()
        ks = self._keyspace
        topics = sorted({p.topic for p in deleting})
        try:
            assignments = await asyncio.gather(*(self._etcd.get(ks.topic(t)) for t in topics))
            marks = await asyncio.gather(*(self._etcd.get(ks.delete_topic(t)) for t in topics))
        except EtcdError as exc:
            log.warning("cannot confirm %d deletion(s) in etcd: %s", len(deleting), exc)
            return {p.tp for p in deleting}
        kept: dict[str, dict[int, tuple[int, ...]]] = {}
        for topic, kv, mark in zip(topics, assignments, marks, strict=True):
            if kv is None or mark is not None:
                continue  # gone or being deleted: deletions are expected
            assignment = metadata_pb2.TopicAssignment.FromString(kv.value)
            kept[topic] = {p: tuple(r.replicas) for p, r in assignment.partitions.items()}
        refused = {
            p.tp
            for p in deleting
            if p.topic in kept and self._broker_id in kept[p.topic].get(p.partition, ())
        }
        for tp in sorted(refused):
            log.warning("%s: StopReplica deletion refused: etcd still assigns it here", tp)
        return refused
