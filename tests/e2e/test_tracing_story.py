"""Traces that tell the story: a controller failover is one trace (campaign won -> epoch bump
-> failover -> UpdateMetadata to each broker), one ``leasehold produce`` is one trace whose
acks=all Produce links the replication that satisfied it, and idle follower long polls leave
no traces. Real processes export OTLP/gRPC to an in-process receiver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from otlp_receiver import CLIENT, SERVER, OtlpReceiver

from leasehold.client.admin import AdminClient
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

CONTROLLER, BROKER, CLI = "leasehold-controller", "leasehold-broker-agent", "leasehold-cli"
UPDATE_METADATA = "leasehold.broker.v1.BrokerControlService/UpdateMetadata"
PRODUCE = "leasehold.broker.v1.BrokerService/Produce"
FETCH = "leasehold.broker.v1.BrokerService/Fetch"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("story")
    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
        spec = ClusterSpec(controllers=2, brokers=2, session_ttl=3, extra_env=env)
        cluster = LocalCluster(spec, workdir=str(tmp / "cluster"))
        try:
            cluster.start()
            yield cluster, receiver, env
        finally:
            for proc in cluster.brokers.values():
                proc.kill()
            cluster.stop()
            shutil.rmtree(tmp / "cluster", ignore_errors=True)


def cli(cluster, env, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "OTEL_SERVICE_NAME": CLI}
    result = subprocess.run(
        [sys.executable, "-m", "leasehold.cli.main", "--admin", cluster.admin_address, *args],
        input=stdin, env=full, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


async def test_produce_is_one_trace_and_idle_long_polls_leave_none(traced):
    cluster, receiver, env = traced
    cli(cluster, env, "topics", "create", "story", "--partitions", "1", "--replication-factor",
        "2", "--timeout", "40")  # fmt: skip
    time.sleep(3)  # followers long-poll the new partition, idle
    idle = [s for s in receiver.spans() if s.name == FETCH]
    cli(cluster, env, "produce", "story", "--acks", "all", stdin="hello\n")

    async def produced():
        spans = receiver.spans()
        root = [s for s in spans if s.service == CLI and s.name == "leasehold produce"]
        if len(root) != 1:
            return None
        trace = [s for s in spans if s.trace_id == root[0].trace_id]
        served = [s for s in trace if s.name == PRODUCE and s.kind == SERVER]
        return (root[0], trace, served[0]) if served else None

    root, trace, served = await until(produced, timeout=20, what="the produce trace")
    assert root.parent_span_id == ""
    assert {s.service for s in trace} >= {CLI, BROKER}
    # every RPC a command made is in its command's trace (one per command, no orphans)
    spans = receiver.spans()
    commands = {s.trace_id: s.name for s in spans if s.service == CLI and not s.parent_span_id}
    assert set(commands.values()) == {"leasehold topics create", "leasehold produce"}
    assert not [s for s in spans if s.service == CLI and s.trace_id not in commands]
    a = served.attributes
    assert (a["leasehold.topic"], a["leasehold.partition"], a["leasehold.acks"]) == ("story", 0, -1)
    assert isinstance(a["client.port"], int) and a["client.address"] == "127.0.0.1"
    client = next(s for s in trace if s.name == PRODUCE and s.kind == CLIENT)
    assert isinstance(client.attributes["server.port"], int)
    assert not [k for s in trace for k in s.attributes if k.startswith("net.")]
    # acks=all: the follower fetch that moved the high watermark is linked (and exported)
    assert served.link_trace_ids, "no link to the replication that satisfied acks=all"
    fetches = {s.trace_id for s in receiver.spans() if s.name == FETCH and s.kind == SERVER}
    assert set(served.link_trace_ids) & fetches
    # Idle long polls: a few seconds of two brokers following each other left next to nothing
    # (only fetches that carried records or moved a high watermark).
    assert len(idle) <= 4, [(s.service, s.kind) for s in idle]


async def test_a_controller_failover_is_one_trace(traced):
    cluster, receiver, env = traced
    async with AdminClient(cluster.admin_address) as admin:

        async def in_office():
            return (await admin.describe_cluster()).active_controller.controller_id

        active = cluster.controllers[await until(in_office, timeout=30, what="a controller")]
    before = {s.span_id for s in receiver.spans() if s.name == "controller.elected"}
    for proc in cluster.controllers.values():
        if proc is not active:
            standby = proc
    active.kill()

    async def failover_trace():
        spans = receiver.spans()
        won = [s for s in spans if s.name == "controller.elected" and s.span_id not in before]
        if not won:
            return None
        trace = [s for s in spans if s.trace_id == won[0].trace_id]
        served = [s for s in trace if s.name == UPDATE_METADATA and s.kind == SERVER]
        if len(served) < 2 or not any(s.name == "controller.failover" for s in trace):
            return None
        return won[0], trace

    won, trace = await until(failover_trace, timeout=60, what="the failover trace")
    assert standby.alive and won.parent_span_id == ""
    names = {s.name for s in trace}
    assert {"controller.event", "controller.epoch_bump", "controller.failover"} <= names
    by_id = {s.span_id: s for s in trace}
    bump = next(s for s in trace if s.name == "controller.epoch_bump")
    event = by_id[bump.parent_span_id]
    assert event.name == "controller.event" and event.parent_span_id == won.span_id
    updates = [s for s in trace if s.name == UPDATE_METADATA and s.kind == SERVER]
    assert {s.service for s in updates} == {BROKER} and len(updates) >= 2
    active.start()
    active.wait_ready()
