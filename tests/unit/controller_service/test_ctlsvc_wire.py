"""BrokerRequests -> BrokerControlService protobuf, stamped per contract 7."""

from __future__ import annotations

from leasehold.common.v1 import common_pb2
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    LeaderAndIsr,
    LeaderAndIsrPartitionState,
    StopReplicaPartitionState,
    TopicPartition,
    UpdateMetadataPartitionState,
)
from services.controller.delivery import wire

B1 = BrokerInfo(1, "h1", 9001, "r1", 40)
B2 = BrokerInfo(2, "h2", 9002, "", 41)
TP = TopicPartition("t", 3)


def _requests(**kw) -> BrokerRequests:
    base = dict(
        broker_id=2, broker_epoch=41, controller_id=7, controller_epoch=5,
        leader_and_isr=(), live_leaders=(), stop_replica=(), update_metadata=None,
        live_brokers=(B1, B2),
    )  # fmt: skip
    base.update(kw)
    return BrokerRequests(**base)


def test_empty_parts_are_not_sent():
    req = _requests()
    assert wire.leader_and_isr(req) is None
    assert wire.stop_replica(req) is None
    assert wire.update_metadata(req, "c", 1) is None
    um = wire.update_metadata(_requests(update_metadata=()), "ctl", 9190)
    assert list(um.partition_states) == [] and [b.broker_id for b in um.live_brokers] == [1, 2]


def test_leader_and_isr_fields():
    lai = LeaderAndIsr(1, 4, (1, 2), 5, partition_epoch=77, recovering=True)
    state = LeaderAndIsrPartitionState(TP, "tid", lai, (1, 2, 3), (3,), (1,), True)
    pb = wire.leader_and_isr(_requests(leader_and_isr=(state,), live_leaders=(B1,)))
    assert (pb.controller_id, pb.controller_epoch, pb.broker_epoch) == (7, 5, 41)
    s = pb.partition_states[0]
    assert (s.topic, s.topic_id, s.partition, s.leader, s.leader_epoch, list(s.isr)) == (
        "t", "tid", 3, 1, 4, [1, 2]
    )  # fmt: skip
    assert (s.partition_epoch, list(s.replicas), list(s.adding_replicas)) == (77, [1, 2, 3], [3])
    assert list(s.removing_replicas) == [1] and s.is_new and s.controller_epoch == 5
    assert s.leader_recovery_state == common_pb2.LEADER_RECOVERY_STATE_RECOVERING
    assert [(e.broker_id, e.host, e.port, e.rack) for e in pb.live_leaders] == [
        (1, "h1", 9001, "r1")
    ]


def test_stop_replica_and_update_metadata_fields():
    req = _requests(
        stop_replica=(StopReplicaPartitionState(TP, -2, True),),
        update_metadata=(
            UpdateMetadataPartitionState(TP, "tid", 5, -2, 4, (1,), 77, (1, 2), (2,)),
        ),
    )
    sr = wire.stop_replica(req)
    assert [
        (s.topic, s.partition, s.leader_epoch, s.delete_partition) for s in sr.partition_states
    ] == [("t", 3, -2, True)]
    um = wire.update_metadata(req, "ctl-host", 9190)
    s = um.partition_states[0]
    assert (s.leader, s.partition_epoch, list(s.offline_replicas)) == (-2, 77, [2])
    assert (um.controller_host, um.controller_port, um.broker_epoch) == ("ctl-host", 9190, 41)


def test_deleted_topics_update():
    um = wire.deleted_topics_update(
        controller_id=7, controller_epoch=5, broker_epoch=40, live_brokers=[B1],
        topics=["b", "a"], controller_host="c", controller_port=1,
    )  # fmt: skip
    assert list(um.deleted_topics) == ["a", "b"] and um.broker_epoch == 40
    assert not um.partition_states
