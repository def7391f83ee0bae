"""Reassignment: seed 002's AR/ISR sequence, cancellation (KIP-455), throttles (KIP-73), crash."""

from __future__ import annotations

import asyncio

from ctlharness import catch_up, eventually

from leasehold.common.v1 import common_pb2
from leasehold.metadata.v1 import metadata_pb2
from services.controller.codec import decode_partition_state
from services.controller.core import TopicPartition

LEADER_T = "leader.replication.throttled.replicas"
FOLLOWER_T = "follower.replication.throttled.replicas"


async def _setup(cluster, n=6):
    for b in range(1, n + 1):
        await cluster.add_broker(b)
    node = await cluster.add_controller(1)
    await cluster.active()
    return node


async def _reassign(cluster, topic, partition, target, request_id, cancel=False):
    intent = metadata_pb2.ReassignmentIntent(
        target_replicas=target, cancel=cancel, request_id=request_id
    )
    await cluster.etcd.put(cluster.ks.reassignment(topic, partition), intent.SerializeToString())


async def _configs(cluster, topic) -> dict[str, str]:
    kv = await cluster.etcd.get(cluster.ks.topic_config(topic))
    return {} if kv is None else dict(metadata_pb2.ConfigEntries.FromString(kv.value).entries)


class History:
    """(AR, leader, ISR) of partition 0 after every etcd change to the topic's keys."""

    def __init__(self, cluster, topic):
        self.cluster, self.topic = cluster, topic
        self.rows: list[tuple[frozenset, int, frozenset]] = []
        self._ar: frozenset = frozenset()
        self._state = None

    async def run(self, start_revision: int):
        ks = self.cluster.ks
        async for batch in self.cluster.etcd.watch(
            ks.topic(self.topic), prefix=True, start_revision=start_revision
        ):
            for ev in batch.events:
                if ev.deleted:
                    continue
                if ev.kv.key == ks.topic(self.topic):
                    pb = metadata_pb2.TopicAssignment.FromString(ev.kv.value)
                    self._ar = frozenset(pb.partitions[0].replicas)
                elif ev.kv.key == ks.partition_state(self.topic, 0):
                    self._state = decode_partition_state(ev.kv.value, ev.kv.mod_revision)
                if self._state is not None and self._ar:
                    lai = self._state.leader_and_isr
                    row = (self._ar, lai.leader, frozenset(lai.isr))
                    if not self.rows or self.rows[-1] != row:
                        self.rows.append(row)


async def test_reassignment_follows_seed_002_table(cluster):
    node = await _setup(cluster)
    _, rev = await cluster.etcd.get_with_revision(cluster.ks.topic("r"))
    history = History(cluster, "r")
    watcher = asyncio.create_task(history.run(rev + 1))
    try:
        await cluster.create_topic("r", {0: [1, 2, 3]})
        await cluster.wait_states("r", 1, lambda s: True)
        await _reassign(cluster, "r", 0, [4, 5, 6], "ra-1")
        await eventually(
            lambda: set(node.controller.ctx.replicas(TopicPartition("r", 0))) == set(range(1, 7)),
            10,
            "reassignment started",
        )
        state = (await cluster.wait_states("r", 1, lambda s: bool(s.adding)))[0]
        assert (set(state.adding), set(state.removing)) == ({4, 5, 6}, {1, 2, 3})
        await eventually(lambda: _set_ar(cluster, "r"), 10, "AR = OAR + RAR in etcd")
        configs = await _configs(cluster, "r")
        assert set(configs[LEADER_T].split(",")) == {"0:1", "0:2", "0:3"}
        assert set(configs[FOLLOWER_T].split(",")) == {"0:4", "0:5", "0:6"}
        for b in (4, 5, 6):  # the new replicas were told to start (is_new)
            await eventually(lambda b=b: cluster.brokers[b].of_kind("LeaderAndIsr"), 10, "LAI")
            s = cluster.brokers[b].of_kind("LeaderAndIsr")[-1].request.partition_states[0]
            assert s.is_new and set(s.adding_replicas) == {4, 5, 6}
        assert await cluster.result("ra-1") is None

        resp = await catch_up(cluster, node, "r", 0, [1, 2, 3, 4, 5, 6])
        part = resp.topics[0].partitions[0]
        assert part.error_code == 0 and set(part.isr) == set(range(1, 7))
        result = await cluster.wait_result("ra-1")
        assert [(r.topic, r.partition, r.error_code) for r in result.results] == [("r", 0, 0)]
        assert await cluster.etcd.get(cluster.ks.reassignment("r", 0)) is None
        assert (await cluster.replicas("r"))[0] == [4, 5, 6]
        final = await cluster.state("r", 0)
        assert (final.leader_and_isr.leader, set(final.leader_and_isr.isr)) == (4, {4, 5, 6})
        assert (final.adding, final.removing) == ((), ())
        assert LEADER_T not in await _configs(cluster, "r")
        for b in (1, 2, 3):
            await eventually(lambda b=b: _deleted(cluster, b), 10, f"replica on {b} deleted")
        await eventually(lambda: len(history.rows) >= 6, 5, "history")
    finally:
        watcher.cancel()
    s6 = frozenset(range(1, 7))
    assert history.rows == [
        (frozenset({1, 2, 3}), 1, frozenset({1, 2, 3})),
        (s6, 1, frozenset({1, 2, 3})),
        (s6, 1, s6),
        (s6, 4, s6),
        (s6, 4, frozenset({4, 5, 6})),
        (frozenset({4, 5, 6}), 4, frozenset({4, 5, 6})),
    ]


