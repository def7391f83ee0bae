"""ControllerContext's change tracking and derived views, and the UpdateMetadata encoding cache.

The cache must always encode exactly what ``update_metadata_state`` says now, while re-encoding
only what the context reports changed: each row mutates a warmed-up context and states which
partitions the next refresh re-encodes.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from leasehold import metadata_digest
from leasehold.broker.v1 import control_pb2
from services.broker_agent import control_convert
from services.broker_agent.metadata_cache import MetadataCache
from services.controller.core import (
    BrokerInfo,
    BrokerRequests,
    ControllerContext,
    LeaderAndIsr,
    PartitionReplica,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
    update_metadata_state,
)
from services.controller.delivery import wire
from services.controller.delivery.metadata_cache import UpdateMetadataCache

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
U0 = TopicPartition("u", 0)
LAI = LeaderAndIsr(1, 4, (1, 2), 3, partition_epoch=40)


def _ctx(make_ctx) -> ControllerContext:
    return make_ctx(
        assignments={T0: (1, 2), T1: (2, 3), T2: (3, 1), U0: (1, 3)},
        leadership={T0: LAI, T1: LAI, U0: LAI},  # T2 has no state yet: not in UpdateMetadata
    )


def _decoded(cache: UpdateMetadataCache) -> list[control_pb2.UpdateMetadataPartitionState]:
    return list(control_pb2.UpdateMetadataRequest.FromString(cache.body()).partition_states)


def _expected(ctx: ControllerContext) -> list[control_pb2.UpdateMetadataPartitionState]:
    states = [update_metadata_state(ctx, tp) for tp in ctx.all_partitions()]
    body = wire.update_metadata_body(s for s in states if s is not None)
    return list(control_pb2.UpdateMetadataRequest.FromString(body).partition_states)


def _leader_moved(ctx: ControllerContext) -> None:
    ctx.apply_leader_and_isr(T1, LeaderAndIsr(3, 5, (3,), 3, partition_epoch=41))


def _state_created(ctx: ControllerContext) -> None:
    ctx.apply_leader_and_isr(T2, LAI)


def _reassigned(ctx: ControllerContext) -> None:
    ctx.apply_assignment(T0, ReplicaAssignment((1, 2, 3), adding=(3,)))


def _topic_queued_for_deletion(ctx: ControllerContext) -> None:
    ctx.apply_topic_deletion_queued("t")


def _topic_removed(ctx: ControllerContext) -> None:
    ctx.apply_remove_topic("u")


def _topic_id_changed(ctx: ControllerContext) -> None:
    ctx.apply_topic("u", "id-u-2", {})


def _broker_gone(ctx: ControllerContext) -> None:
    ctx.apply_broker_removed(3)


def _broker_shutting_down(ctx: ControllerContext) -> None:
    ctx.apply_broker_shutting_down(2)


def _broker_back(ctx: ControllerContext) -> None:
    ctx.apply_broker_removed(3)
    ctx.take_metadata_changes()
    ctx.apply_broker_registered(BrokerInfo(3, "h", 1, epoch=2000))


def _brokers_gone_and_bounced(ctx: ControllerContext) -> None:
    ctx.apply_broker_removed(2)
    ctx.apply_broker_removed(3)
    ctx.apply_broker_registered(BrokerInfo(3, "h", 1, epoch=2000))  # back before anyone looked
    ctx.apply_broker_registered(BrokerInfo(1, "h", 1, epoch=2001))  # a new epoch, still live


def _broker_joined(ctx: ControllerContext) -> None:
    ctx.apply_broker_registered(BrokerInfo(4, "h", 1, epoch=2000))


def _log_dir_failed(ctx: ControllerContext) -> None:
    ctx.apply_offline_replicas(1, [U0, TopicPartition("gone", 0)])


def _replica_state_only(ctx: ControllerContext) -> None:
    ctx.apply_replica_state(PartitionReplica(T0, 1), ReplicaState.ONLINE)


@pytest.mark.parametrize(
    ("change", "everything", "changed"),
    [
        (_leader_moved, False, {T1}),
        (_state_created, False, {T2}),
        (_reassigned, False, {T0}),
        (_topic_queued_for_deletion, False, {T0, T1, T2}),
        (_topic_removed, False, {U0}),
        (_topic_id_changed, False, {U0}),
        (_broker_gone, False, {T1, T2, U0}),  # those with a replica on broker 3
        (_broker_shutting_down, False, {T0, T1}),
        (_broker_back, False, {T1, T2, U0}),
        (_brokers_gone_and_bounced, False, {T0, T1, T2, U0}),
        (_broker_joined, False, set()),
        (_log_dir_failed, False, {U0, TopicPartition("gone", 0)}),
        (_replica_state_only, False, set()),
    ],
)
def test_changes_are_tracked_and_the_cache_follows(
    make_ctx, change: Callable[[ControllerContext], None], everything: bool, changed: set
) -> None:
    tracked, ctx = _ctx(make_ctx), _ctx(make_ctx)
    tracked.take_metadata_changes()
    change(tracked)
    assert tracked.take_metadata_changes() == (everything, frozenset(changed))
    assert tracked.take_metadata_changes() == (False, frozenset())

    cache = UpdateMetadataCache()
    assert cache.refresh(ctx) == 4  # a new context: everything
    assert _decoded(cache) == _expected(ctx)
    change(ctx)
    assert cache.refresh(ctx) == (len(ctx.all_partitions()) if everything else len(changed))
    assert _decoded(cache) == _expected(ctx)
    assert cache.refresh(ctx) == 0


def test_deletion_and_offline_replicas_reach_the_cached_states(make_ctx) -> None:
    ctx = _ctx(make_ctx)
    cache = UpdateMetadataCache()
    cache.refresh(ctx)
    ctx.apply_topic_deletion_queued("u")
    ctx.apply_broker_removed(2)
    cache.refresh(ctx)
    by_tp = {(s.topic, s.partition): s for s in _decoded(cache)}
    assert sorted(by_tp) == [("t", 0), ("t", 1), ("u", 0)]
    assert (by_tp["u", 0].leader, list(by_tp["u", 0].offline_replicas)) == (-2, [])
    assert (by_tp["t", 0].leader, list(by_tp["t", 0].offline_replicas)) == (1, [2])
    assert list(by_tp["t", 1].offline_replicas) == [2]


def test_full_update_metadata_per_broker(make_ctx) -> None:
    ctx = _ctx(make_ctx)
    ctx.apply_controller(7, 9)
    cache = UpdateMetadataCache()
    requests = cache.full_update_metadata(ctx, "ctl", 9190)
    assert sorted(requests) == [1, 2, 3]
    for broker_id, req in requests.items():
        pb = req.decode()
        assert (pb.controller_id, pb.controller_epoch, pb.broker_epoch) == (7, 9, 1000 + broker_id)
        assert (req.controller_epoch, req.broker_epoch, req.partition_count) == (
            9,
            pb.broker_epoch,
            3,
        )
        assert (pb.controller_host, pb.controller_port) == ("ctl", 9190)
        assert [b.broker_id for b in pb.live_brokers] == [1, 2, 3]
        assert list(pb.partition_states) == _expected(ctx)


def test_derived_views_follow_mutations(make_ctx) -> None:
    ctx = _ctx(make_ctx)
    assert ctx.all_partitions() == (T0, T1, T2, U0) and ctx.partition_count() == 4
    ctx.apply_topic("a", "id-a", {0: ReplicaAssignment((2,))})
    assert ctx.all_partitions()[0] == TopicPartition("a", 0) and ctx.partition_count() == 5
    ctx.apply_remove_topic("t")
    assert ctx.all_partitions() == (TopicPartition("a", 0), U0)
    ctx.apply_broker_shutting_down(1)
    assert (ctx.live_broker_ids, ctx.live_or_shutting_down_broker_ids) == ({2, 3}, {1, 2, 3})
    assert not ctx.is_replica_online(1, U0)
    assert ctx.is_replica_online(1, U0, include_shutting_down=True)
    ctx.apply_broker_removed(1)
    ctx.apply_broker_registered(BrokerInfo(4, "h", 1, epoch=5))
    assert (ctx.live_broker_ids, ctx.live_or_shutting_down_broker_ids) == ({2, 3, 4}, {2, 3, 4})


def test_replicas_for_partitions_sorted_and_split_by_liveness(make_ctx) -> None:
    ctx = make_ctx(assignments={T1: (3, 1), T0: (2, 1)}, brokers=(1, 2), offline_dirs={2: [T0]})
    pr = PartitionReplica
    assert ctx.replicas_for_partitions([T1, T0, T1]) == (
        pr(T0, 1), pr(T0, 2), pr(T1, 1), pr(T1, 3)
    )  # fmt: skip
    assert ctx.online_and_offline_replicas() == ((pr(T0, 1), pr(T1, 1)), (pr(T0, 2), pr(T1, 3)))


def _broker_applies(broker: MetadataCache, encoded: wire.EncodedRequest) -> None:
    broker.update(control_convert.update_metadata_from_pb(encoded.decode()))


@pytest.mark.parametrize(
    "change",
    [
        _leader_moved,
        _state_created,
        _reassigned,
        _topic_queued_for_deletion,
        _topic_removed,
        _topic_id_changed,
        _broker_gone,
        _broker_shutting_down,
        _broker_back,
        _brokers_gone_and_bounced,
        _broker_joined,
        _log_dir_failed,
        _replica_state_only,
    ],
)
def test_the_digest_is_what_a_broker_holds_after_the_requests(
    make_ctx, change: Callable[[ControllerContext], None]
) -> None:
    """A broker sent every partition, then the changed ones (as the controller's batches
    would), ends with the digest the controller's cache computes."""
    ctx = _ctx(make_ctx)
    cache, broker = UpdateMetadataCache(), MetadataCache()
    _broker_applies(broker, cache.full_update_metadata(ctx, "ctl", 9190)[1])
    assert broker.digest() == cache.digest() != bytes(16)
    before = cache.digest()

    topics = {tp.topic for tp in ctx.all_partitions()}
    change(ctx)
    gone = topics - {tp.topic for tp in ctx.all_partitions()}
    if gone:  # a completed deletion is announced by name
        pb = wire.deleted_topics_update(
            controller_id=100, controller_epoch=5, broker_epoch=1001, live_brokers=(),
            topics=gone, controller_host="ctl", controller_port=9190,
        )  # fmt: skip
        broker.update(control_convert.update_metadata_from_pb(pb))
    states = [update_metadata_state(ctx, tp) for tp in ctx.all_partitions()]
    update = BrokerRequests(
        broker_id=1, broker_epoch=1001, controller_id=100, controller_epoch=5,
        leader_and_isr=(), live_leaders=(), stop_replica=(),
        update_metadata=tuple(s for s in states if s is not None),
        live_brokers=tuple(ctx.brokers[b] for b in sorted(ctx.brokers)),
    )  # fmt: skip
    broker.update(
        control_convert.update_metadata_from_pb(wire.update_metadata(update, "ctl", 9190))
    )
    cache.refresh(ctx)
    assert broker.digest() == cache.digest()
    unchanged = change in (_replica_state_only, _broker_back, _broker_joined)
    assert (cache.digest() == before) == unchanged


