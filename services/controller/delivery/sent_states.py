"""Partition states one broker's channel already carries in the current controller event.

A broker failure moves the dead broker's replicas to Offline after the partition state machine
re-elected its partitions' leaders. As in Kafka's ZooKeeper controller, that replica step
(``removeReplicasFromIsr``) hands back the unchanged state of every partition whose ISR already
lacks the dead broker, and queues LeaderAndIsr (and its UpdateMetadata fan-out) for it again:
each survivor would be sent the very same states twice in one event, and spend time decoding and
ignoring the second copy on the cores the rest of the failover needs.

Sending a broker a partition state equal to the last one its channel was given in the same
event cannot change what the broker ends up with:

* the channel sends one broker's requests one at a time, in queue order, retrying each until it
  is answered, and drops them only with the channel itself (the broker left, or its endpoint or
  incarnation changed), which drops this memory too (it lives with the channel);
* a LeaderAndIsr state whose leader epoch equals the one a broker applied is ignored
  (STALE_CONTROLLER_EPOCH), and the copy carries the same epoch; the controller only logs the
  per-partition answers of LeaderAndIsr, so nothing is lost by the missing second answer;
* an UpdateMetadata partition state replaces the cached one, and the copy is equal to it;
* a StopReplica resets what the broker knows of a partition, so it makes the channel forget the
  partition's states (a later equal state goes out again), and any request queued outside a
  batch (``ControllerChannelManager.send``) makes it forget everything.

Equality is of the whole state: leader, leader epoch, ISR, partition epoch, controller epoch,
recovery, topic id, replicas, adding and removing replicas, ``is_new`` for LeaderAndIsr; leader
(-2 while its topic is being deleted), offline replicas and the rest for UpdateMetadata. The
memory is kept for one event only (``ControllerChannelManager.forget_sent``): a later event may
have had answers in between, and the memory is released rather than kept for the process.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TypeVar

from services.controller.core import (
    BrokerRequests,
    LeaderAndIsrPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)

State = TypeVar("State", LeaderAndIsrPartitionState, UpdateMetadataPartitionState)


def _unsent(states: tuple[State, ...], sent: dict[TopicPartition, State]) -> tuple[State, ...]:
    """``states`` without those equal to the one last sent for their partition; the rest are
    remembered as sent. Returns ``states`` itself when nothing was dropped."""
    kept: list[State] = []
    get = sent.get
    for state in states:
        previous = get(state.tp)
        if previous is not None and (previous is state or previous == state):
            continue
        sent[state.tp] = state
        kept.append(state)
    return states if len(kept) == len(states) else tuple(kept)


class UpdateMetadataSent:
    """The UpdateMetadata states queued in this event to every broker whose channel holds this
    object (never changed once a broker holds it).

    Every broker of a batch gets the same UpdateMetadata states, so brokers that were sent the
    same batches have the same memory: they share one, and a batch's states are checked once
    for all of them (``after``) rather than once per broker, which at a thousand brokers and a
    million partitions created would be a billion lookups. A broker whose memory diverges (a
    StopReplica) gets a copy of its own."""

    __slots__ = ("states", "_after")

    def __init__(self, states: dict[TopicPartition, UpdateMetadataPartitionState]) -> None:
        self.states = states
        # id(batch) -> (batch, what of it was unsent, the memory after it)
        self._after: dict[int, tuple[tuple, tuple, UpdateMetadataSent]] = {}

    def after(
        self, batch: tuple[UpdateMetadataPartitionState, ...]
    ) -> tuple[tuple[UpdateMetadataPartitionState, ...], UpdateMetadataSent]:
        """``batch`` without the states already sent, and the memory once it is sent."""
        found = self._after.get(id(batch))
        if found is not None and found[0] is batch:
            return found[1], found[2]
        states = dict(self.states)
        unsent = _unsent(batch, states)
        following = UpdateMetadataSent(states)
        self._after[id(batch)] = (batch, unsent, following)
        return unsent, following

    def without(self, tps: Iterable[TopicPartition]) -> UpdateMetadataSent:
        states = dict(self.states)
        for tp in tps:
            states.pop(tp, None)
        return UpdateMetadataSent(states)


_NOTHING_SENT = UpdateMetadataSent({})


class SentStates:
    """One broker channel's memory of the partition states queued to it in this event."""

    __slots__ = ("_leader_and_isr", "_update_metadata")

    def __init__(self) -> None:
        self._leader_and_isr: dict[TopicPartition, LeaderAndIsrPartitionState] = {}
        self._update_metadata = _NOTHING_SENT

    def __bool__(self) -> bool:
        return bool(self._leader_and_isr or self._update_metadata.states)

    def unsent_leader_and_isr(
        self, states: tuple[LeaderAndIsrPartitionState, ...]
    ) -> tuple[LeaderAndIsrPartitionState, ...]:
        """The LeaderAndIsr states still worth sending, now remembered as sent."""
        return _unsent(states, self._leader_and_isr)

    def unsent_update_metadata(
        self, states: tuple[UpdateMetadataPartitionState, ...]
    ) -> tuple[UpdateMetadataPartitionState, ...]:
        """The UpdateMetadata partition states still worth sending, now remembered as sent
        (the same tuple for every broker with the same memory)."""
        unsent, self._update_metadata = self._update_metadata.after(states)
        return unsent

    def unsent_requests(self, req: BrokerRequests) -> BrokerRequests:
        """``req`` (one broker's part of a batch) without the partition states its broker was
        already given in this event, taken in queue order: LeaderAndIsr, UpdateMetadata, then
        StopReplica, which forgets its partitions. The live leaders follow the LeaderAndIsr
        states that remain; ``req`` itself is returned when nothing was left out."""
        lai = self.unsent_leader_and_isr(req.leader_and_isr)
        um = req.update_metadata
        if um is not None:
            um = self.unsent_update_metadata(um)
        if req.stop_replica:
            self.stopped(s.tp for s in req.stop_replica)
        if lai is req.leader_and_isr and um is req.update_metadata:
            return req
        leaders = {s.leader_and_isr.leader for s in lai}
        return replace(
            req,
            leader_and_isr=lai,
            live_leaders=tuple(b for b in req.live_leaders if b.id in leaders),
            update_metadata=um,
        )

    def stopped(self, tps: Iterable[TopicPartition]) -> None:
        """A StopReplica for ``tps`` was queued after the states remembered: forget them."""
        tps = tuple(tps)
        for tp in tps:
            self._leader_and_isr.pop(tp, None)
        if self._update_metadata.states:
            self._update_metadata = self._update_metadata.without(tps)

    def clear(self) -> None:
        self._leader_and_isr.clear()
        self._update_metadata = _NOTHING_SENT
