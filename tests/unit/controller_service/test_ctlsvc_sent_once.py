"""A partition state already queued to a broker in the same controller event is not queued to it
again (``services.controller.delivery.sent_states``): the broker failure's replica step re-sends the
elections' LeaderAndIsr, which brokers ignore (equal leader epoch)."""

from __future__ import annotations

import asyncio

import pytest
from ctlsvc_instant_channels import InstantChannels
from google.protobuf.message import Message

from leasehold.broker.v1 import control_pb2
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    StopReplicaPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery.channels import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
)
from services.controller.delivery.sent_states import SentStates

LaiState = LeaderAndIsrPartitionState

B1 = BrokerInfo(1, "h1", 9001, "", 40)
B2 = BrokerInfo(2, "h2", 9002, "", 41)
B3 = BrokerInfo(3, "h3", 9003, "", 42)
A0, A1, A2 = (TopicPartition("a", p) for p in range(3))


def lai(tp: TopicPartition, leader: int = 2, epoch: int = 4, **changes) -> LaiState:
    """A state built afresh each call (equal values, distinct objects, as two batches build)."""
    state = LeaderAndIsrPartitionState(
        tp, "id-a", LeaderAndIsr(leader, epoch, (2, 3), 5, 70), (1, 2, 3), (), (), False
    )
    return state._replace(**changes)


def um(tp: TopicPartition, leader: int = 2, epoch: int = 4) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(tp, "id-a", 5, leader, epoch, (2, 3), 70, (1, 2, 3), (1,))


BASE = lai(A0)


@pytest.mark.parametrize(
    "second, resent",
    [
        (lai(A0), False),  # equal values, another object
        (BASE, False),  # the very object
        (lai(A0, epoch=5), True),
        (lai(A0, leader=3), True),
        (lai(A0, is_new=True), True),
        (lai(A0, replicas=(1, 2, 3, 4)), True),
        (lai(A0, adding_replicas=(4,)), True),
        (lai(A0, removing_replicas=(1,)), True),
        (lai(A0, topic_id="id-other"), True),
        (lai(A0, leader_and_isr=LeaderAndIsr(2, 4, (2,), 5, 70)), True),  # ISR
        (lai(A0, leader_and_isr=LeaderAndIsr(2, 4, (2, 3), 5, 71)), True),  # partition epoch
        (lai(A0, leader_and_isr=LeaderAndIsr(2, 4, (2, 3), 6, 70)), True),  # controller epoch
        (lai(A0, leader_and_isr=LeaderAndIsr(2, 4, (2, 3), 5, 70, True)), True),  # recovering
        (lai(A1), True),  # another partition
    ],
)
def test_only_a_state_equal_to_the_last_one_sent_is_left_out(second, resent) -> None:
    sent = SentStates()
    assert sent.unsent_leader_and_isr((BASE,)) == (BASE,)
    assert sent.unsent_leader_and_isr((second,)) == ((second,) if resent else ())


def test_the_last_state_sent_is_the_one_compared() -> None:
    sent = SentStates()
    first, newer = lai(A0), lai(A0, epoch=5)
    assert sent.unsent_leader_and_isr((first, lai(A1))) == (first, lai(A1))
    assert sent.unsent_leader_and_isr((newer, lai(A1), lai(A2))) == (newer, lai(A2))
    assert sent.unsent_leader_and_isr((lai(A0),)) == (lai(A0),)  # back to the first: not last
    assert sent.unsent_leader_and_isr((lai(A0),)) == ()


def test_update_metadata_states_and_stop_replica_and_clear() -> None:
    sent = SentStates()
    batch = (um(A0), um(A1))
    assert sent.unsent_update_metadata(batch) is batch  # nothing dropped: the same tuple
    assert sent.unsent_update_metadata((um(A0), um(A1), um(A2))) == (um(A2),)
    assert sent.unsent_update_metadata((um(A1, leader=-2),)) == (um(A1, leader=-2),)  # deleting
    assert sent.unsent_leader_and_isr((lai(A0), lai(A1))) == (lai(A0), lai(A1))
    sent.stopped([A0])  # a StopReplica resets what the broker holds of a0
    assert sent.unsent_leader_and_isr((lai(A0), lai(A1))) == (lai(A0),)
    assert sent.unsent_update_metadata((um(A0), um(A2))) == (um(A0),)
    assert sent
    sent.clear()
    assert not sent
    assert sent.unsent_leader_and_isr((lai(A1),)) == (lai(A1),)


