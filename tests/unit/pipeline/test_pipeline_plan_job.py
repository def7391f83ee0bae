"""The plan job and CLI from snapshot directories to Kafka's reassignment files."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from leasehold.etcd.client import KV
from leasehold.etcd.keys import Keyspace
from leasehold.metadata.v1 import metadata_pb2 as m
from leasehold.reassign_json import check_execute_targets, parse_reassignment
from services.pipeline.cli import pipeline
from services.pipeline.goals import GOALS
from services.pipeline.plan_job import load_partitions_local, load_partitions_spark
from services.pipeline.snapshot_job import write_snapshot
from services.pipeline.snapshot_rows import tables_from_kvs
from services.pipeline.synthetic import SyntheticSpec, write_synthetic_snapshot

KS = Keyspace("plan")


def snapshot_with_deletion_and_reassignment(path):
    def kv(key, msg):
        return KV(key, msg.SerializeToString(), 2, 3, 1, 0)

    kvs = [kv(KS.broker(b), m.BrokerRegistration(broker_id=b, host="h", port=b)) for b in (1, 2, 3)]
    moving = m.TopicAssignment(topic_id="x")
    moving.partitions[0].replicas[:] = [1, 2, 3]  # 3 -> ... being removed by a reassignment
    gone = m.TopicAssignment(topic_id="y")
    gone.partitions[0].replicas[:] = [1]
    kvs += [
        kv(KS.topic("moving"), moving),
        kv(KS.partition_state("moving", 0),
           m.PartitionState(leader=1, leader_epoch=1, isr=[1, 2, 3], removing_replicas=[3])),
        kv(KS.topic("gone"), gone),
        kv(KS.delete_topics_prefix + b"gone", m.TopicDeletion(topic_id="y")),
    ]  # fmt: skip
    write_snapshot(tables_from_kvs(KS, kvs, 5), path, {"measured": 0}, 0)


def test_planners_see_effective_replicas_and_skip_deleted_topics(tmp_path):
    snapshot_with_deletion_and_reassignment(tmp_path)
    parts = load_partitions_local(tmp_path).to_pylist()
    assert parts == [{"topic": "moving", "partition": 0, "replicas": [1, 2], "size_bytes": None,
                     "bytes_in_per_s": None}]  # fmt: skip


@pytest.mark.spark
def test_spark_loader_agrees(spark, tmp_path):
    snapshot_with_deletion_and_reassignment(tmp_path)
    rows = [r.asDict() for r in load_partitions_spark(spark, tmp_path).collect()]
    assert rows == [{"topic": "moving", "partition": 0, "replicas": [1, 2], "size_bytes": None,
                     "bytes_in_per_s": None}]  # fmt: skip


@pytest.fixture
def synthetic(tmp_path):
    spec = SyntheticSpec(brokers=9, racks=3, topics=3, partitions=90, rf=3, skew=2.0,
                         new_brokers=3, seed=5)  # fmt: skip
    write_synthetic_snapshot(spec, tmp_path / "snap")
    return tmp_path


def run(args):
    result = CliRunner().invoke(pipeline, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def test_balance_plan_through_the_cli(synthetic):
    out = synthetic / "plan"
    result = run(["plan", "--snapshot", str(synthetic / "snap"), "--output", str(out),
                  "--engine", "local", "--drain", "1", "--exclude", "9"])  # fmt: skip
    targets = check_execute_targets(parse_reassignment((out / "reassignment.json").read_text()))
    summary = json.loads((out / "summary.json").read_text())
    assert len(targets) == summary["partitions_changed"] > 0
    assert all(1 not in r for r in targets.values())
    rollback = check_execute_targets(parse_reassignment((out / "rollback.json").read_text()))
    assert set(rollback) == set(targets)
    assert (
        summary["goals_after"]["replica_capacity"]
        == 0
        < summary["goals_before"]["replica_capacity"]
    )
    assert summary["details"]["options"]["drain"] == [1]
    for goal in GOALS:
        assert summary["goals_after"][goal] <= summary["goals_before"][goal]
        assert goal in result.output


def test_kafka_plan_through_the_cli(synthetic):
    topics = synthetic / "topics.json"
    topics.write_text('{"version":1,"topics":[{"topic":"topic-00001"}]}')
    out = synthetic / "kafka"
    run(["plan", "--snapshot", str(synthetic / "snap"), "--output", str(out), "--mode", "kafka",
         "--engine", "local", "--topics-to-move-json-file", str(topics), "--broker-list", "7,8,9",
         "--seed", "3"])  # fmt: skip
    targets = check_execute_targets(parse_reassignment((out / "reassignment.json").read_text()))
    assert {tp.topic for tp in targets} == {"topic-00001"} and len(targets) == 30
    assert all(sorted(r) == [7, 8, 9] for r in targets.values())
    assert json.loads((out / "summary.json").read_text())["details"]["seed"] == 3


def test_bad_broker_list_is_a_usage_error(synthetic):
    args = ["plan", "--snapshot", str(synthetic / "snap"), "--output", str(synthetic / "x")]
    result = CliRunner().invoke(pipeline, [*args, "--drain", "one"])
    assert result.exit_code == 2 and "broker ids" in result.output


@pytest.mark.spark
def test_spark_engine_through_the_cli_matches_local(spark, synthetic):
    common = ["plan", "--snapshot", str(synthetic / "snap"), "--drain", "2"]
    run([*common, "--output", str(synthetic / "local"), "--engine", "local"])
    run(["--shuffle-partitions", "2", *common, "--output", str(synthetic / "spark")])
    for name in ("reassignment.json", "rollback.json"):
        assert (synthetic / "local" / name).read_text() == (synthetic / "spark" / name).read_text()


def test_module_entry_point_and_mounting(capsys):
    import click

    from services.pipeline.__main__ import main
    from services.pipeline.cli import register

    assert main(["--help"]) == 0
    assert "snapshot" in capsys.readouterr().out
    assert main(["plan", "--snapshot", "/nonexistent", "--output", "x"]) == 2
    group = click.Group("leasehold")
    register(group)
    assert sorted(group.commands["pipeline"].commands) == ["analyze", "plan", "snapshot"]


def test_domain_errors_are_one_line(synthetic):
    args = ["plan", "--snapshot", str(synthetic / "snap"), "--output", str(synthetic / "k")]
    result = CliRunner().invoke(pipeline, [*args, "--mode", "kafka", "--engine", "local",
                                           "--broker-list", "1,2"])  # fmt: skip
    assert result.exit_code == 1
    assert result.output.strip() == "Error: Replication factor: 3 larger than available brokers: 2."
    duplicate = CliRunner().invoke(pipeline, [*args, "--mode", "kafka", "--broker-list", "1,1"])
    assert duplicate.output == "Error: Broker list contains duplicate entries: [1]\n"
