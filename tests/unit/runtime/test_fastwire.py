"""``leasehold.fastwire``: layouts checked against their messages, and what adding a field costs.

The newcomer's test: a field added to ``UpdateMetadataPartitionState`` (a broker request) or to
the stored ``PartitionState`` (an etcd value) is encoded once the domain type carries it — the
.proto edit and the domain line are all it takes — and a layout that cannot place it fails
when it is declared, so no field can silently go unwritten.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from leasehold import fastwire
from leasehold.broker.v1 import control_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.metadata_wire import PARTITION
from services.controller import codec
from services.controller.core import (
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery import wire

NEW_FIELD = "preferred_leader"


def with_new_field(message: type, name: str = NEW_FIELD) -> type:
    """``message`` as it would be after a .proto edit adding ``int32 <name>`` as its last field."""
    file = descriptor_pb2.FileDescriptorProto(
        name=f"edited_{message.DESCRIPTOR.name}.proto", package="edited", syntax="proto3"
    )
    message.DESCRIPTOR.CopyToProto(file.message_type.add())
    fields = file.message_type[0].field
    for f in fields:
        if f.type == descriptor_pb2.FieldDescriptorProto.TYPE_ENUM:  # enums: plain ints here
            f.type = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
            f.ClearField("type_name")
    fields.add(
        name=name,
        number=max(f.number for f in fields) + 1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"edited.{message.DESCRIPTOR.name}")
    )


class EditedUmState(NamedTuple):
    """``UpdateMetadataPartitionState`` with the domain line for the new field."""

    tp: TopicPartition
    topic_id: str
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    preferred_leader: int = 0


@dataclasses.dataclass(frozen=True)
class EditedLeaderAndIsr(LeaderAndIsr):
    preferred_leader: int = 0


class EditedStoredValue(NamedTuple):
    leader_and_isr: EditedLeaderAndIsr
    assignment: ReplicaAssignment
    offline_replicas: tuple[int, ...]


def test_a_new_update_metadata_field_is_encoded_from_the_domain_line() -> None:
    edited = with_new_field(control_pb2.UpdateMetadataPartitionState)
    encoder = wire.UPDATE_METADATA_STATE.redeclared(edited, EditedUmState).encoder()
    state = EditedUmState(TopicPartition("t", 3), "id", 5, 2, 7, (2, 3), 99, (1, 2, 3), (1,), 3)
    expected = edited(
        topic="t", topic_id="id", partition=3, controller_epoch=5, leader=2, leader_epoch=7,
        isr=[2, 3], partition_epoch=99, replicas=[1, 2, 3], offline_replicas=[1],
        preferred_leader=3,
    ).SerializeToString()  # fmt: skip
    assert encoder.encode(state) == expected
    assert encoder.encode(state) == expected  # from the cached pieces


def test_a_new_stored_state_field_is_read_from_the_leader_and_isr() -> None:
    edited = with_new_field(metadata_pb2.PartitionState)
    encoder = codec.PARTITION_STATE.redeclared(edited, EditedStoredValue).encoder()
    lai = EditedLeaderAndIsr(2, 7, (2, 3), 5, preferred_leader=3)
    value = encoder.encode(EditedStoredValue(lai, ReplicaAssignment((1, 2, 3)), (1,)))
    assert edited.FromString(value) == edited(
        leader=2, leader_epoch=7, isr=[2, 3], controller_epoch=5, offline_replicas=[1],
        leader_recovery_state=codec.RECOVERED, preferred_leader=3,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "message", "domain"),
    [
        (wire.UPDATE_METADATA_STATE, control_pb2.UpdateMetadataPartitionState, None),
        (codec.PARTITION_STATE, metadata_pb2.PartitionState, None),
        (PARTITION, None, None),
    ],
    ids=["update-metadata", "stored-state", "metadata-answer"],
)
def test_a_new_field_without_its_domain_line_fails_the_declaration(layout, message, domain):
    edited = with_new_field(message or layout.message)
    with pytest.raises(fastwire.LayoutError, match=NEW_FIELD):
        layout.redeclared(edited, domain or layout.domain)


def test_a_field_in_no_group_fails_the_declaration() -> None:
    with pytest.raises(fastwire.LayoutError, match="offline_replicas.*not placed"):
        fastwire.Layout(
            control_pb2.UpdateMetadataPartitionState,
            [fastwire.group("topic", "topic_id", "partition", "controller_epoch", "leader")],
            domain=UpdateMetadataPartitionState,
            absent=("leader_epoch", "isr", "partition_epoch", "replicas"),
        )


def test_groups_out_of_field_order_fail_the_declaration() -> None:
    with pytest.raises(fastwire.LayoutError, match="field-number order"):
        fastwire.Layout(
            metadata_pb2.PartitionState,
            [
                fastwire.group("leader_epoch", "leader"),
                fastwire.group(
                    "isr", "controller_epoch", "adding_replicas", "removing_replicas",
                    "leader_recovery_state", "offline_replicas",
                ),
            ],
        )  # fmt: skip


def test_varints_as_protobuf_writes_them() -> None:
    assert fastwire.varint(0) == b"\x00"
    assert fastwire.varint(300) == b"\xac\x02"
    assert fastwire.varint(-1) == b"\xff" * 9 + b"\x01"
    assert fastwire.field_key(control_pb2.UpdateMetadataRequest, "partition_states") == b"\x22"
