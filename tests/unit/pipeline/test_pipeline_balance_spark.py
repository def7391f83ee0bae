"""The balance plan on Spark: the same exact plans as the single-process planner, and the very
same plan as it on a generated cluster (both select candidates by the same rules)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from pyspark.sql import functions as F

from services.pipeline.balance_spark import explode_replicas, replica_key, spark_balance
from services.pipeline.goals import GOALS, BalanceOptions, mix_key
from services.pipeline.plan_core import local_balance, table_from_rows
from services.pipeline.synthetic import SyntheticSpec, synthetic_cluster

pytestmark = pytest.mark.spark


def frame(spark, table):
    return spark.createDataFrame(
        table.to_pandas(),
        "topic string, partition int, replicas array<int>, size_bytes long, bytes_in_per_s double",
    )


def test_spark_key_equals_numpy_key(spark):
    rows = [("orders", 0, [1, 2], 0), ("päyments", 77, [30000, 5], 0)]
    got = (
        explode_replicas(frame(spark, table_from_rows(rows)))
        .select("topic", "partition", "broker_id",
                replica_key(F.col("topic"), F.col("partition"), F.col("broker_id")).alias("k"))
        .orderBy("topic", "broker_id")
        .collect()
    )  # fmt: skip
    for r in got:
        crc = np.array([zlib.crc32(r["topic"].encode())])
        assert r["k"] == mix_key(crc, np.array([r["partition"]]), np.array([r["broker_id"]]))[0]


@pytest.mark.parametrize(
    ("rows", "brokers", "options", "expected"),
    [
        (
            [("t", 0, [1, 2], 700), ("t", 1, [2, 3], 50)],
            {1: None, 2: None, 3: None},
            BalanceOptions(threshold=0, drain=frozenset({1})),
            {("t", 0): (3, 2)},
        ),
        (
            [("t", 0, [1, 2], 0), ("t", 1, [3, 4], 0)],
            {1: "a", 2: "a", 3: "b", 4: "b"},
            BalanceOptions(threshold=0),
            {("t", 0): (1, 3), ("t", 1): (2, 4)},
        ),
    ],
)
def test_exact_small_plans(spark, rows, brokers, options, expected):
    plan = spark_balance(spark, frame(spark, table_from_rows(rows)), brokers, options)
    assert {(c.topic, c.partition): c.new for c in plan.changes} == expected
    assert [plan.summary.goals_after[g] for g in GOALS] == [0] * 9


def test_spark_and_single_process_plans_are_identical(spark):
    spec = SyntheticSpec(brokers=24, racks=3, topics=5, partitions=400, rf=3, skew=2.0,
                         new_brokers=3, rack_violations=0.05, seed=11)  # fmt: skip
    table, brokers = synthetic_cluster(spec)
    options = BalanceOptions(drain=frozenset({2}), exclude=frozenset({5}))
    local = local_balance(table, brokers, options)
    on_spark = spark_balance(spark, frame(spark, table), brokers, options)
    assert on_spark.changes == local.changes
    assert on_spark.summary.goals_before == local.summary.goals_before
    assert on_spark.summary.goals_after == local.summary.goals_after
    assert on_spark.summary.details["candidates"] == local.summary.details["candidates"]
    assert local.summary.replica_moves > 0