def test_digest_first_requests(make_ctx) -> None:
    ctx = _ctx(make_ctx)
    ctx.apply_controller(7, 9)
    cache = UpdateMetadataCache()
    requests = cache.digest_first_update_metadata(ctx, "ctl", 9190)
    full = cache.full_update_metadata(ctx, "ctl", 9190)
    assert sorted(requests) == [1, 2, 3]
    for broker_id, req in requests.items():
        assert req.full.decode() == full[broker_id].decode()
        pb = req.digest_only.decode()
        expected = full[broker_id].decode()
        live = list(expected.live_brokers)
        del expected.partition_states[:]
        del expected.live_brokers[:]
        expected.metadata_digest = cache.digest()
        # The live brokers as the digest of the set the broker should hold, none listed.
        expected.live_brokers_base = metadata_cache_digest_of(live)
        assert pb == expected
        assert (req.digest_only.partition_count, req.full.partition_count) == (0, 3)
        assert (req.in_full, req.settled.is_set()) == (None, False)


def metadata_cache_digest_of(endpoints) -> bytes:
    """The live-set digest of ``endpoints`` as a broker computes it from what it received."""
    total = sum(metadata_digest.endpoint_hash(e.SerializeToString()) for e in endpoints)
    return metadata_digest.to_bytes(metadata_digest.combine(total))
