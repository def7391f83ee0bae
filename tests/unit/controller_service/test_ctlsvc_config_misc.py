"""Controller flags/env, StopReplica answers for the deletion manager, the state-change log."""

from __future__ import annotations

import json

import pytest

from leasehold.broker.v1 import control_pb2
from leasehold.common.v1 import common_pb2
from services.controller.app import stop_replica_result
from services.controller.config import parse_args
from services.controller.core import TopicPartition
from services.controller.statelog import StateChangeLog


@pytest.fixture(autouse=True)
def _plaintext(monkeypatch):
    """These tests are about other flags: the services' TLS flags have their own tests."""
    monkeypatch.setenv("LEASEHOLD_INSECURE", "1")


def test_flags_and_environment(monkeypatch):
    monkeypatch.setenv("LEASEHOLD_CONTROLLER_ID", "4")
    monkeypatch.setenv("LEASEHOLD_REBALANCE_INTERVAL", "2.5")
    cfg = parse_args(["--etcd", "a:1,b:2", "--session-ttl", "3", "--state-change-log", "/x"])
    assert (cfg.controller_id, cfg.session_ttl, cfg.state_change_log) == (4, 3, "/x")
    assert cfg.rebalance_interval_s == 2.5 and cfg.common.etcd_endpoints == ("a:1", "b:2")
    assert parse_args(["--controller-id", "2"]).controller_id == 2
    with pytest.raises(SystemExit):
        parse_args(["--session-ttl", "0"])


def test_the_delivery_is_chosen_by_flag_or_environment(monkeypatch):
    assert parse_args([]).delivery == "fast"
    assert parse_args(["--delivery", "plain"]).delivery == "plain"
    monkeypatch.setenv("LEASEHOLD_DELIVERY", "plain")
    assert parse_args([]).delivery == "plain"
    with pytest.raises(SystemExit):
        parse_args(["--delivery", "quick"])


def test_the_control_stream_is_on_unless_the_flag_or_environment_turns_it_off(monkeypatch):
    assert parse_args([]).control_stream is True
    assert parse_args(["--no-control-stream"]).control_stream is False
    monkeypatch.setenv("LEASEHOLD_CONTROL_STREAM", "false")
    assert parse_args([]).control_stream is False
    assert parse_args(["--control-stream"]).control_stream is True


def _sr(*parts):
    return control_pb2.StopReplicaRequest(
        controller_epoch=6,
        partition_states=[
            control_pb2.StopReplicaPartitionState(topic=t, partition=p, delete_partition=d)
            for t, p, d in parts
        ],
    )


def test_stop_replica_results():
    req = _sr(("t", 0, True), ("t", 1, True), ("u", 0, False))
    ok = stop_replica_result(2, req, control_pb2.StopReplicaResponse())
    assert (ok.broker_id, ok.controller_epoch) == (2, 6)
    assert ok.errors == ((TopicPartition("t", 0), 0), (TopicPartition("t", 1), 0))
    one = control_pb2.StopReplicaResponse(
        partition_errors=[common_pb2.PartitionError(topic="t", partition=1, error_code=56)]
    )
    assert stop_replica_result(2, req, one).errors == (
        (TopicPartition("t", 0), 0), (TopicPartition("t", 1), 56)
    )  # fmt: skip
    whole = control_pb2.StopReplicaResponse(error_code=11)
    assert {e for _, e in stop_replica_result(2, req, whole).errors} == {11}
    assert stop_replica_result(2, _sr(("u", 0, False)), control_pb2.StopReplicaResponse()) is None


def test_state_change_log_lines(tmp_path):
    path = tmp_path / "sc.log"
    log = StateChangeLog(str(path), controller_id=3)
    log.controller("elected", 7)
    log.controller("failover_done", 7, duration_ms=12.5)
    log.broker("registered", 2, 7)
    log.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["kind"], r["event"], r["controller_id"], r["controller_epoch"]) for r in lines] == [
        ("controller", "elected", 3, 7),
        ("controller", "failover_done", 3, 7),
        ("broker", "registered", 3, 7),
    ]
    assert lines[1]["duration_ms"] == 12.5 and lines[2]["broker_id"] == 2
