"""The Metadata topics encoded from pieces (``metadata_wire``) against the generated encoder."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.broker.v1 import broker_pb2
from leasehold.fastwire import varint
from services.broker_agent.metadata_cache import PartitionView
from services.broker_agent.metadata_wire import TopicEncoder
from services.broker_agent.model import Code

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
IDS = st.lists(st.integers(min_value=-1, max_value=2**31 - 1), max_size=6).map(tuple)
CODES = st.sampled_from([Code.NONE, Code.LEADER_NOT_AVAILABLE, Code.UNKNOWN_TOPIC_OR_PARTITION])
VIEWS = st.builds(PartitionView, INT32, CODES, INT32, INT32, IDS, IDS, IDS)
NAMES = st.text(max_size=40)


def generated(name: str, error: int, topic_id: str, views) -> broker_pb2.MetadataTopic:
    return broker_pb2.MetadataTopic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        partitions=[
            broker_pb2.MetadataPartition(
                error_code=int(p.error),
                partition=p.partition,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                replicas=p.replicas,
                isr=p.isr,
                offline_replicas=p.offline_replicas,
            )
            for p in views
        ],
    )


@settings(max_examples=300)
@given(NAMES, CODES, NAMES, st.lists(VIEWS, max_size=20))
def test_a_topic_encodes_as_the_generated_class_does(name, error, topic_id, views):
    encoder = TopicEncoder()
    built = encoder.topic(name, int(error), topic_id, views)
    expected = generated(name, int(error), topic_id, views)
    assert built == expected
    # Fields in number order, each written once: the same bytes protobuf writes.
    assert built.SerializeToString() == expected.SerializeToString()
    # Pieces kept from the first answer give the same second one.
    assert encoder.topic(name, int(error), topic_id, views) == expected


def test_every_field_of_the_messages_is_written():
    """A field added to either message must be added to the encoder (module docstring)."""
    assert [f.name for f in broker_pb2.MetadataTopic.DESCRIPTOR.fields] == [
        "error_code",
        "name",
        "topic_id",
        "partitions",
    ]
    assert [f.name for f in broker_pb2.MetadataPartition.DESCRIPTOR.fields] == [
        "error_code",
        "partition",
        "leader",
        "leader_epoch",
        "replicas",
        "isr",
        "offline_replicas",
    ]


def test_large_partitions_and_negative_values():
    view = PartitionView(2**31 - 1, Code.LEADER_NOT_AVAILABLE, -1, -5, (1, 300), (), (2**31 - 1,))
    encoder = TopicEncoder()
    assert encoder.topic("t", 0, "", [view] * 3) == generated("t", 0, "", [view] * 3)
    assert varint(-1) == b"\xff" * 9 + b"\x01"
    assert varint(300) == b"\xac\x02"


def test_bodies_of_128_bytes_and_more_get_multi_byte_lengths():
    many = tuple(range(1_000, 1_060))  # 60 two-byte ids: a body well over 127 bytes
    view = PartitionView(7, Code.NONE, 1_000, 3, many, many, ())
    assert TopicEncoder().topic("big", 0, "id", [view]) == generated("big", 0, "id", [view])
