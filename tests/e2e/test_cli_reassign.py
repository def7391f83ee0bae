"""The CLI's reassignment and election flows on a real cluster of four brokers:
generate -> execute (throttled) -> verify (waits, then clears throttles) -> elect."""

from __future__ import annotations

import json

import pytest
from cli_e2e_harness import cli, running_cluster

from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster():
    with running_cluster(ClusterSpec(controllers=2, brokers=4, session_ttl=3)) as c:
        yield c


def describe(cluster, name) -> dict:
    result = cli(cluster, "-o", "json", "topics", "describe", name)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)[0]


def test_generate_execute_verify_then_elect(cluster, tmp_path):
    made = cli(cluster, "topics", "create", "moves", "--replica-assignment", "1:2,2:3",
               "--timeout", "40")  # fmt: skip
    assert made.exit_code == 0, made.output
    lines = "".join(f"record-{i}\n" for i in range(20))
    assert cli(cluster, "produce", "moves", "--acks", "all", input=lines).exit_code == 0

    topics_file = tmp_path / "topics.json"
    topics_file.write_text('{"version":1,"topics":[{"topic":"moves"}]}')
    generated = cli(cluster, "-o", "json", "reassign", "--generate", "--topics-to-move-json-file",
                    str(topics_file), "--broker-list", "3,4")  # fmt: skip
    assert generated.exit_code == 0, generated.output
    doc = json.loads(generated.stdout)
    assert doc["current"]["partitions"] == [
        {"topic": "moves", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
        {"topic": "moves", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
    ]
    proposed = doc["proposed"]
    targets = {p["partition"]: p["replicas"] for p in proposed["partitions"]}
    assert all(sorted(r) == [3, 4] for r in targets.values())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))

    executed = cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(plan),
                   "--throttle", "50000000")  # fmt: skip
    assert executed.exit_code == 0, executed.output
    rollback = executed.stdout.split("\n\n")[1]
    assert json.loads(rollback)["partitions"][0]["replicas"] == [1, 2]

    verified = cli(cluster, "reassign", "--verify", "--reassignment-json-file", str(plan),
                   "--timeout", "60")  # fmt: skip
    assert verified.exit_code == 0, verified.output + cluster.logs("controller-1", 30)
    assert "Reassignment of partition moves-0 is completed." in verified.stdout
    assert "Clearing topic-level throttles on topic(s) moves" in verified.stdout

    topic = describe(cluster, "moves")
    for p in topic["partitions"]:
        assert p["replicas"] == targets[p["partition"]]
        assert p["leader"] in targets[p["partition"]]
        assert not p["adding_replicas"] and not p["removing_replicas"]
    configs = json.loads(
        cli(cluster, "-o", "json", "topics", "configs", "describe", "moves").stdout
    )
    throttled = {e["name"]: e["value"] for e in configs if "throttled" in e["name"]}
    assert throttled == {
        "follower.replication.throttled.replicas": "",
        "leader.replication.throttled.replicas": "",
    }

    consumed = cli(cluster, "-o", "json", "consume", "moves", "--from-beginning",
                   "--max-messages", "20", "--timeout", "20")  # fmt: skip
    assert consumed.exit_code == 0, consumed.output
    values = sorted(json.loads(line)["value"] for line in consumed.stdout.splitlines())
    assert values == sorted(f"record-{i}" for i in range(20))

    elected = cli(cluster, "-o", "json", "elect", "--preferred", "--all-topic-partitions")
    assert elected.exit_code == 0, elected.output
    result = json.loads(elected.stdout)
    assert result["completed"]
    assert {r["error"] for r in result["results"]} <= {"NONE", "ELECTION_NOT_NEEDED"}
    unclean = cli(cluster, "-o", "json", "elect", "--unclean", "--topic", "moves",
                  "--partition", "0")  # fmt: skip
    assert unclean.exit_code == 0, unclean.output
    assert [r["error"] for r in json.loads(unclean.stdout)["results"]] == ["ELECTION_NOT_NEEDED"]

    nothing = cli(cluster, "reassign", "--cancel", "--reassignment-json-file", str(plan))
    assert "None of the specified partition reassignments are active." in nothing.stdout
    no_change = cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(plan))
    assert no_change.exit_code == 2 and "no change" in no_change.stderr
