"""BrokerControlService against a running agent: fencing, per-partition errors, StopReplica,
UpdateMetadata into Metadata, and malformed requests."""

from __future__ import annotations

import hashlib

import grpc
import pytest
from broker_harness import leader_and_isr, partition_state

from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.common.v1 import common_pb2
from services.broker_agent.model import Code, TopicPartition


def hosted(b, topic, partition):
    return b.agent.replicas.partition(TopicPartition(topic, partition))


def errors(resp) -> dict[tuple[str, int], int]:
    return {(e.topic, e.partition): e.error_code for e in resp.partition_errors}


def stop_request(b, partitions, *, controller_epoch=1, broker_epoch=None):
    return control_pb2.StopReplicaRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=b.epoch if broker_epoch is None else broker_epoch,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=t, partition=p, leader_epoch=e, delete_partition=d
            )
            for t, p, e, d in partitions
        ],
    )


def metadata_request(b, states, brokers, *, controller_epoch=1, broker_epoch=None, deleted=()):
    return control_pb2.UpdateMetadataRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=b.epoch if broker_epoch is None else broker_epoch,
        partition_states=states,
        live_brokers=brokers,
        deleted_topics=list(deleted),
        controller_host="127.0.0.1",
        controller_port=9999,
    )


async def lead(b, topic, epoch, partition=0, controller_epoch=1):
    state = partition_state(topic, partition, leader=1, leader_epoch=epoch, replicas=[1])
    return await b.control.LeaderAndIsr(
        leader_and_isr(b, [state], controller_epoch=controller_epoch)
    )


async def test_stale_broker_and_controller_epochs_reject_the_whole_request(brokers):
    b = await brokers(1)
    assert b.epoch > 0
    state = partition_state("t", 0, leader=1, leader_epoch=1, replicas=[1])
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, [state], broker_epoch=b.epoch - 1))
    assert (resp.error_code, list(resp.partition_errors)) == (Code.STALE_BROKER_EPOCH, [])
    assert "broker epoch" in resp.error_message
    # A newer controller epoch is accepted and remembered...
    assert (await lead(b, "t", 1, controller_epoch=5)).error_code == Code.NONE
    # ... so an older one is now rejected, for every request type, and changes nothing.
    resp = await b.control.LeaderAndIsr(
        leader_and_isr(
            b,
            [partition_state("t", 0, leader=1, leader_epoch=9, replicas=[1])],
            controller_epoch=4,
        )
    )
    assert (resp.error_code, list(resp.partition_errors)) == (Code.STALE_CONTROLLER_EPOCH, [])
    assert hosted(b, "t", 0).leader_epoch == 1
    resp = await b.control.StopReplica(stop_request(b, [("t", 0, -1, True)], controller_epoch=4))
    assert resp.error_code == Code.STALE_CONTROLLER_EPOCH
    assert (b.data_dir / "t-0").is_dir()
    resp = await b.control.StopReplica(stop_request(b, [("t", 0, -1, True)], broker_epoch=1))
    assert resp.error_code == Code.STALE_BROKER_EPOCH
    resp = await b.control.UpdateMetadata(metadata_request(b, [], [], controller_epoch=4))
    assert resp.error_code == Code.STALE_CONTROLLER_EPOCH
    resp = await b.control.UpdateMetadata(metadata_request(b, [], [], broker_epoch=1))
    assert resp.error_code == Code.STALE_BROKER_EPOCH
    # Unknown broker epoch (-1) bypasses the broker-epoch check.
    resp = await b.control.UpdateMetadata(
        metadata_request(b, [], [], controller_epoch=5, broker_epoch=-1)
    )
    assert resp.error_code == Code.NONE


