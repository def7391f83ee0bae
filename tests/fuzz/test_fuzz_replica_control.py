"""BrokerControlService (LeaderAndIsr, StopReplica, UpdateMetadata) with hostile requests against
broker 4, which hosts no fuzz-base replica: a clear error or a valid answer, never a crash; a
rejected request leaves the broker's client-visible state as it was; and no request, accepted or
not, touches files outside the broker's data directory or another broker's partitions.

The fuzz cluster is plaintext (``--insecure``): a request's ``controller_id`` is only a claim,
and the broker checks it against etcd (``services/broker_agent/control_fence.py``). So the first
test shows that forged epochs and senders are refused and poison nothing; every later epoch is
drawn around etcd's, and half the requests copy etcd's epoch and holder exactly (what an attacker
who reads etcd can do) so that they reach the per-partition code, where a leader change still
applies only if etcd shows it. This module runs last of the fuzz modules (file order).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_harness import BASE_ASSIGNMENT, BASE_TOPIC, SACRIFICE, FuzzCluster, note
from fuzz_strategies import (
    FUZZ,
    HOSTILE_NAMES,
    INT32_MAX,
    INT32_MIN,
    POOL,
    id_lists,
    int32s,
    int64s,
    small_ints,
    texts,
    topic_names,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.common.v1 import common_pb2

pytestmark = pytest.mark.e2e

FUZZ_EPOCH = 1_000_000
CHEAP = settings(FUZZ, max_examples=50)  # control calls are fast: look harder
# Names that would reach other brokers' partition directories if joined to a path unchecked.
TRAVERSAL = [f"../broker-1/{BASE_TOPIC}", "../../x", "..", ".", "/tmp/abs"]
TOPICS = st.one_of(
    st.sampled_from([BASE_TOPIC, *POOL, *TRAVERSAL]), topic_names(), st.sampled_from(HOSTILE_NAMES)
)
ENDPOINTS = st.lists(
    st.builds(
        common_pb2.BrokerEndpoint,
        broker_id=st.one_of(st.sampled_from([1, 2, 3, 4]), int32s()),
        host=st.one_of(st.just("127.0.0.1"), texts()),
        port=st.one_of(st.sampled_from([0, 1, 65535, 65536, -1]), int32s()),
        rack=texts(),
    ),
    max_size=4,
)


def known_epoch(fuzz: FuzzCluster) -> int:
    """The controller epoch etcd shows: the only one broker 4 obeys."""
    return fuzz.controller_epoch()


def epochs(known: int):
    nearby = [known, known, known - 1, min(known + 1, INT32_MAX)]
    return st.one_of(st.sampled_from(nearby), int32s())


def other_partitions(fuzz: FuzzCluster) -> dict[str, set[str]]:
    """The partition directories of brokers 1-3: nothing sent to broker 4 may touch them."""
    return {str(b): {p.name for p in fuzz.data_dir(b).iterdir() if p.is_dir()} for b in (1, 2, 3)}


def workdir_entries(fuzz: FuzzCluster) -> set[str]:
    return {p.name for p in Path(fuzz.cluster.workdir).iterdir()}


def exchange(fuzz: FuzzCluster, method: str, request) -> None:
    """Call broker 4; rejected: its view unchanged; always: no stray files anywhere."""
    before_view = fuzz.broker_view(SACRIFICE)
    before_dirs = other_partitions(fuzz)
    before_top = workdir_entries(fuzz)
    stub = fuzz.control(SACRIFICE)
    outcome = fuzz.call(fuzz.cluster.brokers[SACRIFICE], getattr(stub, method), request)
    # Rejected means refused as a whole; per-partition errors come after the request was
    # accepted (its controller epoch recorded), as in Kafka.
    rejected = outcome.failed or outcome.response.error_code != 0
    if outcome.failed:
        note(outcome.status.name)
    else:
        name = common_pb2.ErrorCode.Name(outcome.response.error_code).removeprefix("ERROR_CODE_")
        codes = sorted(
            {
                common_pb2.ErrorCode.Name(e.error_code).removeprefix("ERROR_CODE_")
                for e in getattr(outcome.response, "partition_errors", ())
            }
        )
        note(f"refused {name}" if rejected else f"accepted: {','.join(codes)}")
    if not rejected:
        epoch = max(fuzz.notes.get("sacrifice_epoch", 0), request.controller_epoch)
        fuzz.notes["sacrifice_epoch"] = epoch
    if rejected:
        after = fuzz.broker_view(SACRIFICE)
        assert after == before_view, f"rejected {method} changed broker {SACRIFICE}: {request}"
    assert other_partitions(fuzz) == before_dirs, f"{method} touched other brokers: {request}"
    assert workdir_entries(fuzz) == before_top, f"{method} created files outside: {request}"
    for p in fuzz.data_dir(SACRIFICE).iterdir():
        assert p.resolve().parent == fuzz.data_dir(SACRIFICE).resolve(), p


def with_current_epochs(data, request, known: int, holder: int):
    """Half the requests get etcd's controller epoch, its holder's id and no broker epoch, so
    they pass the whole-request fences and reach the per-partition code."""
    if data.draw(st.booleans(), label="current epochs"):
        request.controller_epoch = known
        request.controller_id = holder
        request.broker_epoch = -1
    return request


@pytest.mark.parametrize(
    ("epoch_offset", "sender", "code"),
    [
        (FUZZ_EPOCH, "holder", common_pb2.ERROR_CODE_NOT_CONTROLLER),  # an epoch nobody won
        (1, "holder", common_pb2.ERROR_CODE_NOT_CONTROLLER),  # the next one, not won yet
        (0, "other", common_pb2.ERROR_CODE_NOT_CONTROLLER),  # not the epoch's holder
        (-1, "holder", common_pb2.ERROR_CODE_STALE_CONTROLLER_EPOCH),  # superseded
    ],
    ids=["absurd-epoch", "next-epoch", "wrong-sender", "old-epoch"],
)
def test_forged_epochs_and_senders_are_refused_and_poison_nothing(fuzz, epoch_offset, sender, code):
    """What once cut a broker off its controller (an UpdateMetadata from epoch 1,000,000 was
    obeyed, and every real request after it refused as stale) is refused now, and the real
    controller's epoch still applies afterwards."""
    real, holder = known_epoch(fuzz), fuzz.active_controller()
    claimed = holder if sender == "holder" else holder + 1000
    before = fuzz.broker_view(SACRIFICE)
    for method, request in (
        ("UpdateMetadata", control_pb2.UpdateMetadataRequest()),
        ("LeaderAndIsr", control_pb2.LeaderAndIsrRequest()),
        ("StopReplica", control_pb2.StopReplicaRequest()),
    ):
        request.controller_id = claimed
        request.controller_epoch = real + epoch_offset
        request.broker_epoch = -1
        answer = getattr(fuzz.control(SACRIFICE), method)(request, timeout=10)
        assert answer.error_code == code, (method, answer)
        assert str(real) in answer.error_message and len(answer.error_message) < 300
    assert fuzz.broker_view(SACRIFICE) == before
    ok = fuzz.control(SACRIFICE).UpdateMetadata(
        control_pb2.UpdateMetadataRequest(
            controller_id=holder,
            controller_epoch=real,
            broker_epoch=-1,
            live_brokers=fuzz.live_endpoints(),
        ),
        timeout=10,
    )
    assert ok.error_code == common_pb2.ERROR_CODE_NONE, ok


