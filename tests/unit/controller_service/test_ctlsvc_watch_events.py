"""Watch batches become typed controller events; snapshots become the changes they imply.

The watcher queues each batch undecoded (``WatchDelivery``); decoding, and the mirror update,
happen when the event loop expands it."""

from __future__ import annotations

import time

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


class Expanding(list):
    """A sink that expands every delivery at once, as an event loop with nothing else to do."""

    def __init__(self) -> None:
        super().__init__()
        self.deliveries: list[ev.WatchDelivery] = []

    def put(self, delivery: ev.WatchDelivery) -> None:
        self.deliveries.append(delivery)
        self.extend(delivery.expand())


def collect() -> tuple[ClusterWatcher, Expanding]:
    out = Expanding()
    return ClusterWatcher(None, KS, out.put), out


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
    # Nothing resumed (that is the outage grace's to say), and dated when the watch delivered
    # it: an expired record's evidence.
    assert change.resumed == () and 0 < change.received_ms <= time.time() * 1000


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


async def test_the_mirror_follows_expansion_not_receipt():
    """Batches are applied to the mirror in the order the loop expands them, not on receipt:
    the mirror is what the controller has seen."""
    held: list[ev.WatchDelivery] = []
    w = ClusterWatcher(None, KS, held.append)
    await w._on_events((WatchEvent(False, kv(KS.broker(1), reg(1), rev=3, create=3)),), 3)
    await w._on_events((WatchEvent(True, kv(KS.broker(1), rev=4)),), 4)
    assert w.mirror == {} and w.revision == 0
    first = held[0].expand()
    assert set(w.mirror) == {KS.broker(1)} and w.revision == 3
    assert [b.id for b in first[0].registered] == [1] and first[-1] == ev.Synced(3)
    second = held[1].expand()
    assert w.mirror == {} and w.revision == 4
    assert second[0].deregistered == (1,) and second[-1] == ev.Synced(4)


async def test_a_reload_is_diffed_against_the_mirror_when_expanded():
    """A reload queued behind an unexpanded batch is compared with the mirror after that
    batch: a key the batch created and the snapshot no longer has is reported deleted."""
    held: list[ev.WatchDelivery] = []
    w = ClusterWatcher(None, KS, held.append)
    await w._on_events((WatchEvent(False, kv(KS.broker(2), reg(2), rev=5, create=5)),), 5)
    await w._on_load([kv(KS.broker(1), reg(1), 6, 6)], 9)
    assert held[1].partition_states_only is False and held[1].revision == 9
    held[0].expand()
    changes = held[1].expand()
    (brokers,) = [e for e in changes if isinstance(e, ev.BrokerChange)]
    assert [b.id for b in brokers.registered] == [1] and brokers.deregistered == (2,)
    assert set(w.mirror) == {KS.broker(1)} and changes[-1] == ev.Synced(9)


def state_event(topic_name: str, partition: int, rev: int) -> WatchEvent:
    return WatchEvent(False, kv(KS.partition_state(topic_name, partition), state(1), rev=rev))


async def test_deliveries_say_whether_they_carry_partition_states_only():
    held: list[ev.WatchDelivery] = []
    w = ClusterWatcher(None, KS, held.append)
    cases = [
        ((state_event("t", 0, 3), state_event("t", 1, 3)), True),
        ((WatchEvent(True, kv(KS.partition_state("t", 0), rev=4)),), True),
        ((state_event("t", 0, 5), WatchEvent(False, kv(KS.topic("t"), topic([1]), rev=5))), False),
        # a topic named "state": its assignment key ends like a state key but is not one
        ((WatchEvent(False, kv(KS.topic("state"), topic([1]), rev=6)),), False),
        ((WatchEvent(False, kv(KS.controller_epoch, b"", rev=7)),), False),
    ]
    for events, _ in cases:
        await w._on_events(events, 99)
    assert [d.partition_states_only for d in held] == [want for _, want in cases]
    assert [d.revision for d in held] == [3, 4, 5, 6, 7]
    assert [d.changes for d in held] == [2, 1, 2, 1, 1]
    topics = held[3].expand()
    assert [u.topic for u in topics[0].updates] == ["state"]