async def test_per_partition_errors_and_leader_epoch_ordering(brokers):
    b = await brokers(1)
    states = [
        partition_state("t", 0, leader=1, leader_epoch=3, replicas=[1, 2]),
        partition_state("t", 1, leader=2, leader_epoch=0, replicas=[2, 3]),  # not ours
    ]
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, states))
    assert resp.error_code == Code.NONE
    assert errors(resp) == {("t", 0): Code.NONE, ("t", 1): Code.UNKNOWN_TOPIC_OR_PARTITION}
    assert not (b.data_dir / "t-1").exists()

    # Equal and older epochs are ignored with STALE_CONTROLLER_EPOCH; newer ones apply.
    states = [
        partition_state("t", 0, leader=2, leader_epoch=3, replicas=[1, 2]),
        partition_state("u", 0, leader=1, leader_epoch=0, replicas=[1]),
    ]
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, states))
    assert errors(resp) == {("t", 0): Code.STALE_CONTROLLER_EPOCH, ("u", 0): Code.NONE}
    resp = await b.control.LeaderAndIsr(
        leader_and_isr(b, [partition_state("t", 0, leader=2, leader_epoch=2, replicas=[1, 2])])
    )
    assert errors(resp) == {("t", 0): Code.STALE_CONTROLLER_EPOCH}
    assert hosted(b, "t", 0).is_leader
    resp = await b.control.LeaderAndIsr(
        leader_and_isr(
            b,
            [partition_state("t", 0, leader=2, leader_epoch=4, replicas=[1, 2])],
            live_leaders=[common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=1)],
        )
    )
    assert errors(resp) == {("t", 0): Code.NONE}
    partition = hosted(b, "t", 0)
    assert (partition.is_leader, partition.leader_id, partition.leader_epoch) == (False, 2, 4)
    # As a follower it fetches from broker 2 (unreachable here, so it keeps retrying).
    assert b.agent.replicas.fetchers.fetch_state(partition.tp) is not None


async def test_storage_failure_is_reported_per_partition(brokers):
    b = await brokers(1)
    # A plain file where the partition's directory must go: creating the log fails.
    (b.data_dir / "broken-0").write_bytes(b"not a directory")
    states = [
        partition_state("broken", 0, leader=1, leader_epoch=1, replicas=[1]),
        partition_state("fine", 0, leader=1, leader_epoch=1, replicas=[1]),
    ]
    resp = await b.control.LeaderAndIsr(leader_and_isr(b, states))
    assert errors(resp) == {
        ("broken", 0): Code.KAFKA_STORAGE_ERROR,
        ("fine", 0): Code.NONE,
    }


async def test_stop_replica_with_and_without_delete(brokers):
    b = await brokers(1)
    for topic in ("keep", "gone"):
        assert errors(await lead(b, topic, 2)) == {(topic, 0): Code.NONE}
    produce = broker_pb2.ProduceRequest(
        acks=1,
        topics=[
            broker_pb2.TopicProduceData(
                topic="keep",
                partitions=[
                    broker_pb2.PartitionProduceData(
                        partition=0,
                        current_leader_epoch=-1,
                        records=[broker_pb2.Record(value=b"x")],
                    )
                ],
            )
        ],
    )
    assert (await b.broker.Produce(produce)).topics[0].partitions[0].error_code == Code.NONE

    # An older leader epoch is fenced and changes nothing.
    resp = await b.control.StopReplica(stop_request(b, [("gone", 0, 1, True)]))
    assert errors(resp) == {("gone", 0): Code.FENCED_LEADER_EPOCH}
    assert (b.data_dir / "gone-0").is_dir()

    resp = await b.control.StopReplica(
        stop_request(b, [("keep", 0, 2, False), ("gone", 0, -2, True), ("never", 3, -2, True)])
    )
    assert resp.error_code == Code.NONE
    assert errors(resp) == {("keep", 0): Code.NONE, ("gone", 0): Code.NONE, ("never", 3): Code.NONE}
    assert not (b.data_dir / "gone-0").exists()
    assert (b.data_dir / "keep-0").is_dir()
    # The stopped replica no longer leads.
    result = (await b.broker.Produce(produce)).topics[0].partitions[0]
    assert result.error_code == Code.NOT_LEADER_OR_FOLLOWER
    # A deleted partition can be created again by a later LeaderAndIsr.
    assert errors(await lead(b, "gone", 3)) == {("gone", 0): Code.NONE}
    assert (b.data_dir / "gone-0").is_dir()


