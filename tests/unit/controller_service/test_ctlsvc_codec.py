"""Codec between etcd values and the core model: partition epochs, composed assignments."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.metadata.v1 import metadata_pb2
from services.controller import codec
from services.controller.core import LeaderAndIsr, ReplicaAssignment

# (AR in the topic key, adding, removing) -> expected (replicas, adding, removing)
COMPOSE = [
    ("no reassignment", [1, 2, 3], [], [], ((1, 2, 3), (), ())),
    (
        "in progress",
        [4, 5, 6, 1, 2, 3],
        [4, 5, 6],
        [1, 2, 3],
        ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
    ),
    # Crash after the state write, before AR: the adding replicas are appended to AR.
    ("state written, AR not yet", [1, 2, 3], [4, 5], [1], ((1, 2, 3, 4, 5), (4, 5), (1,))),
    ("removing unknown replica dropped", [1, 2], [], [9], ((1, 2), (), ())),
    ("replica both adding and removing", [1, 2, 3], [3], [3, 1], ((1, 2, 3), (3,), (1,))),
    ("duplicates in AR", [1, 1, 2], [], [], ((1, 2), (), ())),
]


@pytest.mark.parametrize("case", COMPOSE, ids=[c[0] for c in COMPOSE])
def test_compose_assignment(case):
    _, ar, adding, removing, (replicas, add, rem) = case
    assert codec.compose_assignment(ar, adding, removing) == ReplicaAssignment(replicas, add, rem)


@pytest.mark.parametrize("recovering", [False, True])
def test_partition_state_round_trip_takes_the_epoch_from_the_key(recovering):
    lai = LeaderAndIsr(3, 7, (3, 1), 5, partition_epoch=11, recovering=recovering)
    value = codec.encode_partition_state(lai, ReplicaAssignment((1, 2, 3), (2,), (1,)), [2])
    pb = metadata_pb2.PartitionState.FromString(value)
    assert list(pb.offline_replicas) == [2]
    stored = codec.decode_partition_state(value, mod_revision=99)
    assert stored.leader_and_isr == LeaderAndIsr(3, 7, (3, 1), 5, 99, recovering)
    assert (stored.adding, stored.removing) == ((2,), (1,))


INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
IDS = st.lists(st.integers(min_value=-2, max_value=2**31 - 1), max_size=5).map(tuple)


@st.composite
def assignments(draw) -> ReplicaAssignment:
    """Any valid assignment: distinct replicas, adding and removing among them."""
    replicas = draw(
        st.lists(st.integers(min_value=0, max_value=2**31 - 1), unique=True, max_size=6)
    )
    adding = draw(st.lists(st.sampled_from(replicas), unique=True)) if replicas else []
    removing = draw(st.lists(st.sampled_from(replicas), unique=True)) if replicas else []
    return ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))


@settings(max_examples=300)
@given(
    st.builds(
        LeaderAndIsr,
        leader=INT32,
        leader_epoch=INT32,
        isr=IDS,
        controller_epoch=INT32,
        recovering=st.booleans(),
    ),
    assignments(),
    st.lists(st.integers(min_value=-2, max_value=2**31 - 1), max_size=4),
)
def test_partition_state_encodes_as_the_generated_class_does(lai, assignment, offline):
    """The value encoded from pieces is byte for byte the generated encoder's, the first time and
    again from the cached pieces."""
    expected = metadata_pb2.PartitionState(
        leader=lai.leader,
        leader_epoch=lai.leader_epoch,
        isr=lai.isr,
        controller_epoch=lai.controller_epoch,
        adding_replicas=assignment.adding,
        removing_replicas=assignment.removing,
        leader_recovery_state=codec.RECOVERING if lai.recovering else codec.RECOVERED,
        offline_replicas=sorted(offline),
    ).SerializeToString()
    for _ in range(2):
        assert codec.encode_partition_state(lai, assignment, offline) == expected


def test_encode_topic_with_replaces_only_named_partitions():
    topic = metadata_pb2.TopicAssignment(
        topic_id="abc",
        partitions={
            0: metadata_pb2.ReplicaList(replicas=[1, 2]),
            1: metadata_pb2.ReplicaList(replicas=[2, 3]),
        },
        created_at_ms=5,
        trace_context=metadata_pb2.TraceContext(carrier={"traceparent": "00-x"}),
    )
    out = metadata_pb2.TopicAssignment.FromString(codec.encode_topic_with(topic, {1: (4, 5, 6)}))
    assert codec.topic_replicas(out) == {0: (1, 2), 1: (4, 5, 6)}
    assert (out.topic_id, out.created_at_ms, dict(out.trace_context.carrier)) == (
        "abc",
        5,
        {"traceparent": "00-x"},
    )


def test_admin_result_and_epoch_values():
    value = codec.admin_result(
        "r1",
        metadata_pb2.ADMIN_OPERATION_ELECTION,
        [codec.partition_error("t", 0, 84, "x")],
        now_ms=7,
        controller_epoch=3,
    )
    pb = metadata_pb2.AdminResult.FromString(value)
    assert (pb.request_id, pb.operation, pb.completed_at_ms, pb.controller_epoch) == (
        "r1",
        metadata_pb2.ADMIN_OPERATION_ELECTION,
        7,
        3,
    )
    assert [(r.topic, r.partition, r.error_code, r.error_message) for r in pb.results] == [
        ("t", 0, 84, "x")
    ]
    epoch = codec.decode_epoch(codec.encode_epoch(4, 2))
    assert (epoch.epoch, epoch.controller_id) == (4, 2)
