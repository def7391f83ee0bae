"""Simulated brokers of one process decode each UpdateMetadata body once: what is shared
depends on the body alone, each broker keeps its own header (and a malformed body is refused
to every broker, never kept)."""

from __future__ import annotations

import gc

import pytest

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from leasehold.errors import InvalidRequestError
from leasehold.heap import BULK_PARTITIONS, HeapFreezer
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.simulation import sharing as sharing_module
from services.broker_agent.simulation.broker import Observation, ObservedControlServicer
from services.broker_agent.simulation.replicas import SimulatedReplicas
from services.broker_agent.simulation.sharing import Body, SharedDecodes, Sharing, body_of

STATES = [
    control_pb2.UpdateMetadataPartitionState(
        topic="t", topic_id="id-t", partition=p, controller_epoch=3, leader=1, leader_epoch=2,
        isr=[1, 2], partition_epoch=40 + p, replicas=[1, 2],
    )
    for p in range(3)
]  # fmt: skip
BROKERS = [common_pb2.BrokerEndpoint(broker_id=i, host="h", port=9000 + i) for i in (1, 2)]


def request(broker_epoch: int, **kw) -> control_pb2.UpdateMetadataRequest:
    fields = {"partition_states": STATES, "live_brokers": BROKERS, **kw}
    return control_pb2.UpdateMetadataRequest(
        controller_id=7, controller_epoch=3, broker_epoch=broker_epoch, **fields
    )


def test_the_body_leaves_out_the_header_and_the_nothing_queued_mark():
    one = request(1000).SerializeToString()
    other = request(2**40, nothing_queued=True).SerializeToString()
    assert one != other
    assert body_of(one) == body_of(other)
    assert body_of(one) != body_of(request(1000, deleted_topics=["x"]).SerializeToString())


def test_a_body_is_decoded_once_and_each_broker_keeps_its_header():
    decodes = SharedDecodes()
    first, second = (
        decodes.update_metadata(request(11)),
        decodes.update_metadata(request(12, nothing_queued=True)),
    )
    assert (decodes.hits, decodes.misses) == (1, 1)
    assert (first.broker_epoch, second.broker_epoch) == (11, 12)
    assert first.partitions is second.partitions
    assert first.topic_runs is second.topic_runs  # the caches then share the topic states


def test_bodies_whose_checksums_collide_are_decoded_apart(monkeypatch):
    """A body's key is hashed by a checksum; it matches the same bytes alone."""
    monkeypatch.setattr(sharing_module.crc32c, "crc32c", lambda data: 0)
    moved = control_pb2.UpdateMetadataPartitionState()
    moved.CopyFrom(STATES[0])
    moved.leader = 2
    one = body_of(request(1).SerializeToString())
    other = body_of(request(1, partition_states=[moved, *STATES[1:]]).SerializeToString())
    assert len(one) == len(other) and hash(Body(one)) == hash(Body(other)) and one != other
    assert Body(one) == Body(bytes(bytearray(one))) and Body(one) != Body(other)
    decodes = SharedDecodes()
    first = decodes.update_metadata(request(11))
    second = decodes.update_metadata(request(12, partition_states=[moved, *STATES[1:]]))
    assert (decodes.hits, decodes.misses) == (0, 2)
    assert (first.partitions[0].leader, second.partitions[0].leader) == (1, 2)


def test_a_malformed_body_is_refused_every_time():
    decodes = SharedDecodes()
    twice = [STATES[0], STATES[0]]
    for broker_epoch in (1, 2):
        with pytest.raises(InvalidRequestError):
            decodes.update_metadata(request(broker_epoch, partition_states=twice))
    assert (decodes.hits, decodes.misses) == (0, 2)


def test_a_known_body_arrives_parsed_for_its_header_alone():
    decodes = SharedDecodes()
    first = request(11).SerializeToString()
    second = request(12, nothing_queued=True).SerializeToString()
    one = decodes.deserialize(first)
    assert len(one.partition_states) == 3  # a body new to the process: parsed whole
    decoded_one = decodes.update_metadata(one)
    two = decodes.deserialize(second)
    assert (two.broker_epoch, two.nothing_queued, len(two.partition_states)) == (12, True, 0)
    assert decodes.received_bytes(two) == len(second)
    decoded_two = decodes.update_metadata(two)
    assert decoded_two.partitions is decoded_one.partitions
    assert (decoded_two.broker_epoch, decodes.hits, decodes.misses) == (12, 1, 1)


async def test_the_brokers_of_a_process_freeze_big_requests_on_one_heap():
    """The agent freezes what a big control request built (``leasehold.heap``); simulated
    brokers do it on the process's one freezer, once its main enables it."""
    sharing = Sharing(heap=HeapFreezer(clock=lambda: 0.0))
    big = [
        control_pb2.UpdateMetadataPartitionState(
            topic=f"t{p // 500}", partition=p % 500, leader=1, leader_epoch=1, isr=[1], replicas=[1]
        )
        for p in range(BULK_PARTITIONS)
    ]
    servicers = []
    for broker in (1, 2):
        replicas = SimulatedReplicas(broker, MetadataCache(sharing.updates))
        replicas.broker_epoch = 5
        servicers.append(ObservedControlServicer(replicas, Observation(), sharing))
    try:
        for servicer in servicers:
            await servicer.UpdateMetadata(request(5, partition_states=STATES), None)
        assert sharing.heap.settles == 0  # small requests leave the collector alone
        for servicer in servicers:
            answer = await servicer.UpdateMetadata(request(5, partition_states=big), None)
            assert answer.error_code == 0
        assert sharing.heap.settles == 2
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
