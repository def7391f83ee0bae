"""Traces that tell the story, as Jaeger stores them: a controller failover is one trace (campaign
won -> epoch bump -> failover -> UpdateMetadata to each broker), one ``leasehold produce`` is one
trace whose acks=all Produce links the replication that satisfied it, and idle follower long
polls leave no traces. Real processes export OTLP/gRPC to Jaeger all-in-one (``make jaeger``);
the assertions read Jaeger's HTTP API."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from jaeger_traces import Trace

from leasehold.client.admin import AdminClient
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from leasehold.testing.jaeger import JaegerServer, jaeger_binary
from leasehold.testing.wait import until

pytestmark = pytest.mark.e2e

CONTROLLER, BROKER, CLI = "leasehold-controller", "leasehold-broker-agent", "leasehold-cli"
UPDATE_METADATA = "leasehold.broker.v1.BrokerControlService/UpdateMetadata"
PRODUCE = "leasehold.broker.v1.BrokerService/Produce"
FETCH = "leasehold.broker.v1.BrokerService/Fetch"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    try:
        jaeger_binary()
    except FileNotFoundError:
        pytest.skip("no Jaeger binary: run `make jaeger`")
    tmp = tmp_path_factory.mktemp("story")
    with JaegerServer(tmp / "jaeger") as jaeger:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint,
            "OTEL_EXPORTER_OTLP_INSECURE": "true",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }
        spec = ClusterSpec(controllers=2, brokers=2, extra_env=env)
        cluster = LocalCluster(spec, workdir=str(tmp / "cluster"))
        try:
            cluster.start()
            yield cluster, jaeger, env
        finally:
            for proc in cluster.brokers.values():
                proc.kill()
            cluster.stop()
            shutil.rmtree(tmp / "cluster", ignore_errors=True)


def traces(jaeger: JaegerServer, service: str, operation: str | None = None) -> list[Trace]:
    return [Trace(t) for t in jaeger.traces(service, operation, limit=500)]


def cli(cluster, env, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **env, "OTEL_SERVICE_NAME": CLI}
    result = subprocess.run(
        [sys.executable, "-m", "leasehold.cli.main", "--admin", cluster.admin_address,
         "--insecure", *args],
        input=stdin, env=full, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def fetch_servers(jaeger: JaegerServer) -> list:
    return [
        s
        for t in traces(jaeger, BROKER, FETCH)
        for s in t.spans
        if s.name == FETCH and s.kind == "server"
    ]


async def test_produce_is_one_trace_and_idle_long_polls_leave_none(traced):
    cluster, jaeger, env = traced
    cli(cluster, env, "topics", "create", "story", "--partitions", "1", "--replication-factor",
        "2", "--timeout", "40")  # fmt: skip
    time.sleep(3)  # followers long-poll the new partition, idle
    idle = fetch_servers(jaeger)
    cli(cluster, env, "produce", "story", "--acks", "all", stdin="hello\n")

    async def produced():
        for trace in traces(jaeger, CLI, "leasehold produce"):
            served = [s for s in trace.spans if s.name == PRODUCE and s.kind == "server"]
            if served and not trace.orphans():
                return trace, served[0]
        return None

    trace, served = await until(produced, timeout=30, what="the produce trace")
    (root,) = trace.roots()
    assert root.service == CLI and root.name == "leasehold produce"
    assert {s.service for s in trace.spans} >= {CLI, BROKER}
    # Every RPC a command made is in its command's trace (one per command, no orphans).
    commands = [t for t in traces(jaeger, CLI) if any(s.service == CLI for s in t.spans)]
    roots = sorted(r.name for t in commands for r in t.roots())
    assert roots == ["leasehold produce", "leasehold topics create"], roots
    assert all(not t.orphans() for t in commands)
    a = served.tags
    assert (a["leasehold.topic"], a["leasehold.partition"], a["leasehold.acks"]) == ("story", 0, -1)
    assert isinstance(a["client.port"], int) and a["client.address"] == "127.0.0.1"
    client = next(s for s in trace.spans if s.name == PRODUCE and s.kind == "client")
    assert isinstance(client.tags["server.port"], int)
    assert not [k for s in trace.spans for k in s.tags if k.startswith("net.")]
    # acks=all: the follower fetch that moved the high watermark is linked (and exported).
    assert served.links, "no link to the replication that satisfied acks=all"

    async def linked_fetch():
        fetches = {t.trace_id for t in traces(jaeger, BROKER, FETCH)}
        return set(served.links) & fetches

    await until(linked_fetch, timeout=20, what="the linked follower fetch in Jaeger")
    # Idle long polls: a few seconds of two brokers following each other left next to nothing
    # (only fetches that carried records or moved a high watermark).
    assert len(idle) <= 4, [(s.service, s.kind) for s in idle]


async def test_a_controller_failover_is_one_trace(traced):
    cluster, jaeger, env = traced
    async with AdminClient(cluster.admin_address) as admin:

        async def in_office():
            return (await admin.describe_cluster()).active_controller.controller_id

        active = cluster.controllers[await until(in_office, timeout=30, what="a controller")]
    before = {t.trace_id for t in traces(jaeger, CONTROLLER, "controller.elected")}
    standby = next(p for p in cluster.controllers.values() if p is not active)
    active.kill()

    async def failover_trace():
        for trace in traces(jaeger, CONTROLLER, "controller.elected"):
            if trace.trace_id in before:
                continue
            served = [s for s in trace.spans if s.name == UPDATE_METADATA and s.kind == "server"]
            failover = [s for s in trace.spans if s.name == "controller.failover"]
            if len(served) >= 2 and failover and not trace.orphans():
                return trace
        return None

    trace = await until(failover_trace, timeout=60, what="the failover trace in Jaeger")
    assert standby.alive()
    (won,) = trace.roots()
    assert won.name == "controller.elected"
    names = {s.name for s in trace.spans}
    assert {"controller.event", "controller.epoch_bump", "controller.failover"} <= names
    bump = next(s for s in trace.spans if s.name == "controller.epoch_bump")
    event = trace.by_id[bump.parent_id]
    assert event.name == "controller.event" and event.parent_id == won.span_id
    updates = [s for s in trace.spans if s.name == UPDATE_METADATA and s.kind == "server"]
    assert {s.service for s in updates} == {BROKER} and len(updates) >= 2
    active.start()
    active.wait_ready()