@CHEAP
@given(data=st.data())
def test_leader_and_isr(fuzz, data):
    known = known_epoch(fuzz)
    broker_epoch = fuzz.broker_epoch(SACRIFICE)
    state = st.builds(
        control_pb2.LeaderAndIsrPartitionState,
        topic=TOPICS,
        topic_id=st.one_of(st.just(""), texts()),
        partition=st.one_of(st.integers(0, 3), st.integers(0, 3), small_ints()),
        controller_epoch=epochs(known),
        leader=st.one_of(st.sampled_from([SACRIFICE, 1, -1]), int32s()),
        leader_epoch=st.one_of(st.integers(0, 10), int32s()),
        isr=st.one_of(st.sampled_from([[SACRIFICE], [SACRIFICE, 1]]), id_lists()),
        partition_epoch=int64s(),
        # a replica set naming this broker gets past the first per-partition check
        replicas=st.one_of(st.sampled_from([[SACRIFICE, 1], [1, SACRIFICE, 2]]), id_lists()),
        adding_replicas=id_lists(4),
        removing_replicas=id_lists(4),
        is_new=st.booleans(),
        leader_recovery_state=st.sampled_from([0, 1, 2, 3, -1]),
    )
    request = data.draw(
        st.builds(
            control_pb2.LeaderAndIsrRequest,
            controller_id=int32s(),
            controller_epoch=epochs(known),
            broker_epoch=st.one_of(st.sampled_from([-1, broker_epoch, broker_epoch - 1]), int64s()),
            partition_states=st.lists(state, min_size=1, max_size=2),
            live_leaders=ENDPOINTS,
            replication_throttle_bytes_per_sec=st.one_of(st.just(0), int64s()),
        )
    )
    exchange(
        fuzz, "LeaderAndIsr", with_current_epochs(data, request, known, fuzz.active_controller())
    )


@CHEAP
@given(data=st.data())
def test_stop_replica(fuzz, data):
    known = known_epoch(fuzz)
    request = data.draw(
        st.builds(
            control_pb2.StopReplicaRequest,
            controller_id=int32s(),
            controller_epoch=epochs(known),
            broker_epoch=st.one_of(st.just(-1), int64s()),
            partition_states=st.lists(
                st.builds(
                    control_pb2.StopReplicaPartitionState,
                    topic=TOPICS,
                    partition=st.one_of(st.integers(0, 3), st.integers(0, 3), small_ints()),
                    leader_epoch=st.one_of(st.sampled_from([-2, -1, 0, INT32_MAX]), int32s()),
                    delete_partition=st.booleans(),
                ),
                max_size=3,
            ),
        )
    )
    exchange(
        fuzz, "StopReplica", with_current_epochs(data, request, known, fuzz.active_controller())
    )


