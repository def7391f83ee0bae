"""The partition states encoded from pieces (``wire.StateEncoder``, ``leasehold.fastwire``)
against the generated classes: same message, same bytes, for any field values, and again once
the pieces are cached."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.broker.v1 import control_pb2
from services.controller.core import (
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery import wire

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
IDS = st.lists(st.integers(min_value=-2, max_value=2**31 - 1), max_size=5).map(tuple)
NAMES = st.text(max_size=30)
TPS = st.builds(TopicPartition, NAMES, INT32)
LAIS = st.builds(
    LeaderAndIsr,
    leader=INT32,
    leader_epoch=INT32,
    isr=IDS,
    controller_epoch=INT32,
    partition_epoch=INT64,
    recovering=st.booleans(),
)
LAI_STATES = st.builds(LeaderAndIsrPartitionState, TPS, NAMES, LAIS, IDS, IDS, IDS, st.booleans())
UM_STATES = st.builds(
    UpdateMetadataPartitionState, TPS, NAMES, INT32, INT32, INT32, IDS, INT64, IDS, IDS
)


def _generated_leader_and_isr(states) -> bytes:
    """Through the generated classes, as ``wire.leader_and_isr`` builds a request."""
    pb = control_pb2.LeaderAndIsrRequest()
    for s in states:
        wire._add_leader_and_isr_state(pb, s)
    return pb.SerializeToString()


def _generated_update_metadata(s: UpdateMetadataPartitionState) -> bytes:
    fields = wire._update_metadata_fields(s)
    return control_pb2.UpdateMetadataPartitionState(**fields).SerializeToString()


@settings(max_examples=300)
@given(st.lists(LAI_STATES, max_size=8))
def test_leader_and_isr_states_encode_as_the_generated_class_does(states) -> None:
    encoder = wire.StateEncoder()
    expected = _generated_leader_and_isr(states)
    for _ in range(2):  # the second time from cached pieces
        built = b"".join(encoder.leader_and_isr(s) for s in states)
        assert built == expected
    assert control_pb2.LeaderAndIsrRequest.FromString(built) == (
        control_pb2.LeaderAndIsrRequest.FromString(expected)
    )


@settings(max_examples=300)
@given(st.lists(UM_STATES, max_size=8))
def test_update_metadata_states_encode_as_the_generated_class_does(states) -> None:
    encoder = wire.StateEncoder()
    body = control_pb2.UpdateMetadataRequest(
        partition_states=[control_pb2.UpdateMetadataPartitionState.FromString(
            _generated_update_metadata(s)) for s in states]
    ).SerializeToString()  # fmt: skip
    for _ in range(2):
        assert [encoder.update_metadata(s) for s in states] == [
            _generated_update_metadata(s) for s in states
        ]
        assert encoder.update_metadata_body(states) == body
        assert b"".join(wire.update_metadata_entry(encoder.update_metadata(s)) for s in states) == (
            body
        )


def test_every_field_of_the_state_messages_is_written() -> None:
    """A field added to either message must be added to the encoder."""
    common = ["topic", "topic_id", "partition", "controller_epoch", "leader", "leader_epoch"]
    common += ["isr", "partition_epoch", "replicas"]
    expected = {
        control_pb2.LeaderAndIsrPartitionState: common
        + ["adding_replicas", "removing_replicas", "is_new", "leader_recovery_state"],
        control_pb2.UpdateMetadataPartitionState: [*common, "offline_replicas"],
    }
    for message, names in expected.items():
        assert [f.name for f in message.DESCRIPTOR.fields] == names
