"""The admin domain's pure helpers: packing, outcomes, reassignment views, request checks."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from leasehold.common.v1 import common_pb2 as c
from leasehold.errors import InvalidRequestError, NotFoundError, UnavailableError
from leasehold.etcd.client import KV, cmp_create_revision, op_put
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2 as m
from services.admin.config import Limits
from services.admin.describe import describe_partition, list_topic
from services.admin.model import CallContext, Outcome, PartitionOutcome, ReassignmentRequest
from services.admin.operations import (
    intent_request_id,
    merge_outcomes,
    optimistic,
    result_outcomes,
    trace_context,
    wait_seconds,
)
from services.admin.reassignments import Ongoing, check_entries, ongoing_of
from services.admin.snapshot import PartitionStateView, Stored, TopicView
from services.admin.store import MAX_TXN_OPS, Change, pack
from services.admin.validate import check_partition_cap, for_item, parse_broker_id

KS = Keyspace("unit")


def change(n_ops: int, n_compares: int = 0, size: int = 1) -> Change:
    return Change(
        tuple(cmp_create_revision(b"/k%d" % i, "=", 0) for i in range(n_compares)),
        tuple(op_put(b"/k%d" % i, b"v" * size) for i in range(n_ops)),
    )


@pytest.mark.parametrize(
    ("changes", "expected_sizes"),
    [
        ([change(1)] * 3, [3]),
        ([change(60), change(60), change(60)], [2, 1]),
        ([change(1, 2)] * 65, [64, 1]),  # compares fill up first
        ([change(128)], [1]),
        ([change(1, size=700_000)] * 3, [2, 1]),  # bytes
    ],
    ids=["small", "ops", "compares", "exactly-full", "bytes"],
)
def test_pack_respects_etcd_limits(changes, expected_sizes):
    batches = pack(changes)
    assert [len(b) for b in batches] == expected_sizes
    for batch in batches:
        assert sum(len(ch.ops) for ch in batch) <= MAX_TXN_OPS
        assert sum(len(ch.compares) for ch in batch) <= MAX_TXN_OPS


def test_pack_refuses_a_change_that_can_never_fit():
    with pytest.raises(ValueError):
        pack([change(129)])


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (KS.delete_topic("t"), m.TopicDeletion(request_id="d1"), "d1"),
        (KS.reassignment("t", 3), m.ReassignmentIntent(request_id="r1"), "r1"),
        (KS.election("e1"), m.ElectionIntent(request_id="e1"), "e1"),
        (KS.result("x"), m.AdminResult(request_id="x"), ""),
    ],
)
def test_intent_request_id_by_kind(key, value, expected):
    assert intent_request_id(KS, KV(key, value.SerializeToString(), 1, 1, 1, 0)) == expected


def test_merge_prefers_reported_outcomes_and_infers_the_rest():
    result = m.AdminResult(
        results=[c.PartitionError(topic="t", partition=1, error_code=84, error_message="n")]
    )
    reported = result_outcomes(result)
    assert reported == {("t", 1): Outcome(84, "n")}
    merged = merge_outcomes(
        [("t", 0), ("t", 1)], reported, lambda t, p: Outcome(message=f"inferred {t}-{p}")
    )
    assert merged == (
        PartitionOutcome("t", 0, Outcome(0, "inferred t-0")),
        PartitionOutcome("t", 1, Outcome(84, "n")),
    )
    assert result_outcomes(None) == {}


@pytest.mark.parametrize(
    ("timeout_ms", "expected"), [(-5, 0.0), (0, 0.0), (1500, 1.5), (10**9, 300.0)]
)
def test_wait_is_clamped(timeout_ms, expected):
    assert wait_seconds(timeout_ms, Limits()) == expected


def test_trace_context_keeps_only_w3c_headers_when_tracing_is_off():
    call = CallContext(trace_carrier={"traceparent": "00-a-b-01", "user-agent": "x"})
    assert dict(trace_context(call).carrier) == {"traceparent": "00-a-b-01"}


async def test_optimistic_retries_then_gives_up():
    attempts = []

    async def conflict():
        attempts.append(1)
        return None

    with pytest.raises(UnavailableError, match="kept changing"):
        await optimistic(conflict, Limits(max_attempts=3))
    assert len(attempts) == 3

    answers = iter([None, "done"])

    async def second_time():
        return next(answers)

    assert await optimistic(second_time, Limits()) == "done"


def topic(partitions, states=None, intents=None) -> TopicView:
    return TopicView(
        name="t",
        topic_id="id",
        partitions=MappingProxyType({p: tuple(r) for p, r in partitions.items()}),
        revision=5,
        states=MappingProxyType(
            {p: PartitionStateView(s, 10 + p) for p, s in (states or {}).items()}
        ),
        reassignments=MappingProxyType({p: Stored(i, 20) for p, i in (intents or {}).items()}),
    )


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (topic({0: [1, 2]}), None),
        (
            topic({0: [1, 2]}, intents={0: m.ReassignmentIntent(target_replicas=[2, 3])}),
            Ongoing("t", 0, (1, 2), (3,), (1,), (2, 3), ()),
        ),
        (
            topic(
                {0: [3, 1, 2]},
                states={
                    0: m.PartitionState(
                        leader=1, isr=[1, 2], adding_replicas=[3], removing_replicas=[1]
                    )
                },  # fmt: skip
                intents={0: m.ReassignmentIntent(target_replicas=[3, 2])},
            ),
            Ongoing("t", 0, (3, 1, 2), (3,), (1,), (3, 2), (1, 2)),
        ),
        (
            topic(
                {0: [3, 1]}, states={0: m.PartitionState(leader=1, isr=[1], adding_replicas=[3])}
            ),  # fmt: skip
            Ongoing("t", 0, (3, 1), (3,), (), (3, 1), (1,)),
        ),
    ],
    ids=["idle", "intent-only", "controller-started", "recovered-without-intent"],
)
def test_ongoing_reassignment_views(view, expected):
    assert ongoing_of(view, 0) == expected


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([], "Partition reassignment list cannot be empty"),
        ([("t", 0, (1,), False), ("t", 0, (2,), False)],
         "Partition reassignment contains duplicate topic partitions: t-0"),
        ([("t", 0, (1,), True)], "must not name target replicas"),
        ([("t", 0, (), False)], "Partition replica list cannot be empty"),
        ([("t", 1, (4, 4), False)],
         "Partition replica lists may not contain duplicate entries: t-1 contains multiple "
         "entries for 4"),
    ],
)  # fmt: skip
def test_reassignment_request_shape(entries, message):
    with pytest.raises(InvalidRequestError) as err:
        check_entries([ReassignmentRequest(t, p, r, cancel) for t, p, r, cancel in entries])
    assert message in err.value.message


def test_a_cancellation_alone_passes_the_shape_checks():
    check_entries([ReassignmentRequest("t", 0, (), True)])


def test_describe_partition_marks_dead_and_reported_offline_replicas():
    view = topic(
        {0: [1, 2, 3], 1: [2, 3]},
        states={
            0: m.PartitionState(
                leader=1, leader_epoch=3, isr=[1], offline_replicas=[2], controller_epoch=9
            )
        },  # fmt: skip
    )
    p0 = describe_partition(view, 0, live={1, 2})
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.offline_replicas) == (1, 3, (1,), (2, 3))
    assert (p0.partition_epoch, p0.controller_epoch) == (10, 9)
    p1 = describe_partition(view, 1, live={1, 2, 3})
    assert (p1.leader, p1.leader_epoch, p1.isr, p1.partition_epoch) == (-1, -1, (), 0)
    listing = list_topic(view)
    assert (listing.partition_count, listing.replication_factor) == (2, 3)


def test_for_item_prefixes_multi_item_errors_and_keeps_the_class():
    with pytest.raises(NotFoundError) as err, for_item("Topic 'x'"):
        raise NotFoundError(3, "gone")
    assert (err.value.message, err.value.code, err.value.grpc_status) == ("Topic 'x': gone", 3,
                                                                         "NOT_FOUND")  # fmt: skip
    with pytest.raises(NotFoundError) as err, for_item("Topic 'x'", enabled=False):
        raise NotFoundError(3, "gone")
    assert err.value.message == "gone"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("17", 17), ("2147483647", 2147483647), ("-1", None), ("x", None), ("1.0", None),
     ("2147483648", None), ("١", None), ("", None)],
)  # fmt: skip
def test_broker_resource_names(text, expected):
    if expected is None:
        with pytest.raises(InvalidRequestError):
            parse_broker_id(text)
    else:
        assert parse_broker_id(text) == expected


def test_partition_cap():
    check_partition_cap(10, Limits(max_partitions_per_topic=10))
    with pytest.raises(InvalidRequestError, match="exceeds the maximum of 10 per topic"):
        check_partition_cap(11, Limits(max_partitions_per_topic=10))
