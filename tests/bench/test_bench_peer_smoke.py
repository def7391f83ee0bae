"""Smoke test of the Kafka peer harness (``bench/peers/kafka``) against a real Kafka server.

One controller and one broker (the smallest KRaft cluster, to keep ``make test`` short): the
harness formats and starts them, finds the quorum leader and the detection settings in their
logs, creates a topic through ``confluent-kafka`` and sees it led in the broker's own Metadata
answer, and stops everything it started. ``make test`` installs the server's jars first
(``make bench-peer-install``); without them this fails saying so.
"""

from __future__ import annotations

import pytest

from bench.peers.kafka.cluster import KafkaCluster, KafkaSpec
from bench.peers.kafka.side import KafkaSide, active_controller

pytestmark = pytest.mark.e2e


def test_kafka_harness_starts_creates_a_topic_and_stops():
    kc = KafkaCluster(KafkaSpec(controllers=1, brokers=1, heap="512M"))
    with kc:
        ks = KafkaSide.up(kc)
        leader, epoch = active_controller(kc)
        assert leader.node_id == 101 and epoch >= 1
        settings = ks.detection_settings()
        assert settings["broker.session.timeout.ms"].isdigit()
        assert settings["controller.quorum.fetch.timeout.ms"].isdigit()
        figures = ks.create(["smoke"], 3, replication=1)
        assert figures["brokers_ms"] >= figures["answer_ms"] > 0
        assert ks.topics == {"smoke": 3}
        pids = list(kc.pids().values())
        assert len(pids) == 2
    assert not any(node.alive() for node in kc.nodes())
    assert not kc.workdir.exists()
