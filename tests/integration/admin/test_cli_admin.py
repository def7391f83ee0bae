"""The ``leasehold`` CLI against a real admin service process and real etcd (no controller).

What the controller would do (bring partitions online, finish intents) the test does itself in
etcd, so every admin command, its output formats and its exit codes are checked here; the same
commands run against a whole cluster in tests/e2e/test_cli_*.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import uuid

import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import op_delete, op_put
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.ports import free_port, wait_for_port


def etcd_call(endpoint: str, fn):
    async def run():
        async with EtcdClient([endpoint]) as client:
            return await fn(client)

    return asyncio.run(run())


@pytest.fixture(scope="module")
def service(etcd_server, tmp_path_factory):
    ks = Keyspace(f"cli-{uuid.uuid4().hex[:8]}")
    port = free_port()
    log = open(tmp_path_factory.mktemp("admin") / "admin.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.admin", "--etcd", etcd_server.endpoint,
         "--cluster-id", ks.cluster_id, "--port", str(port), "--grace-seconds", "0.2",
         "--insecure"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert wait_for_port("127.0.0.1", port, 20), "admin service did not start"

        async def brokers(client):
            for b in (1, 2, 3, 4):
                reg = metadata_pb2.BrokerRegistration(broker_id=b, host="127.0.0.1", port=9100 + b)
                await client.put(ks.broker(b), reg.SerializeToString())

        etcd_call(etcd_server.endpoint, brokers)
        yield f"127.0.0.1:{port}", ks, etcd_server.endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()


def run(service, *args, input=None):
    address = service[0]
    return CliRunner().invoke(build_cli(), ["--admin", address, *args], input=input)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_topic_lifecycle_and_output_formats(service):
    name = unique("demo")
    made = run(service, "topics", "create", name, "--partitions", "4", "--replication-factor",
               "2", "--config", "retention.ms=60000", "--no-wait")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert f"Created topic {name}" in made.stdout and "4 partitions" in made.stdout
    described = run(service, "-o", "json", "topics", "describe", name)
    assert described.exit_code == 0
    (doc,) = json.loads(described.stdout)
    assert (doc["name"], doc["partition_count"], doc["replication_factor"]) == (name, 4, 2)
    assert doc["configs"] == {"retention.ms": "60000"}
    assert all(p["leader"] == -1 for p in doc["partitions"])
    table = run(service, "topics", "describe", name)
    assert f"Topic: {name}" in table.stdout and "PartitionCount: 4" in table.stdout
    assert name in run(service, "topics", "list").stdout
    grown = run(service, "topics", "alter", name, "--partitions", "6", "--no-wait")
    assert grown.exit_code == 0 and "Added 2 partition(s)" in grown.stdout
    altered = run(service, "topics", "configs", "alter", name, "--set", "min.insync.replicas=2",
                  "--delete", "retention.ms")  # fmt: skip
    assert altered.exit_code == 0
    configs = json.loads(run(service, "-o", "json", "topics", "configs", "describe", name).stdout)
    shown = {e["name"]: (e["value"], e["source"]) for e in configs}
    assert shown["min.insync.replicas"] == ("2", "topic")
    assert shown["retention.ms"] == ("604800000", "default")
    deleted = run(service, "topics", "delete", name, "--no-wait")
    assert deleted.exit_code == 0 and "Marked for deletion" in deleted.stdout
    again = run(service, "topics", "delete", name, "--no-wait")
    assert again.exit_code == 1 and "queued for deletion" in again.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["topics", "create", "bad/name", "--partitions", "1"], 2, "Topic name is invalid"),
        (["topics", "create", "x", "--replication-factor", "5"], 2, "larger than available"),
        (["topics", "create", "x", "--config", "nokey"], 2, "expected key=value"),
        (["topics", "create", "x", "--replica-assignment", "1:a"], 2, "expected broker ids"),
        (["topics", "describe", "missing-topic"], 3, "does not exist"),
        (["topics", "alter", "missing-topic", "--partitions", "3"], 3, "does not exist"),
        (["topics", "configs", "alter", "missing-topic", "--set", "a=b"], 3, "does not exist"),
        (["cluster", "configs", "alter", "--set", "num.partitions=0"], 2, "at least 1"),
        (["cluster", "configs", "describe", "--broker", "99"], 3, "not registered"),
        (["elect", "--preferred", "--topic", "missing-topic"], 3, "does not exist"),
        (["elect", "--topic", "x"], 2, "choose --preferred"),
        (["reassign"], 2, "exactly one action"),
        (["reassign", "--list", "--verify"], 2, "exactly one action"),
        (["reassign", "--generate", "--broker-list", "1"], 2, "--topics-to-move-json-file"),
        (["reassign", "--execute", "--reassignment-json-file", "/no/such/file"], 2, "Cannot read"),
        (["consume", "t", "--offset", "5"], 2, "--offset needs --partition"),
    ],
)
def test_errors_map_to_exit_codes(service, args, code, message):
    result = run(service, *args)
    assert result.exit_code == code, result.output
    assert message in result.output


def test_generate_names_an_unknown_broker(service, tmp_path):
    name = unique("gen")
    assert run(service, "topics", "create", name, "--replica-assignment", "1:2",
               "--no-wait").exit_code == 0  # fmt: skip
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": name}]}))
    generated = run(service, "reassign", "--generate", "--topics-to-move-json-file",
                    str(topics_file), "--broker-list", "1,2,99")  # fmt: skip
    assert generated.exit_code == 2, generated.output
    assert "Unknown broker id(s) in the broker list: 99" in generated.stderr
    assert generated.stdout == ""


def test_create_that_times_out_does_not_say_created(service):
    # No controller here: the partitions never get a leader.
    name = unique("slow")
    made = run(service, "topics", "create", name, "--partitions", "1", "--timeout", "0.3")
    assert made.exit_code == 4, made.output
    assert "Created topic" not in made.output
    assert f"Topic {name}" in made.stderr and "had no leader after 0.3s" in made.stderr
    as_json = run(service, "topics", "create", unique("slow"), "--timeout", "0.3", "-o", "json")
    assert as_json.exit_code == 4
    assert json.loads(as_json.stdout)["partitions_without_leader"] == 1


def test_global_options_after_the_subcommand(service):
    shown = CliRunner().invoke(
        build_cli(), ["cluster", "describe", "-o", "json", "--admin", service[0]]
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["cluster_id"] == service[1].cluster_id


def test_existing_topic_fails_with_code_1_and_unreachable_admin_with_4(service):
    name = unique("dup")
    assert run(service, "topics", "create", name, "--no-wait").exit_code == 0
    dup = run(service, "topics", "create", name, "--no-wait")
    assert dup.exit_code == 1 and "already exists" in dup.stderr
    down = CliRunner().invoke(
        build_cli(), ["--admin", f"127.0.0.1:{free_port()}", "topics", "list"]
    )
    assert down.exit_code == 4 and "admin at 127.0.0.1" in down.stderr


def test_create_waits_for_leaders_and_times_out_without_a_controller(service):
    name = unique("slow")
    result = run(service, "topics", "create", name, "--partitions", "2", "--timeout", "0.5")
    assert result.exit_code == 4
    assert "2 partition(s)" in result.stderr and "no leader" in result.stderr


def test_cluster_describe(service):
    result = run(service, "-o", "json", "cluster", "describe")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3, 4]
    assert doc["active_controller"] is None and doc["cluster_id"] == service[1].cluster_id
    assert "Active controller: none" in run(service, "cluster", "describe").stdout


def test_reassign_generate_execute_list_verify(service, tmp_path):
    address, ks, endpoint = service
    name = unique("move")
    assert run(service, "topics", "create", name, "--replica-assignment", "1:2,2:3",
               "--no-wait").exit_code == 0  # fmt: skip
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": name}]}))
    generated = run(service, "reassign", "--generate", "--topics-to-move-json-file",
                    str(topics_file), "--broker-list", "3,4")  # fmt: skip
    assert generated.exit_code == 0, generated.output
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"][0]["replicas"] == [1, 2]
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert {b for p in proposed["partitions"] for b in p["replicas"]} == {3, 4}
    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])

    executed = run(service, "reassign", "--execute", "--reassignment-json-file", str(plan),
                   "--throttle", "5000")  # fmt: skip
    assert executed.exit_code == 0, executed.output
    assert "Save this to use as the --reassignment-json-file option during rollback" in (
        executed.stdout
    )
    assert f"Successfully started partition reassignments for {name}-0,{name}-1" in executed.stdout
    assert "throttle limit was set to 5000 B/s" in executed.stdout
    again = run(service, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert again.exit_code == 1 and "existing partition assignment" in again.stderr
    listed = run(service, "reassign", "--list")
    assert "Current partition reassignments:" in listed.stdout and f"{name}-0" in listed.stdout

    pending = run(service, "reassign", "--verify", "--reassignment-json-file", str(plan),
                  "--no-wait")  # fmt: skip
    assert pending.exit_code == 0
    assert f"Reassignment of partition {name}-0 is still in progress." in pending.stdout
    timed_out = run(service, "reassign", "--verify", "--reassignment-json-file", str(plan),
                    "--timeout", "0.5")  # fmt: skip
    assert timed_out.exit_code == 4

    targets = {p["partition"]: p["replicas"] for p in proposed["partitions"]}

    async def complete(client):  # the controller's final step: AR = RAR, intents removed
        kv = await client.get(ks.topic(name))
        assignment = metadata_pb2.TopicAssignment.FromString(kv.value)
        for p, replicas in targets.items():
            assignment.partitions[p].replicas[:] = replicas
        ops = [op_put(ks.topic(name), assignment.SerializeToString())]
        ops += [op_delete(ks.reassignment(name, p)) for p in targets]
        await client.txn([], ops)

    etcd_call(endpoint, complete)
    done = run(service, "reassign", "--verify", "--reassignment-json-file", str(plan))
    assert done.exit_code == 0, done.output
    assert f"Reassignment of partition {name}-1 is completed." in done.stdout
    assert "Clearing topic-level throttles on topic(s) " + name in done.stdout

    async def throttles(client):
        kv = await client.get(ks.topic_config(name))
        rates = [await client.get(ks.broker_config(b)) for b in (1, 2, 3, 4)]
        return kv, rates

    topic_config, rates = etcd_call(endpoint, throttles)
    assert topic_config is None and rates == [None] * 4
    cancelled = run(service, "reassign", "--cancel", "--reassignment-json-file", str(plan))
    assert "None of the specified partition reassignments are active." in cancelled.stdout


def test_reassign_file_errors_are_usage_errors(service, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}')
    result = run(service, "reassign", "--execute", "--reassignment-json-file", str(bad))
    assert result.exit_code == 2
    assert "Partition replica lists may not contain duplicate entries: a-0" in result.stderr
    name = unique("plan")
    assert run(service, "topics", "create", name, "--no-wait").exit_code == 0
    bad.write_text(json.dumps({"partitions": [{"topic": name, "partition": 0, "replicas": [9]}]}))
    unknown = run(service, "reassign", "--execute", "--reassignment-json-file", str(bad))
    assert unknown.exit_code == 2 and "Unknown broker id 9" in unknown.stderr
    assert unknown.stdout == ""  # refused before the rollback text is printed
    bad.write_text("{not json")
    assert run(service, "reassign", "--verify", "--reassignment-json-file", str(bad)).exit_code == 2


def test_elect_waits_for_the_controllers_outcome(service, tmp_path):
    address, ks, endpoint = service
    name = unique("elect")
    assert run(service, "topics", "create", name, "--partitions", "2", "--no-wait").exit_code == 0
    stop = threading.Event()

    async def controller_stand_in(client):
        while not stop.is_set():
            kvs, _ = await client.range_prefix(ks.elections_prefix)
            for kv in kvs:
                intent = metadata_pb2.ElectionIntent.FromString(kv.value)
                result = metadata_pb2.AdminResult(request_id=intent.request_id)
                for tp in intent.partitions:
                    code = 84 if tp.partition == 1 else 0  # ELECTION_NOT_NEEDED for partition 1
                    result.results.add(topic=tp.topic, partition=tp.partition, error_code=code)
                await client.txn(
                    [], [op_put(ks.result(intent.request_id), result.SerializeToString()),
                         op_delete(kv.key)]
                )  # fmt: skip
            await asyncio.sleep(0.05)

    helper = threading.Thread(target=etcd_call, args=(endpoint, controller_stand_in))
    helper.start()
    try:
        elected = run(service, "elect", "--preferred", "--topic", name)
        election_file = tmp_path / "election.json"
        election_file.write_text(json.dumps({"partitions": [{"topic": name, "partition": 0}]}))
        from_file = run(service, "-o", "json", "elect", "--election-type", "preferred",
                        "--path-to-json-file", str(election_file))  # fmt: skip
    finally:
        stop.set()
        helper.join(timeout=10)
    assert elected.exit_code == 0, elected.output
    assert f"Successfully completed leader election (PREFERRED) for partitions {name}-0" in (
        elected.stdout
    )
    assert f"Valid replica already elected for partitions {name}-1" in elected.stdout
    doc = json.loads(from_file.stdout)
    assert doc["completed"] and [r["partition"] for r in doc["results"]] == [0]