class _Recording(InstantChannels):
    """Every request recorded as it went on the wire, and answered at once."""

    def __init__(self) -> None:
        super().__init__()
        self.wire: list[tuple[int, str, bytes]] = []

    async def answer(self, broker_id: int, kind: str, data: bytes) -> Message:
        self.wire.append((broker_id, kind, data))
        return await super().answer(broker_id, kind, data)

    async def drained(self) -> list[tuple[int, str, tuple]]:
        """Everything sent since the last call: (broker, kind, partitions named)."""
        for _ in range(100):
            if self.total_queue_size() == 0:
                break
            await asyncio.sleep(0.005)
        out = []
        for b, kind, data in self.wire:
            pb = {
                LEADER_AND_ISR: control_pb2.LeaderAndIsrRequest,
                UPDATE_METADATA: control_pb2.UpdateMetadataRequest,
                STOP_REPLICA: control_pb2.StopReplicaRequest,
            }[kind].FromString(data)
            named = tuple(
                (s.partition, getattr(s, "leader_epoch", None)) for s in pb.partition_states
            )
            leaders = tuple(b.broker_id for b in getattr(pb, "live_leaders", ()))
            out.append((b, kind, named, leaders) if kind == LEADER_AND_ISR else (b, kind, named))
        self.wire.clear()
        return out

    async def close(self) -> None:
        for b in self._brokers.values():
            b.task.cancel()


def _requests(broker: BrokerInfo, lai_states=(), um_states=None, stop=()) -> BrokerRequests:
    leaders = {s.leader_and_isr.leader for s in lai_states}
    return BrokerRequests(
        broker_id=broker.id, broker_epoch=broker.epoch, controller_id=7, controller_epoch=5,
        leader_and_isr=tuple(lai_states),
        live_leaders=tuple(b for b in (B1, B2, B3) if b.id in leaders),
        stop_replica=tuple(StopReplicaPartitionState(tp, 4, False) for tp in stop),
        update_metadata=um_states, live_brokers=(B2, B3),
    )  # fmt: skip


def _election_batch() -> dict[int, BrokerRequests]:
    """What a broker failure's election sends, built afresh (as the replica step builds it)."""
    states = (lai(A0, leader=2), lai(A1, leader=3))
    shared = (um(A0), um(A1, leader=3))
    return {b.id: _requests(b, states, shared) for b in (B2, B3)}


async def test_a_batch_repeating_the_event_s_states_sends_only_what_is_new() -> None:
    ch = _Recording()
    for b in (B2, B3):
        ch.add_broker(b)
    ch.send_batch(_election_batch())
    first = await ch.drained()
    assert sorted(first) == [
        (2, LEADER_AND_ISR, ((0, 4), (1, 4)), (2, 3)),
        (2, UPDATE_METADATA, ((0, 4), (1, 4))),
        (3, LEADER_AND_ISR, ((0, 4), (1, 4)), (2, 3)),
        (3, UPDATE_METADATA, ((0, 4), (1, 4))),
    ]
    # The replica step: the same states again, and a2's ISR shrink (new epoch) for broker 3.
    again = _election_batch()
    again[3] = _requests(B3, (lai(A0), lai(A1, leader=3), lai(A2, leader=3, epoch=5)), (um(A0),))
    ch.send_batch(again)
    second = await ch.drained()
    # The LeaderAndIsr keeps only a2 (and its leader); UpdateMetadata still carries the live
    # brokers, without partition states the broker was given.
    assert sorted(second) == [
        (2, UPDATE_METADATA, ()),
        (3, LEADER_AND_ISR, ((2, 5),), (3,)),
        (3, UPDATE_METADATA, ()),
    ]
    # The next event sends everything again.
    ch.forget_sent()
    ch.send_batch(_election_batch())
    assert sorted(await ch.drained()) == sorted(first)
    await ch.close()


async def test_stop_replica_send_and_a_new_channel_make_the_states_go_again() -> None:
    ch = _Recording()
    for b in (B2, B3):
        ch.add_broker(b)
    ch.send_batch(_election_batch())
    await ch.drained()
    # Broker 2: a StopReplica for a0 after the LeaderAndIsr in one batch.
    ch.send_batch({2: _requests(B2, stop=(A0,))})
    await ch.drained()
    # Broker 3: a request outside a batch (e.g. a digest-first UpdateMetadata).
    ch.send(3, UPDATE_METADATA, control_pb2.UpdateMetadataRequest(controller_epoch=5))
    await ch.drained()
    ch.send_batch(_election_batch())
    assert sorted(await ch.drained()) == [
        (2, LEADER_AND_ISR, ((0, 4),), (2,)),
        (2, UPDATE_METADATA, ((0, 4),)),
        (3, LEADER_AND_ISR, ((0, 4), (1, 4)), (2, 3)),
        (3, UPDATE_METADATA, ((0, 4), (1, 4))),
    ]
    # A replaced channel (its queue dropped) starts with nothing remembered.
    ch.add_broker(B2)
    ch.send_batch(_election_batch())
    assert sorted(await ch.drained()) == [
        (2, LEADER_AND_ISR, ((0, 4), (1, 4)), (2, 3)),
        (2, UPDATE_METADATA, ((0, 4), (1, 4))),
        (3, UPDATE_METADATA, ()),
    ]
    await ch.close()
