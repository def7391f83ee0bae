"""Watch batches become typed controller events; snapshots become the changes they imply."""

from __future__ import annotations

from leasehold.etcd.client import KV, WatchEvent
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2
from services.controller import events as ev
from services.controller.core import TopicPartition
from services.controller.watcher import ClusterWatcher

KS = Keyspace("c1")


def kv(key: bytes, value: bytes = b"", rev: int = 1, create: int = 1) -> KV:
    return KV(key, value, create, rev, 1, 0)


def reg(b: int) -> bytes:
    return metadata_pb2.BrokerRegistration(broker_id=b, host="h", port=b).SerializeToString()


def topic(*replicas: list[int]) -> bytes:
    return metadata_pb2.TopicAssignment(
        topic_id="id",
        partitions={p: metadata_pb2.ReplicaList(replicas=r) for p, r in enumerate(replicas)},
    ).SerializeToString()


def state(leader: int) -> bytes:
    return metadata_pb2.PartitionState(leader=leader, isr=[leader]).SerializeToString()


def collect() -> tuple[ClusterWatcher, list]:
    out: list = []
    return ClusterWatcher(None, KS, out.append), out


async def test_one_batch_becomes_ordered_events_last_change_wins():
    w, out = collect()
    await w._on_events(
        (
            WatchEvent(False, kv(KS.topic("t"), topic([1, 2]), rev=5)),
            WatchEvent(False, kv(KS.broker(1), reg(1), rev=5, create=5)),
            WatchEvent(False, kv(KS.partition_state("t", 0), state(1), rev=6)),
            WatchEvent(False, kv(KS.partition_state("t", 0), state(2), rev=7)),
            WatchEvent(True, kv(KS.broker(2), rev=7)),
            WatchEvent(
                False,
                kv(KS.election("e1"), metadata_pb2.ElectionIntent().SerializeToString(), rev=7),
            ),
            WatchEvent(False, kv(KS.result("r"), b"ignored", rev=7)),
            WatchEvent(
                False,
                kv(
                    KS.broker_config(None),
                    metadata_pb2.ConfigEntries(entries={"a": "b"}).SerializeToString(),
                    rev=7,
                ),
            ),
            WatchEvent(False, kv(KS.topic("bad"), b"\xff\xff", rev=7)),
        ),
        99,  # the header revision may run ahead of the events
    )
    assert [type(e) for e in out] == [
        ev.ConfigChange, ev.BrokerChange, ev.TopicChange, ev.PartitionStateChange,
        ev.ElectionRequest, ev.Synced,
    ]  # fmt: skip
    cfg, brokers, topics, states, elections, synced = out
    assert cfg.cluster_changed and cfg.cluster == {"a": "b"}
    assert [(b.id, b.epoch) for b in brokers.registered] == [(1, 5)] and brokers.deregistered == (
        2,
    )
    assert [(u.topic, u.mod_revision) for u in topics.updates] == [("t", 5)]
    (s,) = states.updates
    assert (s.tp, s.state.leader_and_isr.leader, s.state.leader_and_isr.partition_epoch) == (
        TopicPartition("t", 0),
        2,
        7,
    )
    assert [e.request_id for e in elections.updates] == ["e1"]
    assert synced.revision == 7


async def test_bounce_in_one_batch_reports_both():
    w, out = collect()
    await w._on_events(
        (
            WatchEvent(True, kv(KS.broker(1), rev=8)),
            WatchEvent(False, kv(KS.broker(1), reg(1), rev=9, create=9)),
        ),
        9,
    )
    change = out[0]
    assert change.deregistered == (1,) and [b.epoch for b in change.registered] == [9]


async def test_reload_after_compaction_emits_the_difference():
    w, out = collect()
    await w._on_load([kv(KS.broker(1), reg(1), 3), kv(KS.topic("t"), topic([1]), 4)], 10)
    out.clear()
    await w._on_load([kv(KS.broker(1), reg(1), 3), kv(KS.broker(3), reg(3), 12, 12)], 20)
    kinds = {type(e): e for e in out}
    assert [b.id for b in kinds[ev.BrokerChange].registered] == [3]
    assert [(u.topic, u.assignment) for u in kinds[ev.TopicChange].updates] == [("t", None)]
    assert kinds[ev.Synced].revision == 20
    assert set(w.mirror) == {KS.broker(1), KS.broker(3)}
    snapshot = w.snapshot_events()
    assert [b.id for b in snapshot[0].registered] == [1, 3]