@CHEAP
@given(data=st.data())
def test_update_metadata(fuzz, data):
    known = known_epoch(fuzz)
    request = data.draw(
        st.builds(
            control_pb2.UpdateMetadataRequest,
            controller_id=int32s(),
            controller_epoch=epochs(known),
            broker_epoch=st.one_of(st.just(-1), int64s()),
            partition_states=st.lists(
                st.builds(
                    control_pb2.UpdateMetadataPartitionState,
                    topic=TOPICS,
                    topic_id=st.one_of(st.just(""), texts()),
                    partition=st.one_of(st.integers(0, 3), st.integers(0, 3), small_ints()),
                    controller_epoch=epochs(known),
                    leader=st.one_of(st.sampled_from([-2, -1, 1, 4]), int32s()),
                    leader_epoch=int32s(),
                    isr=id_lists(),
                    partition_epoch=int64s(),
                    replicas=id_lists(),
                    offline_replicas=id_lists(4),
                ),
                max_size=4,
            ),
            live_brokers=ENDPOINTS,
            deleted_topics=st.lists(TOPICS, max_size=3),
            controller_host=texts(),
            controller_port=st.one_of(st.sampled_from([0, -1, 65536, INT32_MIN]), int32s()),
        )
    )
    exchange(
        fuzz, "UpdateMetadata", with_current_epochs(data, request, known, fuzz.active_controller())
    )


ILLEGAL_NAMES = ["../evil", "..", ".", "a/b", "ünïcødé", "a" * 250, "nul\x00byte", TRAVERSAL[0]]


@pytest.mark.parametrize("leader", [SACRIFICE, 1], ids=["become-leader", "become-follower"])
@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=lambda n: repr(n)[:24])
def test_illegal_topic_name_in_leader_and_isr(fuzz, name, leader):
    """A topic name no log directory may have, alone or next to a legal one: refused (as a
    whole, or for that partition), never INTERNAL, no directory anywhere. Found by
    test_leader_and_isr; kept as a table so it stays covered whatever hypothesis draws."""
    known = known_epoch(fuzz)

    def state(topic: str) -> control_pb2.LeaderAndIsrPartitionState:
        return control_pb2.LeaderAndIsrPartitionState(
            topic=topic,
            partition=0,
            controller_epoch=known,
            leader=leader,
            leader_epoch=1,
            isr=[SACRIFICE, 1],
            replicas=[SACRIFICE, 1],
        )

    for states in ([state(name)], [state("fz-legal"), state(name)]):
        request = control_pb2.LeaderAndIsrRequest(
            controller_id=fuzz.active_controller(),
            controller_epoch=known,
            broker_epoch=-1,
            partition_states=states,
        )
        exchange(fuzz, "LeaderAndIsr", request)


@pytest.mark.parametrize("name", ILLEGAL_NAMES, ids=lambda n: repr(n)[:24])
def test_illegal_topic_name_in_stop_replica_and_update_metadata(fuzz, name):
    known = known_epoch(fuzz)
    holder = fuzz.active_controller()
    stop = control_pb2.StopReplicaRequest(
        controller_id=holder,
        controller_epoch=known,
        broker_epoch=-1,
        partition_states=[
            control_pb2.StopReplicaPartitionState(
                topic=name, partition=0, leader_epoch=-2, delete_partition=True
            )
        ],
    )
    exchange(fuzz, "StopReplica", stop)
    update = control_pb2.UpdateMetadataRequest(
        controller_id=holder,
        controller_epoch=known,
        broker_epoch=-1,
        partition_states=[
            control_pb2.UpdateMetadataPartitionState(
                topic=name, partition=0, leader=1, leader_epoch=1, isr=[1], replicas=[1]
            )
        ],
        deleted_topics=[name],
    )
    exchange(fuzz, "UpdateMetadata", update)


def test_every_service_still_serves(fuzz):
    """After all fuzzing: every process alive and answering, the base topic intact."""
    for proc in fuzz.cluster.processes():
        assert proc.alive(), proc.name
    described = fuzz.call(
        fuzz.cluster.admin, fuzz.admin().DescribeCluster, admin_pb2.DescribeClusterRequest()
    )
    assert sorted(b.broker_id for b in described.response.brokers) == [1, 2, 3, 4]
    for b in (1, 2, 3):
        meta = fuzz.call(
            fuzz.cluster.brokers[b],
            fuzz.broker(b).Metadata,
            broker_pb2.MetadataRequest(topics=[BASE_TOPIC]),
        )
        (topic,) = meta.response.topics
        assert sorted(p.partition for p in topic.partitions) == sorted(BASE_ASSIGNMENT)
        assert all(p.leader in (1, 2, 3) for p in topic.partitions), topic
