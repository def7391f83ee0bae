"""A simulated broker answers the controller's requests as the real broker does.

The same requests, in the same order, go through ``BrokerControlServicer`` to the real
``ReplicaManager`` (logs on a temporary directory) and to ``SimulatedReplicas``; every answer
must be the same message, error codes and per-partition codes included. The sequence covers
each fence and per-partition decision: become leader and follower, not a replica, a repeated
leader epoch, stale controller and broker epochs, StopReplica with an older epoch and with
delete, UpdateMetadata, a digest-only one that matches and one that does not.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from leasehold import control_stream, metadata_digest
from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from leasehold.etcd import Keyspace
from services.broker_agent.control_servicer import BrokerControlServicer
from services.broker_agent.log import LogManager
from services.broker_agent.metadata_cache import MetadataCache
from services.broker_agent.model import TopicPartition
from services.broker_agent.replica_manager import ReplicaManager
from services.broker_agent.simulation import broker as sim_broker
from services.broker_agent.simulation.broker import Observation, ObservedControlServicer, Watch
from services.broker_agent.simulation.replicas import SimulatedReplicas
from services.broker_agent.topic_configs import ConfigStore

LOCAL = 1
BROKER_EPOCH = 7


def lai(controller_epoch: int, broker_epoch: int, *parts: tuple) -> control_pb2.LeaderAndIsrRequest:
    """parts: (topic, partition, leader, leader_epoch, replicas)."""
    return control_pb2.LeaderAndIsrRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        partition_states=[
            control_pb2.LeaderAndIsrPartitionState(
                topic=t,
                topic_id=f"id-{t}",
                partition=p,
                controller_epoch=controller_epoch,
                leader=leader,
                leader_epoch=epoch,
                isr=list(replicas),
                replicas=list(replicas),
            )
            for t, p, leader, epoch, replicas in parts
        ],
        live_leaders=[common_pb2.BrokerEndpoint(broker_id=2, host="127.0.0.1", port=1)],
    )


def stop(controller_epoch: int, *parts: tuple) -> control_pb2.StopReplicaRequest:
    """parts: (topic, partition, leader_epoch, delete)."""
    return control_pb2.StopReplicaRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=BROKER_EPOCH,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=t, partition=p, leader_epoch=e, delete_partition=d
            )
            for t, p, e, d in parts
        ],
    )


def um_state(topic: str, partition: int, leader: int, epoch: int):
    return control_pb2.UpdateMetadataPartitionState(
        topic=topic,
        topic_id=f"id-{topic}",
        partition=partition,
        controller_epoch=2,
        leader=leader,
        leader_epoch=epoch,
        isr=[1, 2],
        replicas=[1, 2],
    )


def update(
    controller_epoch: int, states=(), digest: bytes = b""
) -> control_pb2.UpdateMetadataRequest:
    return control_pb2.UpdateMetadataRequest(
        controller_id=100,
        controller_epoch=controller_epoch,
        broker_epoch=BROKER_EPOCH,
        partition_states=list(states),
        live_brokers=[
            common_pb2.BrokerEndpoint(broker_id=b, host="127.0.0.1", port=b) for b in (1, 2)
        ],
        metadata_digest=digest,
    )


STATES = [um_state("a", 0, 1, 1), um_state("a", 1, 2, 1), um_state("b", 0, 1, 3)]
MATCHING = metadata_digest.to_bytes(
    metadata_digest.combine(sum(metadata_digest.state_hash(s.SerializeToString()) for s in STATES))
)

SEQUENCE = [
    lai(1, BROKER_EPOCH, ("a", 0, 1, 1, (1, 2)), ("a", 1, 2, 1, (1, 2)), ("c", 0, 2, 1, (2, 3))),
    lai(1, BROKER_EPOCH, ("a", 0, 1, 1, (1, 2)), ("b", 0, 1, 3, (1, 2))),  # a-0: same epoch
    lai(0, BROKER_EPOCH, ("b", 1, 1, 1, (1, 2))),  # stale controller epoch
    lai(2, BROKER_EPOCH - 1, ("b", 1, 1, 1, (1, 2))),  # stale broker epoch
    lai(2, -1, ("a", 1, 1, 2, (1, 2))),  # unknown broker epoch: a-1 becomes leader
    stop(2, ("a", 0, 0, False), ("a", 1, 2, False), ("z", 0, 5, False)),  # a-0 fenced
    stop(2, ("b", 0, -2, True)),  # deletion sentinel
    update(2, STATES),
    update(3, digest=MATCHING),
    update(3, digest=bytes(metadata_digest.DIGEST_SIZE)),  # mismatch
    update(1, STATES),  # stale controller epoch
    lai(3, BROKER_EPOCH, ("b", 0, 2, 4, (1, 2))),  # deleted earlier: follower again
]


@pytest.fixture
def real(tmp_path):
    logs = LogManager(tmp_path)
    ticks = itertools.count()
    configs = ConfigStore(Keyspace("test"), LOCAL, 1, 1 << 20)
    replicas = ReplicaManager(LOCAL, logs, MetadataCache(), configs, lambda: next(ticks), 30_000)
    replicas.broker_epoch = BROKER_EPOCH
    yield replicas
    logs.close()


def simulated() -> SimulatedReplicas:
    replicas = SimulatedReplicas(LOCAL, MetadataCache())
    replicas.broker_epoch = BROKER_EPOCH
    return replicas


async def answers(servicer: BrokerControlServicer) -> list:
    out = []
    for request in SEQUENCE:
        call = {
            control_pb2.LeaderAndIsrRequest: servicer.LeaderAndIsr,
            control_pb2.StopReplicaRequest: servicer.StopReplica,
            control_pb2.UpdateMetadataRequest: servicer.UpdateMetadata,
        }[type(request)]
        out.append(await call(request, None))
    return out


async def test_a_simulated_broker_answers_every_request_as_the_real_one(real):
    sim = simulated()
    expected = await answers(BrokerControlServicer(real))
    got = await answers(ObservedControlServicer(sim, Observation()))
    assert got == expected
    # The sequence did exercise each outcome (a parity of empty answers would prove nothing).
    codes = {e.error_code for e in expected}
    per_partition = {
        p.error_code for e in expected if hasattr(e, "partition_errors") for p in e.partition_errors
    }
    assert common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH in per_partition
    assert common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH in per_partition
    assert common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION in per_partition
    assert common_pb2.ERROR_CODE_METADATA_DIGEST_MISMATCH in codes
    assert common_pb2.ERROR_CODE_STALE_BROKER_EPOCH in codes


async def test_the_simulated_replicas_hold_the_roles_the_real_ones_took(real):
    sim = simulated()
    await answers(BrokerControlServicer(real))
    await answers(ObservedControlServicer(sim, Observation()))
    roles = {tp: (p.leader_epoch, p.is_leader) for tp, p in real.partitions.items()}
    assert {tp: (p.leader_epoch, p.is_leader) for tp, p in sim.partitions.items()} == roles
    assert roles[TopicPartition("a", 1)] == (2, False)  # led at epoch 2, then stopped
    assert roles[TopicPartition("b", 0)] == (4, False)
    assert sim.metadata.digest() == real.metadata.digest() == MATCHING
    assert (sim.controller_epoch, real.controller_epoch) == (3, 3)
    # The count of partitions led, kept as roles change, is what a pass over them finds.
    assert sim.leading == sim.leader_count() == sum(p.is_leader for p in real.partitions.values())


async def test_the_observed_servicer_counts_update_metadata_bytes_and_epochs():
    seen = Observation()
    await answers(ObservedControlServicer(simulated(), seen))
    updates = [r for r in SEQUENCE if isinstance(r, control_pb2.UpdateMetadataRequest)]
    assert seen.update_metadata_requests == len(updates)
    assert seen.update_metadata_bytes == sum(r.ByteSize() for r in updates)
    assert seen.digest_mismatches == 1
    assert sorted(seen.epoch_seen_at) == [2, 3]


class _Stream:
    """The servicer context of a control stream, as far as a request that succeeds uses it."""

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


@pytest.mark.parametrize("streamed", [True, False])
async def test_the_update_that_clears_a_watch_notes_when_it_arrived(monkeypatch, streamed):
    """``cleared_at`` is when the UpdateMetadata that left none of the watched partitions led
    was applied, ``cleared_arrived_at`` when it reached the servicer: on a control stream, when
    its envelope was read, before it is decoded; as a unary call, when the call began."""
    ticks = iter(range(100, 110))
    clock = SimpleNamespace(time=lambda: float(next(ticks)))
    monkeypatch.setattr(sim_broker, "time", clock)
    seen = Observation()
    sim = simulated()
    servicer = ObservedControlServicer(sim, seen)
    await servicer.UpdateMetadata(update(2, [um_state("a", 0, 1, 1)]), None)  # 100, 101
    watched = TopicPartition("a", 0)
    seen.watch, seen.still_led = Watch(1, (watched,)), 1
    moved = update(2, [um_state("a", 0, 2, 2)])
    if streamed:

        async def requests():
            yield control_stream.encode_request(1, "UpdateMetadata", moved.SerializeToString())

        def decode(body: bytes) -> control_pb2.UpdateMetadataRequest:
            clock.time()  # decoding takes a tick: the arrival is before it
            return control_pb2.UpdateMetadataRequest.FromString(body)

        answers = [
            a
            async for a in servicer.Control(
                requests(), _Stream(), {control_stream.UPDATE_METADATA: decode}
            )
        ]
        assert len(answers) == 1
        expected = (102.0, 104.0)
    else:
        await servicer.UpdateMetadata(moved, None)
        expected = (102.0, 103.0)
    assert sim.metadata.partition(watched).leader == 2
    assert seen.still_led == 0
    assert (seen.cleared_arrived_at, seen.cleared_at) == expected
    assert servicer._arrived is None  # nothing left for a later unary call to take
