"""The CLI end to end on a real cluster: create, describe, produce, consume, delete, and the
validation errors with their exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_e2e_harness import cli, running_cluster

from leasehold.client.partitioner import key_partition
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster():
    with running_cluster(ClusterSpec(controllers=2, brokers=3, session_ttl=3)) as c:
        yield c


def cli_process(cluster, *args, input=None):
    env = dict(os.environ, LEASEHOLD_ADMIN=cluster.admin_address)
    return subprocess.run(
        [str(Path(sys.executable).parent / "leasehold"), *args],
        env=env, input=input, capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def test_create_describe_produce_consume_delete(cluster):
    ready = cli(cluster, "-o", "json", "cluster", "describe")
    assert ready.exit_code == 0, ready.output
    made = cli(cluster, "topics", "create", "events", "--partitions", "3", "--replication-factor",
               "3", "--config", "min.insync.replicas=2", "--timeout", "40")  # fmt: skip
    assert made.exit_code == 0, made.output
    (doc,) = json.loads(cli(cluster, "-o", "json", "topics", "describe", "events").stdout)
    assert doc["partition_count"] == 3 and doc["configs"] == {"min.insync.replicas": "2"}
    assert all(p["leader"] == p["replicas"][0] and len(p["isr"]) == 3 for p in doc["partitions"])

    # Lines from stdin through the console script; keyed records land by Kafka's murmur2.
    lines = "".join(f"user{i}:event-{i}\n" for i in range(12))
    produced = cli_process(cluster, "-o", "json", "produce", "events", "--key-separator", ":",
                           "--acks", "all", input=lines)  # fmt: skip
    assert produced.returncode == 0, produced.stdout + produced.stderr
    acks = [json.loads(line) for line in produced.stdout.splitlines()]
    assert len(acks) == 12
    for i, ack in enumerate(acks):
        assert ack["partition"] == key_partition(f"user{i}".encode(), 3)
    one = cli(cluster, "produce", "events", "--value", "solo", "--partition", "1", "--acks", "1")
    assert one.exit_code == 0 and "Produced 1 record(s)" in one.stderr

    consumed = cli(cluster, "-o", "json", "consume", "events", "--from-beginning",
                   "--max-messages", "13", "--timeout", "20")  # fmt: skip
    assert consumed.exit_code == 0, consumed.output
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(r["value"] for r in records) == sorted(
        [f"event-{i}" for i in range(12)] + ["solo"]
    )
    for p in range(3):
        offsets = [r["offset"] for r in records if r["partition"] == p]
        assert offsets == list(range(len(offsets)))  # in order, none skipped, none twice

    partition1 = [r for r in records if r["partition"] == 1]
    from_offset = cli(cluster, "consume", "events", "--partition", "1", "--offset",
                      str(len(partition1) - 1), "--max-messages", "1", "--timeout", "10",
                      "--print-offset")  # fmt: skip
    assert from_offset.exit_code == 0, from_offset.output
    assert from_offset.stdout.strip() == f"1:{len(partition1) - 1}\tsolo"
    nothing = cli(cluster, "consume", "events", "--max-messages", "1", "--timeout", "1")
    assert nothing.exit_code == 4  # from the latest offset, nothing new arrives

    deleted = cli(cluster, "topics", "delete", "events", "--timeout", "40")
    assert deleted.exit_code == 0, deleted.output
    gone = cli(cluster, "topics", "describe", "events")
    assert gone.exit_code == 3


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["topics", "create", "bad name"], 2, "Topic name is invalid"),
        (["topics", "create", "big", "--replication-factor", "4"], 2,
         "Replication factor: 4 larger than available brokers: 3."),
        (["topics", "create", "zero", "--partitions", "0"], 2, "must be larger than 0"),
        (["topics", "create", "cfg", "--config", "retention.ms=x"], 2, "Invalid value x"),
        (["topics", "describe", "absent"], 3, "does not exist"),
        (["topics", "delete", "absent"], 3, "does not exist"),
        (["produce", "absent", "--value", "x"], 3, "not known"),
        (["consume", "absent", "--timeout", "1"], 3, "not known"),
        (["elect", "--preferred", "--topic", "absent", "--partition", "0"], 3, "does not exist"),
    ],
)  # fmt: skip
def test_validation_errors_exit_codes(cluster, args, code, message):
    result = cli(cluster, *args)
    assert result.exit_code == code, result.output
    assert message in result.output


def test_existing_topic_exits_1(cluster):
    assert cli(cluster, "topics", "create", "twice", "--timeout", "40").exit_code == 0
    again = cli(cluster, "topics", "create", "twice")
    assert again.exit_code == 1 and "Topic 'twice' already exists." in again.stderr
