"""Every AdminService RPC with hostile requests: a clear error or a valid answer, never a crash,
and nothing written to etcd unless the request was accepted.

"Rejected" means the call failed with a gRPC status, or (for the multi-item requests that report
per item) every item carries an error code. Read-only RPCs and ``validate_only`` requests must
never move the etcd revision. After an accepted change the test waits until etcd settles (the
controller reacts asynchronously) before the next example. Requests that would create more than
a few partitions are sent with ``validate_only`` so the shared cluster stays small.
"""

from __future__ import annotations

import pytest
from fuzz_harness import BASE_TOPIC, FuzzCluster, note
from fuzz_strategies import (
    FUZZ,
    broker_sets,
    id_lists,
    int32s,
    mostly,
    pool_topics,
    small_ints,
    texts,
    topic_names,
)
from fuzz_strategies import POOL as POOL_NAMES
from hypothesis import given
from hypothesis import strategies as st

from leasehold.admin.v1 import admin_pb2
from leasehold.common.v1 import common_pb2

pytestmark = pytest.mark.e2e

TIMEOUTS = st.sampled_from([0, -1, -(2**31), 1, 300, 2000])
CONFIG_KEYS = st.one_of(
    st.sampled_from(
        [
            "min.insync.replicas",
            "retention.ms",
            "retention.bytes",
            "segment.bytes",
            "cleanup.policy",
            "unclean.leader.election.enable",
            "max.message.bytes",
            "leader.replication.throttled.rate",
            "no.such.config",
            "",
        ]
    ),
    texts(),
)
CONFIG_VALUES = st.one_of(
    st.sampled_from(["-1", "0", "1", "2", "abc", "1e99", "", "true", "delete,compact", "9" * 40]),
    texts(),
)
VALID_CONFIGS = st.dictionaries(
    st.sampled_from(["min.insync.replicas", "retention.ms", "segment.bytes", "cleanup.policy"]),
    st.sampled_from(["1", "2", "86400000", "1048576", "delete"]),
    max_size=2,
)
CONFIGS = mostly(VALID_CONFIGS, st.dictionaries(CONFIG_KEYS, CONFIG_VALUES, max_size=4))
ASSIGNMENTS = mostly(
    st.just([]),
    st.lists(
        st.builds(
            admin_pb2.ReplicaAssignment,
            partition=mostly(st.integers(0, 3), small_ints()),
            broker_ids=mostly(broker_sets(), id_lists()),
        ),
        max_size=4,
    ),
)
NAMES = mostly(st.sampled_from([*POOL_NAMES, BASE_TOPIC]), topic_names())
# fuzz-base is never changed, moved or deleted: the broker and controller fuzz tests rely on it.
NOT_BASE = mostly(pool_topics(), topic_names().filter(lambda name: name != BASE_TOPIC))
TOPIC_PARTITIONS = st.lists(
    st.builds(
        common_pb2.TopicPartition, topic=NAMES, partition=mostly(st.integers(0, 2), small_ints())
    ),
    max_size=5,
)
RESOURCES = mostly(
    st.builds(admin_pb2.ConfigResource, type=st.just(1), name=pool_topics()),
    st.builds(
        admin_pb2.ConfigResource,
        type=st.sampled_from([0, 1, 2, 3, -1, 99]),
        name=st.one_of(
            topic_names().filter(lambda name: name != BASE_TOPIC),
            st.sampled_from(["1", "2", "4", "99", "-1", "", "x"]),
        ),
    ),
)


def exchange(fuzz: FuzzCluster, method: str, request, *, mutating: bool, rejected=None):
    """Call ``method``; if rejected (or read-only, or validate_only) etcd must not change."""
    before = fuzz.revision()
    outcome = fuzz.call(fuzz.cluster.admin, getattr(fuzz.admin(), method), request)
    refused = outcome.failed or (rejected is not None and rejected(outcome.response))
    note(outcome.status.name if outcome.failed else "refused in-band" if refused else "accepted")
    if not mutating or refused or getattr(request, "validate_only", False):
        assert fuzz.revision() == before, f"{method} changed etcd: {request}"
    else:
        fuzz.wait_quiet()
    return outcome


def all_items_failed(items) -> bool:
    return all(i.error_code != 0 for i in items)