async def test_metadata_answers_from_update_metadata(brokers):
    b = await brokers(1)
    endpoints = [
        common_pb2.BrokerEndpoint(broker_id=1, host="127.0.0.1", port=9001, rack="r1"),
        common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=9002, rack="r2"),
    ]
    states = [
        control_pb2.UpdateMetadataPartitionState(
            topic="m", topic_id="tid", partition=p, controller_epoch=1, leader=leader,
            leader_epoch=4, isr=[1, 2], partition_epoch=9, replicas=[1, 2, 3],
        )
        for p, leader in ((0, 1), (1, 3))
    ]  # fmt: skip
    resp = await b.control.UpdateMetadata(metadata_request(b, states, endpoints))
    assert resp.error_code == Code.NONE
    md = await b.broker.Metadata(broker_pb2.MetadataRequest(all_topics=True))
    assert [(x.broker_id, x.port, x.rack) for x in md.brokers] == [(1, 9001, "r1"), (2, 9002, "r2")]
    assert (md.controller_id, md.controller_epoch, md.cluster_id) == (
        100,
        1,
        b.agent.config.common.cluster_id,
    )
    (topic,) = md.topics
    assert (topic.name, topic.topic_id, topic.error_code) == ("m", "tid", Code.NONE)
    got = [
        (p.partition, p.error_code, p.leader, p.leader_epoch, list(p.isr), list(p.offline_replicas))
        for p in topic.partitions
    ]
    assert got == [
        (0, Code.NONE, 1, 4, [1, 2], [3]),
        (1, Code.LEADER_NOT_AVAILABLE, -1, 4, [1, 2], [3]),
    ]
    md = await b.broker.Metadata(broker_pb2.MetadataRequest(topics=["nope", "m"]))
    assert [(t.name, t.error_code) for t in md.topics] == [
        ("nope", Code.UNKNOWN_TOPIC_OR_PARTITION),
        ("m", Code.NONE),
    ]
    resp = await b.control.UpdateMetadata(metadata_request(b, [], endpoints, deleted=["m"]))
    md = await b.broker.Metadata(broker_pb2.MetadataRequest(all_topics=True))
    assert list(md.topics) == []


