"""The hand-assembled partition states (``wire.StateEncoder``) against the generated encoder:
same message, same bytes, for any field values, and again once the pieces are cached."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.broker.v1 import control_pb2
from services.controller import wire
from services.controller.codec import RECOVERED, RECOVERING
from services.controller.core import (
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)

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
    pb = control_pb2.LeaderAndIsrRequest()
    for s in states:
        lai = s.leader_and_isr
        pb.partition_states.add(
            topic=s.tp.topic,
            topic_id=s.topic_id,
            partition=s.tp.partition,
            controller_epoch=lai.controller_epoch,
            leader=lai.leader,
            leader_epoch=lai.leader_epoch,
            isr=lai.isr,
            partition_epoch=lai.partition_epoch,
            replicas=s.replicas,
            adding_replicas=s.adding_replicas,
            removing_replicas=s.removing_replicas,
            is_new=s.is_new,
            leader_recovery_state=RECOVERING if lai.recovering else RECOVERED,
        )
    return pb.SerializeToString()


def _generated_update_metadata(s: UpdateMetadataPartitionState) -> bytes:
    return control_pb2.UpdateMetadataPartitionState(
        topic=s.tp.topic,
        topic_id=s.topic_id,
        partition=s.tp.partition,
        controller_epoch=s.controller_epoch,
        leader=s.leader,
        leader_epoch=s.leader_epoch,
        isr=s.isr,
        partition_epoch=s.partition_epoch,
        replicas=s.replicas,
        offline_replicas=s.offline_replicas,
    ).SerializeToString()


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
    assert [f.name for f in control_pb2.LeaderAndIsrPartitionState.DESCRIPTOR.fields] == [
        "topic",
        "topic_id",
        "partition",
        "controller_epoch",
        "leader",
        "leader_epoch",
        "isr",
        "partition_epoch",
        "replicas",
        "adding_replicas",
        "removing_replicas",
        "is_new",
        "leader_recovery_state",
    ]
    assert [f.name for f in control_pb2.UpdateMetadataPartitionState.DESCRIPTOR.fields] == [
        "topic",
        "topic_id",
        "partition",
        "controller_epoch",
        "leader",
        "leader_epoch",
        "isr",
        "partition_epoch",
        "replicas",
        "offline_replicas",
    ]
