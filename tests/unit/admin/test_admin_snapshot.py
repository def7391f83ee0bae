"""Parsing one etcd revision into the admin service's Snapshot (pure, no etcd)."""

from __future__ import annotations

import pytest

from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2 as m
from services.admin.snapshot import (
    Broker,
    ControllerView,
    RawRead,
    build_snapshot,
)

KS = Keyspace("unit")


def kv(key: bytes, msg, create: int = 1, mod: int | None = None) -> KV:
    return KV(key, msg.SerializeToString(), create, mod if mod is not None else create, 1, 0)


def assignment(topic_id: str, partitions: dict[int, list[int]]) -> m.TopicAssignment:
    return m.TopicAssignment(
        topic_id=topic_id,
        partitions={p: m.ReplicaList(replicas=r) for p, r in partitions.items()},
    )


def test_brokers_sorted_with_epoch_from_create_revision():
    raw = RawRead(
        revision=50,
        brokers=(
            kv(KS.broker(3), m.BrokerRegistration(broker_id=3, host="h3", port=3, rack="b"), 12),
            kv(KS.broker(1), m.BrokerRegistration(broker_id=1, host="h1", port=1), 7, mod=30),
        ),
    )
    snap = build_snapshot(KS, raw)
    assert list(snap.brokers.values()) == [Broker(1, "h1", 1, "", 7), Broker(3, "h3", 3, "b", 12)]
    assert snap.revision == 50


@pytest.mark.parametrize(
    ("candidates", "epoch", "expected", "standbys"),
    [
        ([], None, None, ()),
        ([(2, 10), (1, 20)], (4, 2), ControllerView(2, "c2", 92, 4), (1,)),
        ([(2, 30), (1, 20), (3, 25)], (4, 2), ControllerView(1, "c1", 91, 0), (3, 2)),
        ([(5, 1)], None, ControllerView(5, "c5", 95, 0), ()),
    ],
    ids=["nobody", "leader-with-epoch", "epoch-not-bumped-yet", "no-epoch-key"],
)
def test_controller_is_the_oldest_candidate(candidates, epoch, expected, standbys):
    controllers = tuple(
        kv(
            KS.controller_election_prefix + f"{cid:x}".encode(),
            m.ControllerRegistration(controller_id=cid, host=f"c{cid}", port=90 + cid),
            create,
        )
        for cid, create in candidates
    )
    epoch_kv = (
        kv(KS.controller_epoch, m.ControllerEpoch(epoch=epoch[0], controller_id=epoch[1]))
        if epoch
        else None
    )
    snap = build_snapshot(KS, RawRead(1, controllers=controllers, controller_epoch=epoch_kv))
    assert snap.controller == expected
    assert snap.standby_controller_ids == standbys


def test_topics_with_states_configs_and_intents():
    raw = RawRead(
        revision=99,
        topics=(
            kv(KS.topic("a"), assignment("id-a", {0: [1, 2], 1: [2, 3, 4]}), 5, mod=40),
            kv(
                KS.partition_state("a", 1),
                m.PartitionState(leader=2, isr=[2, 3], adding_replicas=[4], removing_replicas=[3]),
                41,
                mod=44,
            ),  # fmt: skip
            kv(KS.topic("b"), assignment("id-b", {0: [1]}), 6),
        ),
        topic_configs=(kv(KS.topic_config("a"), m.ConfigEntries(entries={"x": "1"}), 8, mod=9),),
        deletions=(kv(KS.delete_topic("b"), m.TopicDeletion(topic_id="id-b", request_id="r"), 50),),
        reassignments=(
            kv(
                KS.reassignment("a", 0),
                m.ReassignmentIntent(target_replicas=[3], request_id="q"),
                60,
                mod=61,
            ),  # fmt: skip
        ),
        topic_keys=(
            KV(KS.topic("c"), b"", 0, 0, 0, 0),
            KV(KS.partition_state("c", 0), b"", 0, 0, 0, 0),
        ),
    )
    snap = build_snapshot(KS, raw)
    a, b = snap.topics["a"], snap.topics["b"]
    assert (a.topic_id, a.revision, dict(a.partitions)) == ("id-a", 40, {0: (1, 2), 1: (2, 3, 4)})
    assert (a.states[1].leader, a.states[1].epoch) == (2, 44)
    assert (dict(a.configs), a.config_revision) == ({"x": "1"}, 9)
    assert a.reassignments[0].revision == 61
    assert a.reassigning(0) and a.reassigning(1)
    assert a.replication_factor == 2
    assert (a.leader_of(0), a.leader_of(1)) == (-1, 2)
    assert b.marked_for_deletion and not a.marked_for_deletion
    assert snap.names == {"a", "b", "c"}
    assert snap.deleting == {"b"}


def test_a_lone_cancellation_intent_is_not_a_reassignment_in_progress():
    raw = RawRead(
        revision=3,
        topics=(kv(KS.topic("t"), assignment("i", {0: [1]})),),
        reassignments=(kv(KS.reassignment("t", 0), m.ReassignmentIntent(cancel=True)),),
    )
    assert not build_snapshot(KS, raw).topics["t"].reassigning(0)


def test_broker_configs_default_and_ids():
    raw = RawRead(
        revision=3,
        broker_configs=(
            kv(KS.broker_config(None), m.ConfigEntries(entries={"a": "1"}), 2, mod=3),
            kv(KS.broker_config(7), m.ConfigEntries(entries={"b": "2"}), 4),
            kv(KS.broker_configs_prefix + b"junk", m.ConfigEntries(entries={"c": "3"}), 5),
        ),
    )
    snap = build_snapshot(KS, raw)
    assert dict(snap.cluster_configs()) == {"a": "1"}
    assert dict(snap.broker_configs_of(7)) == {"b": "2"}
    assert dict(snap.broker_configs_of(8)) == {}
    assert set(snap.broker_configs) == {None, 7}
    assert snap.broker_configs[None][1] == 3
