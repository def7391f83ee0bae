"""What the context keeps rather than walks (offline and imbalance counts, partitions by leader
and by the brokers hosting them, New or Offline partitions, partitions with an offline leader)
always equals a walk of every partition, whatever order the ``apply_*`` calls and readings come
in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.controller.core import (
    BrokerInfo,
    ControllerContext,
    LeaderAndIsr,
    PartitionReplica,
    PartitionState,
    ReplicaAssignment,
    StateChangePlan,
    TopicPartition,
)
from services.controller.core.plan import (
    AssignmentChange,
    PartitionStateWrite,
    PartitionTransition,
)

EPOCH = 5
TOPICS = ("a", "b", "c")
STATES = (
    PartitionState.NEW,
    PartitionState.ONLINE,
    PartitionState.OFFLINE,
    PartitionState.NON_EXISTENT,
)


def walked_offline(ctx: ControllerContext) -> int:
    return sum(
        1
        for tp in ctx.partitions_in_state(PartitionState.OFFLINE)
        if not ctx.is_topic_queued_for_deletion(tp.topic)
    )


def walked_led_by(ctx: ControllerContext, broker: int) -> tuple[TopicPartition, ...]:
    """The walks below read the context's own tables: what the kept indexes replaced."""
    return tuple(sorted(tp for tp, lai in ctx._leadership.items() if lai.leader == broker))


def walked_hosted_by(ctx: ControllerContext, broker: int) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tp for tp, a in ctx._assignments.items() if broker in a.replicas))


def walked_replicas_on(ctx: ControllerContext, ids: frozenset[int]) -> tuple:
    return tuple(
        sorted(
            PartitionReplica(tp, r)
            for tp, a in ctx._assignments.items()
            for r in a.replicas
            if r in ids
        )
    )


def walked_in_state(ctx: ControllerContext, *states: PartitionState) -> tuple[TopicPartition, ...]:
    return tuple(sorted(tp for tp, s in ctx._partition_states.items() if s in states))


def walked_offline_leader(ctx: ControllerContext) -> tuple[TopicPartition, ...]:
    return tuple(
        tp
        for tp in ctx.all_partitions()
        if (lai := ctx.leader_and_isr(tp)) is not None and not ctx.is_replica_online(lai.leader, tp)
    )


def walked_imbalance(ctx: ControllerContext) -> int:
    """Kafka's PreferredReplicaImbalanceCount by definition, partition by partition."""
    count = 0
    for tp in ctx.all_partitions():
        lai, a = ctx.leader_and_isr(tp), ctx.assignment(tp)
        if lai is None or a is None or ctx.is_topic_queued_for_deletion(tp.topic):
            continue
        preferred = a.preferred_replica
        if preferred is None:
            continue
        if a.is_being_reassigned and preferred in a.adding:
            count += preferred not in lai.isr
        else:
            count += lai.leader != preferred
    return count


partitions = st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 3))
brokers = st.integers(1, 4)
replica_lists = st.lists(brokers, min_size=1, max_size=3, unique=True).map(tuple)


@st.composite
def assignments(draw) -> ReplicaAssignment:
    replicas = draw(replica_lists)
    if draw(st.booleans()):
        return ReplicaAssignment(replicas)
    adding = tuple(r for r in replicas if draw(st.booleans()))
    removing = tuple(r for r in replicas if r not in adding and draw(st.booleans()))
    return ReplicaAssignment(replicas, adding, removing)


leaders = st.builds(
    lambda leader, isr: LeaderAndIsr(leader, 1, isr, EPOCH),
    st.integers(-1, 4),
    st.lists(brokers, max_size=3, unique=True).map(tuple),
)

steps = st.one_of(
    st.tuples(st.just("assignment"), partitions, assignments()),
    st.tuples(st.just("leader"), partitions, leaders),
    st.tuples(st.just("state"), partitions, st.sampled_from(STATES)),
    st.tuples(
        st.just("plan"),
        st.dictionaries(partitions, leaders, max_size=3),
        st.dictionaries(partitions, st.sampled_from(STATES), max_size=3),
        st.dictionaries(partitions, assignments(), max_size=3),
    ),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS)),
    st.tuples(st.just("remove"), st.sampled_from(TOPICS)),
    st.tuples(st.just("broker_up"), brokers),
    st.tuples(st.just("broker_down"), brokers),
    st.tuples(st.just("shutting_down"), brokers),
    st.tuples(st.just("failed_dir"), brokers, st.lists(partitions, max_size=3)),
    st.tuples(st.just("read")),
    st.tuples(st.just("take")),
)


def check(ctx: ControllerContext) -> None:
    assert ctx.offline_partition_count() == walked_offline(ctx)
    assert ctx.preferred_replica_imbalance_count() == walked_imbalance(ctx)
    for broker in range(-1, 5):
        assert ctx.partitions_led_by(broker) == walked_led_by(ctx, broker)
        assert ctx.partitions_on_broker(broker) == walked_hosted_by(ctx, broker)
    for ids in (frozenset({1}), frozenset({1, 3}), frozenset({2, 3, 4}), frozenset()):
        assert ctx.replicas_on_brokers(ids) == walked_replicas_on(ctx, ids)
    for states in ((PartitionState.NEW,), (PartitionState.OFFLINE,), STATES[:3]):
        assert ctx.partitions_in_state(*states) == walked_in_state(ctx, *states)
    assert ctx.partitions_with_offline_leader() == walked_offline_leader(ctx)


