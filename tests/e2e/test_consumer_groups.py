"""Consumer groups on a real cluster: the controller creates ``__consumer_offsets``, members of
one group share a topic's partitions and rebalance on join, leave and crash (never a partition
owned by two members at once), committed offsets survive and a restarted member resumes exactly
at them, and the group carries on when its coordinator's broker is killed.

The brokers run with a short session timeout and heartbeat interval so a crash is noticed in
seconds; everything else is at defaults.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import urllib.request
from collections.abc import Callable, Sequence

import pytest
from cli_e2e_harness import cli, running_cluster
from prometheus_client.parser import text_string_to_metric_families

from leasehold.cli.groups import DESCRIBE_COLUMNS
from leasehold.client import AdminClient, GroupClient, GroupConsumer, Producer
from leasehold.client.metadata import ClusterMetadata
from leasehold.errors import LeaseholdError
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e

GROUP_ENV = {
    "LEASEHOLD_OFFSETS_TOPIC_NUM_PARTITIONS": "3",
    "LEASEHOLD_GROUP_CONSUMER_SESSION_TIMEOUT_MS": "3000",
    "LEASEHOLD_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "300",
}
SPEC = ClusterSpec(controllers=1, brokers=3, session_ttl=3, extra_env=GROUP_ENV)
TOPIC = "orders"
PARTITIONS = 6


def member(cluster, name: str, **kw) -> GroupConsumer:
    kw.setdefault("enable_auto_commit", False)
    return GroupConsumer("g", [TOPIC], admin=cluster.admin_address, client_id=name,
                         max_wait_ms=100, **kw)  # fmt: skip


async def produce(cluster, count: int, tag: str) -> None:
    producer = Producer(admin=cluster.admin_address, acks="all", retry_backoff_ms=200)
    try:
        futures = [
            await producer.send(TOPIC, f"{tag}{i}".encode(), partition=i % PARTITIONS)
            for i in range(count)
        ]
        await producer.flush()
        for f in futures:
            await f
    finally:
        await producer.close()


async def until(members: Sequence[GroupConsumer], done: Callable[[], bool], timeout: float):
    """Poll every member until ``done()``; no partition is ever owned by two of them."""
    seen: dict[str, list[bytes]] = {m.client_id: [] for m in members}
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, [sorted(m.assignment()) for m in members]
        for m in members:
            seen[m.client_id] += [r.value for r in await m.poll(timeout_ms=50)]
        owned = [tp for m in members for tp in m.assignment()]
        assert len(owned) == len(set(owned)), "a partition owned by two members"
    return seen


def split_evenly(members: Sequence[GroupConsumer]) -> Callable[[], bool]:
    def done() -> bool:
        sizes = sorted(len(m.assignment()) for m in members)
        return sum(sizes) == PARTITIONS and sizes[-1] - sizes[0] <= 1

    return done


def test_members_share_rebalance_and_resume_from_commits():
    with running_cluster(SPEC) as cluster:

        async def scenario():
            admin = AdminClient(cluster.admin_address)
            created = await admin.create_topic(TOPIC, PARTITIONS, 3, timeout_ms=20_000)
            assert created.error_code == 0, created.error_message
            await produce(cluster, 60, "a")

            a = member(cluster, "a")
            await a.start()
            read = await until([a], lambda: len(a.assignment()) == PARTITIONS, 30)
            got = read["a"]
            while len(got) < 60:
                got += [r.value for r in await a.poll(500)]
            assert sorted(got) == sorted(f"a{i}".encode() for i in range(60))
            await a.commit()

            b = member(cluster, "b")
            await b.start()
            await until([a, b], split_evenly([a, b]), 30)

            c = member(cluster, "c")
            await c.start()
            await until([a, b, c], lambda: all(len(m.assignment()) == 2 for m in (a, b, c)), 30)
            await c.close(leave=False)  # a crash: no leave, no commit
            started = time.monotonic()
            await until([a, b], split_evenly([a, b]), 30)
            assert time.monotonic() - started >= 2.0  # waited for the session to end

            await b.close()  # a clean leave
            await until([a], lambda: len(a.assignment()) == PARTITIONS, 30)

            committed = await a.committed()
            assert {tp: o.offset for tp, o in committed.items()} == {
                (TOPIC, p): 10 for p in range(PARTITIONS)
            }
            described = await a.groups.describe("g")
            assert [m.client_id for m in described.members] == ["a"]
            assert described.group_state == "STABLE"
            await a.close()

            # a restarted member starts exactly at the commits: only the new records
            await produce(cluster, 12, "b")
            d = member(cluster, "d", enable_auto_commit=True, auto_commit_interval_ms=100)
            await d.start()
            await until([d], lambda: len(d.assignment()) == PARTITIONS, 30)
            got = []
            deadline = time.monotonic() + 20
            while len(got) < 12 and time.monotonic() < deadline:
                got += [r.value for r in await d.poll(500)]
            assert sorted(got) == sorted(f"b{i}".encode() for i in range(12))
            await d.close()  # auto-commit on close
            final = await GroupClient(ClusterMetadata(cluster.admin_address)).committed("g")
            assert {o.offset for o in final.values()} == {12}
            await admin.close()

        asyncio.run(scenario())


def test_the_group_survives_its_coordinator():
    with running_cluster(SPEC) as cluster:

        async def scenario():
            admin = AdminClient(cluster.admin_address)
            created = await admin.create_topic(TOPIC, PARTITIONS, 3, timeout_ms=20_000)
            assert created.error_code == 0, created.error_message
            await produce(cluster, 30, "a")
            a, b = member(cluster, "a"), member(cluster, "b")
            await a.start()
            await b.start()
            got = await until([a, b], split_evenly([a, b]), 30)
            total = got["a"] + got["b"]
            while len(total) < 30:
                total += [r.value for m in (a, b) for r in await m.poll(200)]
            await a.commit()
            await b.commit()
            epochs = (a.member_epoch, b.member_epoch)

            coordinator = (await a.groups.describe("g")).coordinator_id
            cluster.brokers[coordinator].kill()
            started = time.monotonic()
            # the new coordinator has the group and its offsets from the log
            deadline = time.monotonic() + 60
            while True:
                described = await a.groups.describe("g")
                if described.error_code == 0 and described.coordinator_id != coordinator:
                    break
                assert time.monotonic() < deadline, described
                await asyncio.sleep(0.2)
            moved_s = time.monotonic() - started
            assert sorted(m.client_id for m in described.members) == ["a", "b"]
            committed = await a.committed()
            assert {o.offset for o in committed.values()} == {5}
            assert all(o.leader_epoch >= 0 for o in committed.values())
            # both members carry on at their epochs (not fenced) and can commit again
            await produce(cluster, 6, "b")
            fresh: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(fresh) < 6:
                assert time.monotonic() < deadline, fresh
                fresh += [r.value for m in (a, b) for r in await m.poll(200)]
            assert sorted(fresh) == sorted(f"b{i}".encode() for i in range(6))
            assert (a.member_epoch, b.member_epoch) == epochs
            await a.commit()
            await b.commit()
            print(f"coordinator moved in {moved_s:.1f} s")
            await a.close()
            await b.close()
            await admin.close()

        asyncio.run(scenario())


def lag_samples(proc) -> dict[tuple[str, str], float]:
    """``{(metric, partition): value}`` of group ``g`` from a broker's /metrics."""
    with urllib.request.urlopen(proc.metrics_url, timeout=5) as resp:
        text = resp.read().decode()
    return {
        (s.name, s.labels.get("partition", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("kafka_consumergroup_") and s.labels.get("consumergroup") == "g"
    }


def test_consumer_groups_cli():
    with running_cluster(dataclasses.replace(SPEC, metrics=True)) as cluster:

        def run(*args: str):
            return cli(cluster, "consumer-groups", *args)

        async def scenario():
            admin = AdminClient(cluster.admin_address)
            created = await admin.create_topic(TOPIC, 2, 3, timeout_ms=20_000)
            assert created.error_code == 0, created.error_message
            producer = Producer(admin=cluster.admin_address, acks="all")
            for i in range(10):
                await producer.send(TOPIC, f"v{i}".encode(), partition=i % 2)
            await producer.flush()
            await producer.close()
            a = member(cluster, "cli-member")
            await a.start()
            await until([a], lambda: len(a.assignment()) == 2, 30)
            await a.commit({(TOPIC, 0): 2, (TOPIC, 1): 5})

            described = await asyncio.to_thread(run, "--describe", "--group", "g")
            assert described.exit_code == 0, described.output
            header, *rows = described.output.splitlines()
            assert header.split() == list(DESCRIBE_COLUMNS)
            by_partition = {r.split()[2]: r.split() for r in rows}
            assert by_partition["0"][3:6] == ["2", "5", "3"]  # CURRENT, LOG-END, LAG
            assert by_partition["1"][3:6] == ["5", "5", "0"]
            assert by_partition["0"][6] == a.member_id and by_partition["0"][8] == "cli-member"
            members = await asyncio.to_thread(run, "--describe", "--members", "--group", "g")
            header, row = members.output.splitlines()
            assert header.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
            assert row.split() == ["g", a.member_id, "/127.0.0.1", "cli-member", "2"]
            state = await asyncio.to_thread(
                run, "--describe", "--state", "--group", "g", "-o", "json"
            )
            (shown,) = json.loads(state.stdout)
            assert (shown["ASSIGNMENT-STRATEGY"], shown["STATE"], shown["#MEMBERS"]) == (
                "uniform",
                "Stable",
                1,
            )
            cid = (await a.groups.describe("g")).coordinator_id
            assert shown["COORDINATOR (ID)"] == f"{cluster.brokers[cid].address} ({cid})"

            # the coordinator's lag metrics, with kafka_exporter's names
            coordinator = cluster.brokers[(await a.groups.describe("g")).coordinator_id]
            deadline = time.monotonic() + 10
            while (found := await asyncio.to_thread(lag_samples, coordinator)).get(
                ("kafka_consumergroup_lag", "0")
            ) != 3:
                assert time.monotonic() < deadline, found
                await asyncio.sleep(0.3)
            assert found[("kafka_consumergroup_current_offset", "0")] == 2
            assert found[("kafka_consumergroup_lag", "1")] == 0
            assert found[("kafka_consumergroup_lag_sum", "")] == 3
            assert found[("kafka_consumergroup_members", "")] == 1

            busy = await asyncio.to_thread(run, "--reset-offsets", "--group", "g", "--all-topics",
                                           "--to-earliest", "--execute")  # fmt: skip
            assert busy.exit_code != 0 and "inactive" in busy.output
            await a.close()  # leaves

            listed = await asyncio.to_thread(run, "--list")
            assert listed.output.split() == ["g"]

            # __consumer_offsets is the coordinators' alone
            internal = "__consumer_offsets"
            for args in (("topics", "delete", internal),
                         ("topics", "create", internal, "--partitions", "1"),
                         ("topics", "alter", internal, "--partitions", "99")):  # fmt: skip
                refused = await asyncio.to_thread(cli, cluster, *args)
                assert refused.exit_code == 2 and "internal topic" in refused.output, args
            producer = Producer(admin=cluster.admin_address, acks="all")
            with pytest.raises(LeaseholdError, match="internal topic"):
                await producer.send_and_wait("__consumer_offsets", b"x", partition=0)
            await producer.close()

            def reset(*how: str) -> dict[int, int]:
                out = run("--reset-offsets", "--group", "g", "--topic", TOPIC, *how, "-o", "json")
                assert out.exit_code == 0, out.output
                return {r["PARTITION"]: r["NEW-OFFSET"] for r in json.loads(out.stdout)}

            groups = GroupClient(ClusterMetadata(cluster.admin_address))

            async def committed() -> dict[int, int]:
                return {p: o.offset for (_, p), o in (await groups.committed("g")).items()}

            assert await asyncio.to_thread(reset, "--to-earliest") == {0: 0, 1: 0}
            assert await committed() == {0: 2, 1: 5}  # a dry run changes nothing
            assert await asyncio.to_thread(reset, "--to-earliest", "--execute") == {0: 0, 1: 0}
            assert await committed() == {0: 0, 1: 0}
            assert await asyncio.to_thread(reset, "--shift-by", "3", "--execute") == {0: 3, 1: 3}
            assert await asyncio.to_thread(reset, "--shift-by", "-9", "--execute") == {0: 0, 1: 0}
            assert await asyncio.to_thread(reset, "--to-latest", "--execute") == {0: 5, 1: 5}
            assert await asyncio.to_thread(reset, "--to-datetime", "2000-01-01T00:00:00.000",
                                           "--execute") == {0: 0, 1: 0}  # fmt: skip
            assert await committed() == {0: 0, 1: 0}

            deleted = await asyncio.to_thread(run, "--delete", "--group", "g")
            assert deleted.exit_code == 0, deleted.output
            assert "Deletion of requested consumer groups ('g') was successful." in deleted.output
            assert await committed() == {}
            gone = await asyncio.to_thread(run, "--describe", "--group", "g")
            assert gone.exit_code == 3 and "does not exist" in gone.output
            await groups.metadata.close()
            await admin.close()

        asyncio.run(scenario())