def _deleted(cluster, broker_id) -> bool:
    stops = cluster.brokers[broker_id].of_kind("StopReplica")
    return any(s.delete_partition for c in stops for s in c.request.partition_states)


async def _set_ar(cluster, topic):
    return set((await cluster.replicas(topic))[0]) == set(range(1, 7))


async def test_cancellation_restores_the_original_replicas(cluster):
    node = await _setup(cluster)
    await cluster.create_topic("c", {0: [1, 2, 3]})
    await cluster.wait_states("c", 1, lambda s: True)
    await _reassign(cluster, "c", 0, [4, 5, 6], "ca-1")
    await eventually(lambda: _set_ar(cluster, "c"), 10, "reassignment started")
    await _reassign(cluster, "c", 0, [], "ca-2", cancel=True)
    result = await cluster.wait_result("ca-2")
    assert [(r.partition, r.error_code) for r in result.results] == [(0, 0)]
    assert (await cluster.replicas("c"))[0] == [1, 2, 3]
    s = await cluster.state("c", 0)
    assert (s.leader_and_isr.leader, s.leader_and_isr.isr, s.adding, s.removing) == (
        1,
        (1, 2, 3),
        (),
        (),
    )
    assert await cluster.etcd.get(cluster.ks.reassignment("c", 0)) is None
    assert LEADER_T not in await _configs(cluster, "c")
    for b in (4, 5, 6):
        await eventually(lambda b=b: _deleted(cluster, b), 10, f"replica on {b} deleted")
    assert not node.controller.ctx.assignment(TopicPartition("c", 0)).is_being_reassigned
    # Cancelling when nothing moves is answered NO_REASSIGNMENT_IN_PROGRESS.
    await _reassign(cluster, "c", 0, [], "ca-3", cancel=True)
    result = await cluster.wait_result("ca-3")
    assert result.results[0].error_code == common_pb2.ERROR_CODE_NO_REASSIGNMENT_IN_PROGRESS


async def test_controller_crash_mid_reassignment_recovers(cluster):
    first = await _setup(cluster)
    second = await cluster.add_controller(2)
    await cluster.create_topic("x", {0: [1, 2, 3]})
    await cluster.wait_states("x", 1, lambda s: True)
    await _reassign(cluster, "x", 0, [4, 5, 6], "xa-1")
    await eventually(lambda: _set_ar(cluster, "x"), 10, "reassignment started")
    await first.crash()
    assert await cluster.active(timeout=15) is second
    a = second.controller.ctx.assignment(TopicPartition("x", 0))
    assert (set(a.origin_replicas), set(a.target_replicas)) == ({1, 2, 3}, {4, 5, 6})
    codes: list[int] = []

    async def caught_up() -> bool:
        # The new controller may bump the leader epoch while it resumes the reassignment
        # (after this read of the state): a real leader is then fenced, gets the new
        # LeaderAndIsr and reports again at the new epoch. Only that refusal is retried.
        resp = await catch_up(cluster, second, "x", 0, [1, 2, 3, 4, 5, 6])
        codes.append(resp.topics[0].partitions[0].error_code)
        return codes[-1] != common_pb2.ERROR_CODE_FENCED_LEADER_EPOCH

    await eventually(caught_up, 10, "the ISR report at the current leader epoch")
    assert codes[-1] == 0, codes
    await cluster.wait_result("xa-1")
    assert (await cluster.replicas("x"))[0] == [4, 5, 6]
    s = await cluster.state("x", 0)
    assert (s.leader_and_isr.leader, set(s.leader_and_isr.isr)) == (4, {4, 5, 6})


async def test_reassignment_of_unknown_partition_is_rejected(cluster):
    await _setup(cluster, n=2)
    await cluster.create_topic("k", {0: [1]})
    await cluster.wait_states("k", 1, lambda s: True)
    await _reassign(cluster, "k", 5, [2], "ka-1")
    result = await cluster.wait_result("ka-1")
    assert [(r.partition, r.error_code) for r in result.results] == [
        (5, common_pb2.ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION)
    ]
    assert await cluster.etcd.get(cluster.ks.reassignment("k", 5)) is None
