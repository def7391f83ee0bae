"""The side-by-side benchmark's pure pieces: tables, Kafka properties and logs, defaults."""

from __future__ import annotations

import base64
import dataclasses
import math
import uuid
from pathlib import Path

import pytest

from bench.peers.kafka.cluster import (
    LINE,
    KafkaCluster,
    KafkaNode,
    KafkaSpec,
    LogRecord,
    random_cluster_id,
    render_properties,
)
from bench.peers.kafka.install import KafkaDist, dist, pom_version
from bench.peers.kafka.side import config_values, follows, transition
from bench.peers.leasehold_side import default_sizing, default_ttl
from bench.peers.table import Figure, SideBySide
from services.broker_agent.config import BrokerConfig
from services.controller.config import ControllerConfig

TIME = Figure("t_ms", "time", "ms")
RATE = Figure("rate", "rate", "records/s", lower_is_better=False)


def table(ours: dict, theirs: dict) -> SideBySide:
    return SideBySide("t", (TIME, RATE), ours, theirs, {"Leasehold": 0.5, "Kafka": 0.7})


def test_ratio_is_leasehold_over_kafka_and_the_verdict_follows_the_figure_direction():
    t = table({"t_ms": 50.0, "rate": 300.0}, {"t_ms": 200.0, "rate": 600.0})
    assert t.ratio("t_ms") == 0.25 and t.verdict(TIME) == "ahead"
    assert t.ratio("rate") == 0.5 and t.verdict(RATE) == "behind"


def test_a_missing_or_zero_figure_has_no_ratio_and_the_json_keeps_raw_values():
    t = table({"t_ms": 50.0}, {"t_ms": 0.0, "rate": 10.0})
    assert t.ratio("t_ms") is None and t.ratio("rate") is None and t.verdict(RATE) == ""
    rows = {f["key"]: f for f in t.to_json()["figures"]}
    assert rows["t_ms"]["leasehold"] == 50.0 and rows["t_ms"]["kafka"] == 0.0
    assert rows["rate"]["leasehold"] is None and rows["rate"]["ratio_leasehold_to_kafka"] is None
    assert t.to_json()["load_average_1m"] == {"Leasehold": 0.5, "Kafka": 0.7}


def test_the_pinned_kafka_version_names_the_install_folder(tmp_path):
    assert pom_version().startswith("4.")
    d = dist(tools=tmp_path)
    assert d.home == tmp_path / f"kafka-{pom_version()}" and not d.installed
    assert d.classpath() == str(tmp_path / f"kafka-{pom_version()}" / "libs" / "*")


def test_kafka_cluster_ids_are_16_bytes_of_url_safe_base64():
    ids = {random_cluster_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 22 and "=" not in i for i in ids)


def test_a_kafka_cluster_id_never_starts_with_a_dash_nor_is_reserved():
    # 0xf8 puts 62 in the first six bits: '-' in URL-safe base64, which `format -t` reads as
    # an option. The zero and metadata-topic ids are Kafka's reserved ones.
    dash = uuid.UUID(bytes=b"\xf8" + bytes(15))
    good = uuid.UUID(bytes=b"\x01" * 16)
    draws = iter([dash, uuid.UUID(int=0), uuid.UUID(int=1), good])
    assert base64.urlsafe_b64encode(dash.bytes).startswith(b"-")
    assert random_cluster_id(lambda: next(draws)) == "AQEBAQEBAQEBAQEBAQEBAQ"
    assert next(draws, None) is None


def test_a_node_log_tail_for_an_error_is_bounded_and_never_raises(tmp_path):
    kc = KafkaCluster(KafkaSpec(controllers=1, brokers=0), KafkaDist("4.4.0", tmp_path))
    try:
        node = kc.controllers[101]
        node.log_path.write_text("x" * 5000 + "kafka-storage: error: expected one argument\n")
        tail = node.log_tail()
        assert tail.endswith("expected one argument\n") and len(tail) == 2000
        node.log_path.unlink()
        assert node.log_tail().startswith("(unreadable")
    finally:
        kc.stop()