def plan_of(writes, states, changes) -> tuple[StateChangePlan, dict[TopicPartition, int]]:
    """A committed plan: leader/ISR writes, partition transitions and assignment changes, each
    for its own partitions."""
    plan = StateChangePlan(
        EPOCH,
        tuple(
            PartitionStateWrite(
                tp,
                lai,
                expected_partition_epoch=0,
                create=False,
                assignment=ReplicaAssignment((1,)),
            )
            for tp, lai in writes.items()
        ),
        tuple(PartitionTransition(tp, PartitionState.NEW, s) for tp, s in states.items()),
        assignment_changes=tuple(AssignmentChange(tp, a) for tp, a in changes.items()),
    )
    return plan, {tp: 7 for tp in writes}


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, max_size=40))
def test_kept_counts_equal_a_walk(script) -> None:
    ctx = ControllerContext(1, EPOCH)
    moved: set[int] = set()  # brokers whose liveness moved since the last ``take``
    for step in script:
        kind = step[0]
        was_live = ctx.live_broker_ids
        if kind == "assignment":
            ctx.apply_assignment(step[1], step[2])
        elif kind == "leader":
            ctx.apply_leader_and_isr(step[1], step[2])
        elif kind == "state":
            ctx.apply_partition_state(step[1], step[2])
        elif kind == "plan":
            plan, epochs = plan_of(*step[1:])
            ctx.apply_plan(plan, epochs)
        elif kind == "delete":
            ctx.apply_topic_deletion_queued(step[1])
        elif kind == "remove":
            ctx.apply_remove_topic(step[1])
        elif kind == "broker_up":
            ctx.apply_broker_registered(BrokerInfo(step[1], "h", 9000 + step[1], epoch=1))
        elif kind == "broker_down":
            ctx.apply_broker_removed(step[1])
        elif kind == "shutting_down":
            if step[1] in ctx.live_or_shutting_down_broker_ids:
                ctx.apply_broker_shutting_down(step[1])
        elif kind == "failed_dir":
            ctx.apply_offline_replicas(step[1], step[2])
        elif kind == "take":
            everything, changed = ctx.take_metadata_changes()
            if not everything:  # every partition hosted by a broker whose liveness moved
                assert set(walked_replicas_on(ctx, frozenset(moved))) <= {
                    PartitionReplica(tp, r) for tp in changed for r in ctx.replicas(tp)
                }
            moved.clear()
        else:
            check(ctx)
        moved.update(was_live ^ ctx.live_broker_ids)
    check(ctx)


def test_a_reading_examines_only_the_partitions_changed_since_the_last() -> None:
    ctx = ControllerContext(1, EPOCH)
    for p in range(1_000):
        tp = TopicPartition("t", p)
        ctx.apply_assignment(tp, ReplicaAssignment((1, 2)))
        ctx.apply_leader_and_isr(tp, LeaderAndIsr(2, 1, (1, 2), EPOCH))
    assert ctx.preferred_replica_imbalance_count() == 1_000
    assert not ctx._counts_stale
    ctx.apply_leader_and_isr(TopicPartition("t", 5), LeaderAndIsr(1, 2, (1, 2), EPOCH))
    assert ctx._counts_stale == {TopicPartition("t", 5)}
    assert ctx.preferred_replica_imbalance_count() == 999


def test_a_liveness_move_marks_exactly_the_partitions_its_brokers_host() -> None:
    ctx = ControllerContext(1, EPOCH)
    for b in (1, 2, 3, 4):
        ctx.apply_broker_registered(BrokerInfo(b, "h", 9000 + b, epoch=1))
    for p in range(12):
        ctx.apply_assignment(
            TopicPartition("t", p), ReplicaAssignment((p % 4 + 1, (p + 1) % 4 + 1))
        )
    # Partition 0 leaves broker 1, partition 2 joins it (and comes back: noted, then un-noted).
    ctx.apply_assignment(TopicPartition("t", 0), ReplicaAssignment((2, 3)))
    ctx.apply_assignment(TopicPartition("t", 2), ReplicaAssignment((3, 4, 1)))
    ctx.apply_assignment(TopicPartition("t", 2), ReplicaAssignment((3, 4)))
    ctx.apply_assignment(TopicPartition("t", 2), ReplicaAssignment((3, 4, 1)))
    ctx.take_metadata_changes()
    ctx.apply_broker_removed(1)
    ctx.apply_broker_shutting_down(3)
    everything, changed = ctx.take_metadata_changes()
    assert not everything
    hosted = {p for p in range(12) if {1, 3} & set(ctx.replicas(TopicPartition("t", p)))}
    assert changed == {TopicPartition("t", p) for p in hosted}
    assert ctx.partitions_on_broker(1) == tuple(TopicPartition("t", p) for p in (2, 3, 4, 7, 8, 11))