def small(request, count_of) -> None:
    """Big creations are validated only: the shared cluster must stay small."""
    if any(count_of(t) > 4 for t in request.topics):
        request.validate_only = True


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.CreateTopicsRequest,
        topics=st.lists(
            st.builds(
                admin_pb2.CreatableTopic,
                name=mostly(pool_topics(), topic_names()),
                num_partitions=mostly(st.sampled_from([-1, 1, 2, 3]), small_ints()),
                replication_factor=mostly(st.sampled_from([-1, 1, 2, 3]), small_ints()),
                assignments=ASSIGNMENTS,
                configs=CONFIGS,
            ),
            max_size=3,
        ),
        validate_only=st.booleans(),
        timeout_ms=TIMEOUTS,
    )
)
def test_create_topics(fuzz, request_pb):
    small(request_pb, lambda t: max(t.num_partitions, len(t.assignments)))
    exchange(
        fuzz,
        "CreateTopics",
        request_pb,
        mutating=True,
        rejected=lambda r: all_items_failed(r.topics),
    )


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.CreatePartitionsRequest,
        topics=st.lists(
            st.builds(
                admin_pb2.CreatePartitionsTopic,
                name=NOT_BASE,
                count=mostly(st.integers(1, 4), small_ints()),
                assignments=ASSIGNMENTS,
            ),
            max_size=3,
        ),
        validate_only=st.booleans(),
        timeout_ms=TIMEOUTS,
    )
)
def test_create_partitions(fuzz, request_pb):
    small(request_pb, lambda t: t.count)
    exchange(
        fuzz,
        "CreatePartitions",
        request_pb,
        mutating=True,
        rejected=lambda r: all_items_failed(r.topics),
    )


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.DeleteTopicsRequest,
        topic_names=st.lists(NOT_BASE, max_size=4),
        timeout_ms=TIMEOUTS,
    )
)
def test_delete_topics(fuzz, request_pb):
    exchange(
        fuzz,
        "DeleteTopics",
        request_pb,
        mutating=True,
        rejected=lambda r: all_items_failed(r.topics),
    )


@FUZZ
@given(request_pb=st.builds(admin_pb2.DescribeTopicsRequest, topics=st.lists(NAMES, max_size=4)))
def test_describe_topics(fuzz, request_pb):
    exchange(fuzz, "DescribeTopics", request_pb, mutating=False)


def test_list_topics_and_describe_cluster(fuzz):
    before = fuzz.revision()
    listed = fuzz.call(fuzz.cluster.admin, fuzz.admin().ListTopics, admin_pb2.ListTopicsRequest())
    cluster = fuzz.call(
        fuzz.cluster.admin, fuzz.admin().DescribeCluster, admin_pb2.DescribeClusterRequest()
    )
    assert BASE_TOPIC in {t.name for t in listed.response.topics}
    assert sorted(b.broker_id for b in cluster.response.brokers) == [1, 2, 3, 4]
    assert fuzz.revision() == before


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.DescribeConfigsRequest, resources=st.lists(RESOURCES, max_size=4)
    )
)
def test_describe_configs(fuzz, request_pb):
    exchange(fuzz, "DescribeConfigs", request_pb, mutating=False)


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.AlterConfigsRequest,
        resources=st.lists(
            st.builds(
                admin_pb2.AlterConfigsResource,
                resource=RESOURCES,
                configs=st.lists(
                    st.builds(
                        admin_pb2.AlterableConfig,
                        name=mostly(
                            st.sampled_from(["retention.ms", "cleanup.policy"]), CONFIG_KEYS
                        ),
                        value=mostly(st.sampled_from(["3600000", "delete"]), CONFIG_VALUES),
                        operation=mostly(
                            st.sampled_from([1, 2]), st.sampled_from([0, 3, 4, 5, -1])
                        ),
                    ),
                    max_size=4,
                ),
            ),
            max_size=3,
        ),
        validate_only=st.booleans(),
    )
)
def test_alter_configs(fuzz, request_pb):
    exchange(
        fuzz,
        "AlterConfigs",
        request_pb,
        mutating=True,
        rejected=lambda r: all_items_failed(r.results),
    )


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.GenerateReassignmentRequest,
        topics=st.lists(NAMES, max_size=3),
        broker_ids=mostly(broker_sets(), id_lists()),
        disable_rack_aware=st.booleans(),
    )
)
def test_generate_reassignment(fuzz, request_pb):
    exchange(fuzz, "GenerateReassignment", request_pb, mutating=False)


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.AlterPartitionReassignmentsRequest,
        reassignments=st.lists(
            st.builds(
                admin_pb2.ReassignableReplicas,
                topic=NOT_BASE,
                partition=mostly(st.integers(0, 2), small_ints()),
                replicas=mostly(broker_sets(), id_lists()),
                cancel=mostly(st.just(False), st.just(True)),
            ),
            max_size=3,
        ),
        throttle_bytes_per_sec=st.one_of(st.sampled_from([0, -1, 2**63 - 1]), int32s()),
        timeout_ms=TIMEOUTS,
    )
)
def test_alter_partition_reassignments(fuzz, request_pb):
    exchange(fuzz, "AlterPartitionReassignments", request_pb, mutating=True)


@FUZZ
@given(
    request_pb=st.builds(admin_pb2.ListPartitionReassignmentsRequest, partitions=TOPIC_PARTITIONS)
)
def test_list_partition_reassignments(fuzz, request_pb):
    exchange(fuzz, "ListPartitionReassignments", request_pb, mutating=False)


@FUZZ
@given(
    request_pb=st.builds(
        admin_pb2.ElectLeadersRequest,
        election_type=mostly(st.sampled_from([1, 2]), st.sampled_from([0, 3, -1])),
        partitions=TOPIC_PARTITIONS,
        timeout_ms=TIMEOUTS,
    )
)
def test_elect_leaders(fuzz, request_pb):
    exchange(fuzz, "ElectLeaders", request_pb, mutating=True)


@FUZZ
@given(request_pb=st.builds(admin_pb2.GetOperationRequest, request_id=texts()))
def test_get_operation(fuzz, request_pb):
    exchange(fuzz, "GetOperation", request_pb, mutating=False)
