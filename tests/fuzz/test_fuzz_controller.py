"""ControllerService (AlterPartition, ControlledShutdown) with hostile requests, sent to the active
controller and to the standby: a clear error or a valid answer, never a crash; a rejected request
leaves etcd untouched, and an accepted AlterPartition leaves a sane partition state (leader in
the ISR, ISR within the assigned replicas, no duplicates).

Values are drawn around the live ones (the real broker epochs, leader epoch and partition epoch of
fuzz-base) so requests get past the first check often. ControlledShutdown never names a broker
hosting fuzz-base with an epoch that could pass (-1, the current one or a newer one): that request
is legitimately obeyed and would move the base topic's leaders for the rest of the session.
"""

from __future__ import annotations

import pytest
from fuzz_harness import BASE_ASSIGNMENT, BASE_TOPIC, SACRIFICE, FuzzCluster, note
from fuzz_strategies import FUZZ, INT32_MAX, int32s, int64s, small_ints, topic_names
from hypothesis import given
from hypothesis import strategies as st

from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2

pytestmark = pytest.mark.e2e


def target(fuzz: FuzzCluster, data) -> tuple[int, bool]:
    """(controller id, whether it is the active one), drawn."""
    active = fuzz.active_controller()
    chosen = data.draw(st.sampled_from(sorted(fuzz.cluster.controllers)), label="controller")
    return chosen, chosen == active


def exchange(fuzz: FuzzCluster, controller_id: int, method: str, request, refused) -> bool:
    """Call; a refused request must leave etcd as it was. Returns whether it was accepted."""
    before = fuzz.revision()
    stub = fuzz.controller(controller_id)
    outcome = fuzz.call(fuzz.cluster.controllers[controller_id], getattr(stub, method), request)
    rejected = outcome.failed or refused(outcome.response)
    note(outcome.status.name if outcome.failed else "refused" if rejected else "accepted")
    if rejected:
        assert fuzz.revision() == before, f"rejected {method} changed etcd: {request}"
    else:
        fuzz.wait_quiet()
    return not rejected


def sane_partition_states(fuzz: FuzzCluster) -> None:
    for p, replicas in BASE_ASSIGNMENT.items():
        state, _ = fuzz.partition_state(p)
        isr = list(state.isr)
        assert len(set(isr)) == len(isr), f"duplicate ISR members: {state}"
        assert set(isr) <= set(replicas), f"ISR outside the replicas {replicas}: {state}"
        assert state.leader in isr, f"leader outside the ISR: {state}"


def near_valid(data, states, epochs):
    """What the leader of a base partition would send to shrink or keep its ISR: every field
    right, so the request reaches the write path."""
    p = data.draw(st.sampled_from(sorted(states)), label="partition")
    state, partition_epoch = states[p]
    others = [b for b in BASE_ASSIGNMENT[p] if b != state.leader]
    kept = data.draw(st.lists(st.sampled_from(others), unique=True, max_size=len(others)))
    isr = [
        controller_pb2.BrokerState(broker_id=b, broker_epoch=epochs[b])
        for b in [state.leader, *kept]
    ]
    partition = controller_pb2.AlterPartitionPartition(
        partition=p,
        leader_epoch=state.leader_epoch,
        new_isr_with_epochs=isr,
        leader_recovery_state=data.draw(st.sampled_from([0, 1])),
        partition_epoch=partition_epoch,
    )
    broker_epoch = data.draw(st.sampled_from([epochs[state.leader], -1]))
    return state.leader, broker_epoch, [partition]


