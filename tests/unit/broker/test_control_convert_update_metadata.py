"""Decoding an UpdateMetadata builds each partition's named tuple positionally: the values must
be exactly what the keyword constructor makes from the same fields, in the tuple's field order."""

from __future__ import annotations

from leasehold import metadata_digest
from leasehold.broker.v1 import control_pb2
from services.broker_agent import control_convert
from services.broker_agent.model import MetadataPartition

STATES = [
    dict(topic="a", partition=0, leader=1, leader_epoch=3, isr=[1, 2], replicas=[1, 2, 3]),
    dict(
        topic="a.b-c_d",
        topic_id="id-x",
        partition=7,
        controller_epoch=4,
        leader=-1,
        leader_epoch=9,
        isr=[],
        partition_epoch=11,
        replicas=[2, 3, 1],
        offline_replicas=[2, 3],
    ),
    dict(topic="z", partition=2, leader=-2, leader_epoch=1, isr=[1, 2], replicas=[1, 2, 3]),
]


def test_the_tuple_fields_are_in_the_order_the_decoder_builds() -> None:
    assert MetadataPartition._fields == (
        "topic",
        "partition",
        "leader",
        "leader_epoch",
        "isr",
        "replicas",
        "partition_epoch",
        "controller_epoch",
        "topic_id",
        "offline_replicas",
    )


def test_partitions_equal_the_keyword_built_ones() -> None:
    pb = control_pb2.UpdateMetadataRequest(controller_epoch=4, partition_states=STATES)
    decoded = control_convert.update_metadata_from_pb(pb)
    expected = tuple(
        MetadataPartition(
            topic=s.topic,
            partition=s.partition,
            leader=s.leader,
            leader_epoch=s.leader_epoch,
            isr=tuple(s.isr),
            replicas=tuple(s.replicas),
            partition_epoch=s.partition_epoch,
            controller_epoch=s.controller_epoch,
            topic_id=s.topic_id,
            offline_replicas=tuple(s.offline_replicas),
        )
        for s in pb.partition_states
    )
    assert decoded.partitions == expected
    assert all(type(p) is MetadataPartition for p in decoded.partitions)
    assert all(type(v) is tuple for p in decoded.partitions for v in (p.isr, p.replicas))
    # Equal lists are one object; hashes are of each state's own encoding.
    assert decoded.partitions[0].replicas is decoded.partitions[2].replicas
    assert decoded.state_hashes == tuple(
        metadata_digest.state_hash(s.SerializeToString()) for s in pb.partition_states
    )


def test_equal_names_ids_partitions_and_leaders_are_one_object_each() -> None:
    """A million cached partitions keep what each decoded state holds: protobuf hands out a new
    object per field read, so equal values are shared within a request."""
    topic_id = "0" * 31 + "7"
    states = [
        dict(topic="bench-7", topic_id=topic_id, partition=p % 300 + 300, leader=p % 2 + 500)
        for p in range(600)
    ]
    pb = control_pb2.UpdateMetadataRequest(partition_states=states)
    decoded = control_convert.update_metadata_from_pb(pb).partitions
    assert [(p.topic, p.partition, p.leader) for p in decoded] == [
        (s["topic"], s["partition"], s["leader"]) for s in states
    ]
    for field in ("topic", "topic_id", "partition", "leader"):
        objects = {id(getattr(p, field)) for p in decoded}
        distinct = {getattr(p, field) for p in decoded}
        assert len(objects) == len(distinct), field  # one object per distinct value
    assert len({p.partition for p in decoded}) == 300
