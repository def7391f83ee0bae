"""The Kafka side's sequence (``bench.peers.scenarios``), recorded into a ``SideRun``."""

from __future__ import annotations

import resource
import signal
from typing import TYPE_CHECKING

from bench.peers import scenarios as S
from bench.peers.kafka.cluster import KafkaCluster, KafkaSpec
from bench.peers.kafka.side import KafkaSide
from bench.scenario import TMPFS

if TYPE_CHECKING:
    from bench.peers.run import SideRun


def describe(spec: KafkaSpec, where: str) -> str:
    return (
        f"Kafka: {spec.controllers} controllers (separate processes, a static voter quorum) and "
        f"{spec.brokers} brokers, KRaft; each JVM -Xmx{spec.heap} -Xms{spec.heap} "
        f"(kafka-server-start.sh's default) and kafka-run-class.sh's JVM flags; logs on {where}; "
        f"server settings changed from Kafka's defaults: {spec.changed_settings()}; Log4j at "
        "Kafka's default INFO level"
    )


def kafka_side(side: SideRun, knobs: S.Knobs) -> None:
    if knobs.small:
        spec = KafkaSpec()
        with KafkaCluster(spec) as kc:
            ks = KafkaSide.up(kc)
            side.settings.update(ks.detection_settings())
            side.notes.append(describe(spec, "disk (the work directory's filesystem)"))
            scenarios(side, ks, knobs)
    if knobs.large:
        large(side)


def scenarios(side: SideRun, ks: KafkaSide, knobs: S.Knobs) -> None:
    side.loaded("create_1")
    side.record("create_1", ks.create(knobs.names("create", 1), knobs.per_topic))
    ks.delete(knobs.names("create", 1))
    side.loaded("create_10")
    side.record("create_10", ks.create(knobs.names("bench", knobs.topics), knobs.per_topic))
    ks.settled()
    ks.create([S.PRODUCE_TOPIC], S.PRODUCE_PARTITIONS, {"min.insync.replicas": S.MIN_ISR})
    ks.settled()
    side.loaded("produce")
    side.record("produce", ks.produce(S.PRODUCE_TOPIC, S.RECORD, knobs.window, knobs.produce_s))
    for key, sig in (
        ("controller_sigterm", signal.SIGTERM),
        ("controller_sigkill", signal.SIGKILL),
    ):
        side.loaded(key)
        side.record(key, ks.controller_failover(sig))
        ks.settled()
    side.loaded("controlled_shutdown")
    side.record("controlled_shutdown", ks.controlled_shutdown(S.BROKER))
    ks.restore_broker(S.BROKER)
    side.loaded("broker_sigkill")
    side.record("broker_sigkill", ks.broker_kill(S.BROKER))


def large(side: SideRun) -> None:
    """100,000 partitions on tmpfs: controller SIGKILL and broker SIGKILL. Each Kafka broker
    then holds 100,000 logs, an open file each: below that many file descriptors allowed per
    process the brokers cannot start the logs, so the run is skipped with the reason."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = S.LARGE_PARTITIONS + 10_000
    if hard != resource.RLIM_INFINITY and hard < need:
        side.notes.append(
            f"100,000 partitions not run on Kafka: a broker needs about {need:,} open files "
            f"and this machine allows {hard:,} per process (RLIMIT_NOFILE hard limit)"
        )
        return
    spec = KafkaSpec(data_root=TMPFS)
    with KafkaCluster(spec) as kc:
        ks = KafkaSide.up(kc)
        side.notes.append(describe(spec, "tmpfs") + " (100,000 partitions)")
        for start in range(0, 100, 10):
            ks.create([f"large-{i}" for i in range(start, start + 10)], 1_000)
        ks.settled(timeout=3600)
        side.loaded("large_controller_sigkill")
        side.record("large_controller_sigkill", ks.controller_failover(signal.SIGKILL))
        ks.settled(timeout=3600)
        side.loaded("large_broker_sigkill")
        side.record("large_broker_sigkill", ks.broker_kill(S.BROKER))