@FUZZ
@given(data=st.data())
def test_alter_partition(fuzz, data):
    controller_id, _ = target(fuzz, data)
    states = {p: fuzz.partition_state(p) for p in BASE_ASSIGNMENT}
    epochs = {b: fuzz.broker_epoch(b) for b in (1, 2, 3, SACRIFICE)}
    broker_id = data.draw(st.one_of(st.sampled_from([1, 2, 3, SACRIFICE]), int32s()))
    real_epoch = epochs.get(broker_id, -1)
    broker_epoch = data.draw(st.one_of(st.sampled_from([real_epoch, -1, real_epoch + 1]), int64s()))

    def partition(p: int):
        state, partition_epoch = states.get(p, (None, -1))
        leader_epoch = state.leader_epoch if state else 0
        members = st.one_of(st.sampled_from([1, 2, 3, SACRIFICE]), small_ints())
        return st.builds(
            controller_pb2.AlterPartitionPartition,
            partition=st.just(p),
            leader_epoch=st.one_of(st.sampled_from([leader_epoch, leader_epoch - 1]), int32s()),
            new_isr_with_epochs=st.lists(
                members.map(
                    lambda b: controller_pb2.BrokerState(broker_id=b, broker_epoch=epochs.get(b, 7))
                ),
                max_size=4,
            ),
            leader_recovery_state=st.sampled_from([0, 1, 2, 3, -1]),
            partition_epoch=st.one_of(st.just(partition_epoch), int64s()),
        )

    partitions = data.draw(
        st.one_of(
            st.sampled_from([(0,), (1,), (0, 1)]).flatmap(
                lambda ps: st.tuples(*(partition(p) for p in ps))
            ),
            st.lists(small_ints().flatmap(partition), max_size=3),
        ).map(list)
    )
    topics = data.draw(
        st.lists(
            st.builds(
                controller_pb2.AlterPartitionTopic,
                topic=st.one_of(st.just(BASE_TOPIC), topic_names()),
                topic_id=st.one_of(st.just(""), st.text(max_size=40)),
                partitions=st.just(partitions),
            ),
            max_size=2,
        )
    )
    if data.draw(st.integers(0, 2), label="near-valid") == 0:
        broker_id, broker_epoch, partitions = near_valid(data, states, epochs)
        topics = [controller_pb2.AlterPartitionTopic(topic=BASE_TOPIC, partitions=partitions)]
    request = controller_pb2.AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=broker_epoch, topics=topics
    )

    def refused(r: controller_pb2.AlterPartitionResponse) -> bool:
        codes = [p.error_code for t in r.topics for p in t.partitions]
        return r.error_code != 0 or all(c != 0 for c in codes)

    exchange(fuzz, controller_id, "AlterPartition", request, refused)
    sane_partition_states(fuzz)


@FUZZ
@given(data=st.data())
def test_controlled_shutdown(fuzz, data):
    controller_id, active = target(fuzz, data)
    stale = {b: fuzz.broker_epoch(b) - 1 for b in (1, 2, 3)}
    sacrifice_epoch = fuzz.broker_epoch(SACRIFICE)
    request = data.draw(
        st.one_of(
            # a base broker, only ever with an epoch older than its current one
            st.sampled_from(sorted(stale)).flatmap(
                lambda b: st.builds(
                    controller_pb2.ControlledShutdownRequest,
                    broker_id=st.just(b),
                    broker_epoch=st.one_of(st.integers(0, stale[b]), st.just(-(2**63))),
                )
            ),
            st.builds(
                controller_pb2.ControlledShutdownRequest,
                broker_id=st.one_of(st.just(SACRIFICE), int32s().filter(lambda b: b > 4 or b < 1)),
                broker_epoch=st.one_of(st.sampled_from([-1, sacrifice_epoch, INT32_MAX]), int64s()),
            ),
        )
    )

    def refused(r: controller_pb2.ControlledShutdownResponse) -> bool:
        return r.error_code != 0

    accepted = exchange(fuzz, controller_id, "ControlledShutdown", request, refused)
    if not active:
        assert not accepted, "a standby controller carried out a controlled shutdown"
    assert request.broker_id == SACRIFICE or not accepted, f"accepted {request}"
    sane_partition_states(fuzz)


def test_standby_answers_not_controller(fuzz):
    active = fuzz.active_controller()
    (standby,) = [c for c in fuzz.cluster.controllers if c != active]
    request = controller_pb2.AlterPartitionRequest(
        broker_id=1,
        broker_epoch=-1,
        topics=[
            controller_pb2.AlterPartitionTopic(
                topic=BASE_TOPIC, partitions=[controller_pb2.AlterPartitionPartition(partition=0)]
            )
        ],
    )
    before = fuzz.revision()
    outcome = fuzz.call(
        fuzz.cluster.controllers[standby], fuzz.controller(standby).AlterPartition, request
    )
    assert outcome.response.error_code == common_pb2.ERROR_CODE_NOT_CONTROLLER
    assert fuzz.revision() == before
