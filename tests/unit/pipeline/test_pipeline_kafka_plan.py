"""The kafka plan mode (kafka-reassign-partitions --generate) locally and on Spark."""

from __future__ import annotations

import json

import pytest

from leasehold.errors import InvalidRequestError
from services.pipeline.kafka_plan import KafkaOptions, local_kafka_plan, spark_kafka_plan
from services.pipeline.plan_core import table_from_rows

# Kafka's ReplicaAssignmentTest: 5 brokers, 10 partitions, rf 3, start index (and shift) 0.
KAFKA_EXPECTED = {
    0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
    5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
}  # fmt: skip
BROKERS = {b: None for b in range(5)}


def rows_all_on_first_three():
    return [("orders", p, [0, 1, 2], 100 * p) for p in range(10)] + [("other", 0, [4], 1)]


def as_map(plan):
    return {(c.topic, c.partition): c.new for c in (*plan.changes, *plan.unchanged)}


def test_local_matches_kafkas_own_expected_assignment():
    options = KafkaOptions(topics=("orders",), start_index=0, seed=1)
    plan = local_kafka_plan(table_from_rows(rows_all_on_first_three()), BROKERS, options)
    assert as_map(plan) == {("orders", p): r for p, r in KAFKA_EXPECTED.items()}
    assert [c.partition for c in plan.unchanged] == [0]  # already [0, 1, 2]
    moved = {p: len(set(r) - {0, 1, 2}) for p, r in KAFKA_EXPECTED.items()}
    assert plan.summary.replica_moves == sum(moved.values()) == 12
    assert plan.summary.leader_moves == 8  # every partition but 0 and 5 changes leader
    assert plan.summary.bytes_to_move == sum(100 * p * n for p, n in moved.items())
    doc = json.loads(plan.reassignment_json())
    assert [(e["topic"], e["partition"]) for e in doc["partitions"]] == [
        ("orders", p) for p in range(10)
    ]
    assert json.loads(plan.rollback_json())["partitions"][3]["replicas"] == [0, 1, 2]


def test_broker_list_and_rack_awareness():
    brokers = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    rows = [("t", p, [1, 2], 0) for p in range(6)]
    plan = local_kafka_plan(
        table_from_rows(rows), brokers, KafkaOptions(broker_ids=(1, 3, 5), seed=7)
    )
    for replicas in as_map(plan).values():
        assert set(replicas) <= {1, 3, 5}
        assert len({brokers[b] for b in replicas}) == 2  # different racks
    assert plan.summary.details["rack_aware"] is True
    assert (
        plan.summary.goals_after["rack_awareness"]
        == 0
        < plan.summary.goals_before["rack_awareness"]
    )


def test_seed_makes_plans_reproducible():
    table = table_from_rows([("t", p, [0, 1], 0) for p in range(8)])
    a = local_kafka_plan(table, BROKERS, KafkaOptions(seed=42))
    b = local_kafka_plan(table, BROKERS, KafkaOptions(seed=42))
    assert as_map(a) == as_map(b)
    assert a.summary.details["seed"] == 42


def test_replication_factor_above_brokers_fails_like_kafka():
    table = table_from_rows([("t", 0, [0, 1, 2], 0)])
    with pytest.raises(InvalidRequestError, match="larger than available brokers: 2"):
        local_kafka_plan(table, BROKERS, KafkaOptions(broker_ids=(0, 1), seed=1))


@pytest.mark.spark
def test_spark_plan_equals_local_plan(spark):
    brokers = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    rows = [(f"t{t}", p, [1, 3, 5][: 1 + t % 3], 10 * p) for t in range(5) for p in range(7)]
    table = table_from_rows(rows)
    options = KafkaOptions(seed=123, topics=("t0", "t1", "t2", "t4"))
    local = local_kafka_plan(table, brokers, options)
    df = spark.createDataFrame(table.to_pandas())
    on_spark = spark_kafka_plan(spark, df, brokers, options)
    assert on_spark.changes == local.changes
    assert on_spark.unchanged == local.unchanged
    assert on_spark.summary.goals_before == local.summary.goals_before
    assert on_spark.summary.goals_after == local.summary.goals_after
    fixed = spark_kafka_plan(
        spark,
        spark.createDataFrame(table_from_rows(rows_all_on_first_three()).to_pandas()),
        BROKERS,
        KafkaOptions(topics=("orders",), start_index=0, seed=1),
    )
    assert as_map(fixed) == {("orders", p): r for p, r in KAFKA_EXPECTED.items()}
