"""Bounded input: error messages that never grow with the input, and per-request counts taken
on the decoded protobuf (``leasehold.request_bounds``, the services' ``bounds`` modules)."""

from __future__ import annotations

import pytest

from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.grpc_errors import MAX_STATUS_MESSAGE_CHARS, bounded
from leasehold.request_bounds import Counts, OverLimit
from leasehold.validation import cut, quote, topic_name_problem
from services.admin.bounds import counters as admin_counters
from services.admin.config import Limits
from services.broker_agent.bounds import counters as broker_counters

ADMIN = "/leasehold.admin.v1.AdminService/"


def test_quote_and_cut_keep_a_short_prefix():
    assert quote("demo") == "'demo'"
    assert quote("a" * 249) == f"'{'a' * 249}'"  # a legal topic name is quoted whole
    long = quote("n" * 100_000)
    assert long.startswith("'nnn") and long.endswith("...' (100000 characters)")
    assert len(long) < 300
    assert cut("t" * 100_000, 10) == "tttttttttt... (100000 characters)"
    assert len(topic_name_problem("n" * 100_000)) < 400


def test_status_messages_are_cut():
    assert bounded("short") == "short"
    message = bounded("x" * 50_000)
    assert len(message) < MAX_STATUS_MESSAGE_CHARS + 60 and "48976 more characters" in message


def _count(method: str, request, limits: Limits = Limits()) -> None:
    admin_counters(limits)[ADMIN + method](request, Counts(ADMIN + method))


def test_the_issues_create_topics_are_over_the_limits():
    wide = admin_pb2.CreateTopicsRequest(
        topics=[
            admin_pb2.CreatableTopic(name=f"t{i}", num_partitions=50_000, replication_factor=1)
            for i in range(20)
        ]
    )
    with pytest.raises(OverLimit, match="more than 100000 partitions.*--max-partitions-per-req"):
        _count("CreateTopics", wide)
    explicit = admin_pb2.CreateTopicsRequest(
        topics=[
            admin_pb2.CreatableTopic(
                name="e",
                assignments=[
                    admin_pb2.ReplicaAssignment(partition=p, broker_ids=[1, 2, 3, 4])
                    for p in range(80_000)
                ],
            )
        ]
    )
    with pytest.raises(OverLimit, match="replica assignment entries"):
        _count("CreateTopics", explicit)
    _count("CreateTopics", wide, Limits(max_partitions_per_request=1_000_000))


@pytest.mark.parametrize(
    ("method", "request_", "limits"),
    [
        ("DeleteTopics", admin_pb2.DeleteTopicsRequest(topic_names=["a"] * 3),
         Limits(max_topics_per_request=2)),
        ("AlterConfigs", admin_pb2.AlterConfigsRequest(resources=[admin_pb2.AlterConfigsResource(
            configs=[admin_pb2.AlterableConfig(name="x")] * 3)]),
         Limits(max_config_entries_per_request=2)),
        ("ElectLeaders", admin_pb2.ElectLeadersRequest(partitions=[{}] * 3),
         Limits(max_partitions_per_request=2)),
        ("AlterPartitionReassignments", admin_pb2.AlterPartitionReassignmentsRequest(
            reassignments=[admin_pb2.ReassignableReplicas(replicas=[1, 2])] * 2),
         Limits(max_assignment_entries_per_request=3)),
    ],
)  # fmt: skip
def test_each_admin_limit(method, request_, limits):
    with pytest.raises(OverLimit):
        _count(method, request_, limits)


def test_broker_limits_for_clients_and_the_controller():
    table = broker_counters(max_partitions=10, max_control_partitions=100)
    fetch = broker_pb2.FetchRequest(topics=[broker_pb2.FetchTopic(topic="t", partitions=[{}] * 11)])
    method = "/leasehold.broker.v1.BrokerService/Fetch"
    with pytest.raises(OverLimit, match="--max-partitions-per-request"):
        table[method](fetch, Counts(method))
    control = "/leasehold.broker.v1.BrokerControlService/LeaderAndIsr"
    table[control](control_pb2.LeaderAndIsrRequest(partition_states=[{}] * 100), Counts(control))
    with pytest.raises(OverLimit, match="--max-control-partitions-per-request"):
        table[control](
            control_pb2.LeaderAndIsrRequest(partition_states=[{}] * 101), Counts(control)
        )