def test_kafka_node_properties_say_only_identity_listeners_and_quorum(tmp_path):
    spec = KafkaSpec(overrides={"message.max.bytes": "2000000"})
    kc = KafkaCluster(spec, KafkaDist("4.4.0", tmp_path))
    try:
        controller = kc.properties(kc.controllers[101])
        broker = kc.properties(kc.brokers[2])
        assert controller["process.roles"] == "controller"
        assert controller["listeners"] == f"CONTROLLER://{kc.controllers[101].address}"
        assert broker["process.roles"] == "broker" and broker["node.id"] == "2"
        assert broker["controller.quorum.voters"] == kc.voters
        assert kc.voters.count("@127.0.0.1:") == 3 and kc.voters.startswith("101@")
        assert broker["message.max.bytes"] == "2000000"
        assert spec.changed_settings() == "message.max.bytes=2000000"
        assert KafkaSpec().changed_settings() == "none (Kafka's defaults)"
        written = kc.brokers[2].props.read_text()
        assert written == render_properties(broker) and "advertised.listeners=" in written
    finally:
        kc.stop()
    assert not kc.workdir.exists()


def record(message: str, at: float = 1.0) -> LogRecord:
    return LogRecord(at, "INFO", "org.apache.kafka.raft.QuorumState", message)


def test_log_lines_parse_into_wall_time_level_logger_and_message():
    line = b"1795562709124 INFO [org.apache.kafka.raft.QuorumState] [RaftManager id=1] hi"
    m = LINE.match(line)
    assert m and int(m[1]) / 1000 == 1795562709.124 and m[3] == b"org.apache.kafka.raft.QuorumState"


@pytest.mark.parametrize(
    ("message", "min_epoch", "not_leader", "expected"),
    [
        (
            "FollowerState(fetchTimeoutMs=2000, epoch=3, leader=102, x) from Unattached",
            3,
            101,
            True,
        ),
        (
            "FollowerState(fetchTimeoutMs=2000, epoch=2, leader=102, x) from Unattached",
            3,
            101,
            False,
        ),
        (
            "FollowerState(fetchTimeoutMs=2000, epoch=3, leader=101, x) from Unattached",
            3,
            101,
            False,
        ),
        ("UnattachedState(epoch=3, leaderId=OptionalInt.empty) from FollowerState", 3, 101, False),
    ],
)
def test_follows_reads_a_raft_follower_transition(message, min_epoch, not_leader, expected):
    rec = record(f"[RaftManager id=1] Completed transition to {message}")
    assert transition(rec) == message
    assert follows(rec, min_epoch, not_leader) is expected


def test_config_values_come_from_the_logged_kafka_config(tmp_path):
    log = tmp_path / "broker-1.log"
    log.write_text(
        "1795562709124 INFO [kafka.server.KafkaConfig] KafkaConfig values: \n"
        "\tbroker.heartbeat.interval.ms = 2000\n\tbroker.session.timeout.ms = 9000\n"
    )
    node = KafkaNode(1, "broker", 1, Path("p"), log, Path("d"))
    names = ("broker.session.timeout.ms", "broker.heartbeat.interval.ms", "absent")
    assert config_values(node, names) == {
        "broker.session.timeout.ms": "9000",
        "broker.heartbeat.interval.ms": "2000",
    }


def test_the_leasehold_side_runs_at_the_services_default_ttl():
    ttl = next(f.default for f in dataclasses.fields(ControllerConfig) if f.name == "session_ttl")
    broker = next(f.default for f in dataclasses.fields(BrokerConfig) if f.name == "session_ttl")
    assert default_ttl() == ttl == broker
    sizing = default_sizing(10_000)
    assert sizing.ttl == ttl and math.isfinite(sizing.settle_window)


def test_tables_pair_both_sides_per_scenario_and_say_when_kafka_split_a_request():
    from bench.framework import RunContext
    from bench.peers.run import SideRun, tables
    from bench.peers.scenarios import Knobs

    ours, theirs = SideRun("Leasehold"), SideRun("Kafka")
    ours.record("create_10", {"partitions_per_s": 800.0, "brokers_ms": 375.0, "answer_ms": 90.0})
    theirs.record("create_10", {"partitions_per_s": 400.0, "brokers_ms": 750.0, "split": 1.0})
    theirs.record("broker_sigkill", {"fault_ms": 9500.0, "observer_call_ms": 120.0})
    ours.load["create_10"] = 1.5
    out = tables(ours, theirs, Knobs.of(RunContext(quick=True)))
    assert [t.title.split(",")[0] for t in out] == [
        "topic creation",
        "SIGKILL of a broker leading a third of 300",
    ]
    create, kill = out
    assert create.ratio("partitions_per_s") == 2.0 and create.ratio("answer_ms") is None
    assert create.load["Leasehold"] == 1.5 and math.isnan(create.load["Kafka"])
    assert any("POLICY_VIOLATION" in n for n in create.notes)
    assert kill.leasehold == {} and kill.ratio("fault_ms") is None
    assert any("120 ms" in n for n in kill.notes)