@pytest.mark.parametrize(
    "bad",
    [
        partition_state("", 0, leader=1, leader_epoch=1, replicas=[1]),
        partition_state("t", -1, leader=1, leader_epoch=1, replicas=[1]),
    ],
)
async def test_malformed_control_requests_are_invalid_argument(brokers, bad):
    b = await brokers(1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await b.control.LeaderAndIsr(leader_and_isr(b, [bad]))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    twice = partition_state("t", 0, leader=1, leader_epoch=1, replicas=[1])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await b.control.LeaderAndIsr(leader_and_isr(b, [twice, twice]))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert b.agent.replicas.partitions == {}


def _digest(states) -> bytes:
    """The metadata digest as control.proto defines it, computed here from the states."""
    total = sum(
        int.from_bytes(hashlib.blake2b(s.SerializeToString(), digest_size=16).digest(), "little")
        for s in states
    )
    return (total % (1 << 128)).to_bytes(16, "little")


async def test_digest_only_update_metadata(brokers):
    b = await brokers(1)
    one = [common_pb2.BrokerEndpoint(broker_id=1, host="127.0.0.1", port=9001)]
    two = [*one, common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=9002)]
    states = [
        control_pb2.UpdateMetadataPartitionState(
            topic=t, topic_id=f"id-{t}", partition=p, controller_epoch=1, leader=1,
            leader_epoch=p, isr=[1], partition_epoch=p, replicas=[1, 2],
        )
        for t in ("x", "y")
        for p in range(3)
    ]  # fmt: skip
    gone = control_pb2.UpdateMetadataPartitionState(topic="y", partition=2, leader=-2)
    for sent in (states, [gone]):
        resp = await b.control.UpdateMetadata(metadata_request(b, sent, one))
        assert resp.error_code == Code.NONE
    held = states[:-1]  # y-2 was dropped by its deletion marker

    async def shown():
        md = await b.broker.Metadata(broker_pb2.MetadataRequest(all_topics=True))
        parts = sorted((t.name, p.partition, p.leader) for t in md.topics for p in t.partitions)
        return md.controller_epoch, [x.broker_id for x in md.brokers], parts

    before = await shown()
    assert before == (1, [1], [("x", 0, 1), ("x", 1, 1), ("x", 2, 1), ("y", 0, 1), ("y", 1, 1)])

    def digest_only(digest, epoch, **kw):
        return control_pb2.UpdateMetadataRequest(
            controller_id=101, controller_epoch=epoch, broker_epoch=b.epoch,
            live_brokers=two, metadata_digest=digest, **kw,
        )  # fmt: skip

    # Another cache content: refused, nothing applied (not even the epoch or the brokers).
    resp = await b.control.UpdateMetadata(digest_only(_digest(states), 2))
    assert resp.error_code == Code.METADATA_DIGEST_MISMATCH
    assert _digest(held).hex() in resp.error_message
    assert await shown() == before

    # Malformed: INVALID_ARGUMENT, nothing applied.
    for bad in (
        digest_only(b"\x01" * 15, 2),
        digest_only(_digest(held), 2, partition_states=[states[0]]),
        digest_only(_digest(held), 2, deleted_topics=["x"]),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await b.control.UpdateMetadata(bad)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert await shown() == before

    # The digest of what it holds: the new epoch and live brokers, the same partitions.
    resp = await b.control.UpdateMetadata(digest_only(_digest(held), 2))
    assert resp.error_code == Code.NONE
    assert await shown() == (2, [1, 2], before[2])
    md = await b.broker.Metadata(broker_pb2.MetadataRequest(all_topics=True))
    assert md.controller_id == 101


async def test_live_brokers_named_as_a_change(brokers):
    """An UpdateMetadata may name the live brokers as a change from a set the broker holds
    (``live_brokers_base``): applied only when the broker holds that set, refused with
    METADATA_DIGEST_MISMATCH (nothing applied) otherwise, malformed ones refused."""
    b = await brokers(1)
    ends = {
        i: common_pb2.BrokerEndpoint(broker_id=i, host="127.0.0.1", port=9000 + i)
        for i in (1, 2, 3)
    }

    def set_digest(ids) -> bytes:
        total = sum(
            int.from_bytes(
                hashlib.blake2b(ends[i].SerializeToString(), digest_size=16).digest(), "little"
            )
            for i in ids
        )
        return (total % (1 << 128)).to_bytes(16, "little")

    async def live():
        md = await b.broker.Metadata(broker_pb2.MetadataRequest(all_topics=True))
        return md.controller_epoch, [x.broker_id for x in md.brokers]

    def request(epoch, **kw):
        return control_pb2.UpdateMetadataRequest(
            controller_id=101, controller_epoch=epoch, broker_epoch=b.epoch, **kw
        )

    resp = await b.control.UpdateMetadata(request(1, live_brokers=[ends[1], ends[2]]))
    assert resp.error_code == Code.NONE
    assert await live() == (1, [1, 2])

    # A change from a set it does not hold: refused, nothing applied (not even the epoch).
    resp = await b.control.UpdateMetadata(
        request(2, live_brokers_base=set_digest([1]), live_brokers=[ends[3]])
    )
    assert resp.error_code == Code.METADATA_DIGEST_MISMATCH
    assert set_digest([1, 2]).hex() in resp.error_message
    assert await live() == (1, [1, 2])

    # Malformed: INVALID_ARGUMENT, nothing applied.
    for bad in (
        request(2, live_brokers_base=b"\x01" * 15),
        request(2, removed_brokers=[2]),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await b.control.UpdateMetadata(bad)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert await live() == (1, [1, 2])

    # From the set it holds: broker 2 left, broker 3 joined.
    resp = await b.control.UpdateMetadata(
        request(
            2, live_brokers_base=set_digest([1, 2]), live_brokers=[ends[3]], removed_brokers=[2]
        )
    )
    assert resp.error_code == Code.NONE
    assert await live() == (2, [1, 3])
    # Unchanged: the base alone.
    resp = await b.control.UpdateMetadata(request(3, live_brokers_base=set_digest([1, 3])))
    assert resp.error_code == Code.NONE
    assert await live() == (3, [1, 3])
