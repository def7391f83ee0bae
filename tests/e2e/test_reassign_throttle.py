"""A throttled reassignment moves at the rate ``--throttle`` sets (KIP-73), and ``--verify``
takes the throttle away.

One partition on broker 1 gets a replica on broker 2 under a 1 MB/s throttle. Broker 2's copy is
watched on disk; its sustained rate — from one second after its first bytes until it holds
everything — must be within ±20% of the limit. (A quota starts with one window's allowance, as
Kafka's does, which arrives at once and belongs to a window partly before the first sighting:
the first second is left out.)
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from cli_e2e_harness import cli, running_cluster

from leasehold.admin.v1 import admin_pb2
from leasehold.client import Producer
from leasehold.client.admin import SyncAdminClient
from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e

LIMIT = 1_000_000  # bytes/s
RECORDS = 8_000
VALUE = b"v" * 1000


def log_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log")) if directory.is_dir() else 0


async def fill(admin: str) -> None:
    async with Producer(admin=admin, acks="all") as producer:
        futures = [await producer.send("slow", VALUE, partition=0) for _ in range(RECORDS)]
        await producer.flush()
        for future in futures:
            await future


def test_throttled_reassignment_moves_at_the_limit(tmp_path):
    with running_cluster(ClusterSpec(controllers=1, brokers=3, session_ttl=5)) as cluster:
        made = cli(cluster, "topics", "create", "slow", "--replica-assignment", "1",
                   "--timeout", "40")  # fmt: skip
        assert made.exit_code == 0, made.output
        asyncio.run(fill(cluster.admin_address))
        source = cluster.workdir / "broker-1" / "slow-0"
        target = cluster.workdir / "broker-2" / "slow-0"
        total = log_bytes(source)
        assert total > 5 * LIMIT

        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps(
            {"version": 1, "partitions": [{"topic": "slow", "partition": 0, "replicas": [1, 2]}]}
        ))  # fmt: skip
        executed = cli(cluster, "reassign", "--execute", "--reassignment-json-file", str(plan),
                       "--throttle", str(LIMIT))  # fmt: skip
        assert executed.exit_code == 0, executed.output

        seen: list[tuple[float, int]] = []  # (when, bytes broker 2 holds), once it holds some
        deadline = time.monotonic() + 60
        while (held := log_bytes(target)) < total:
            assert time.monotonic() < deadline, f"copied {held} of {total} bytes in 60 s"
            if held > 0:
                seen.append((time.monotonic(), held))
            time.sleep(0.02)
        seen.append((time.monotonic(), total))
        start = next(s for s in seen if s[0] >= seen[0][0] + 1.0)
        rate = (total - start[1]) / (seen[-1][0] - start[0])
        print(f"throttled copy: {rate:,.0f} B/s over {seen[-1][0] - start[0]:.1f} s")
        assert 0.8 * LIMIT <= rate <= 1.2 * LIMIT, (
            f"{rate:,.0f} B/s under a {LIMIT:,} B/s throttle ({total:,} bytes; "
            f"{seen[0][1]:,} at first sighting)"
        )

        verified = cli(cluster, "reassign", "--verify", "--reassignment-json-file", str(plan),
                       "--timeout", "60")  # fmt: skip
        assert verified.exit_code == 0, verified.output
        assert "Clearing broker-level throttles on brokers" in verified.stdout
        with SyncAdminClient(cluster.admin_address, timeout=10) as admin:
            results = admin.describe_configs(
                [(admin_pb2.RESOURCE_TYPE_BROKER, str(b)) for b in (1, 2, 3)]
            )
        rates = {
            (r.resource.name, e.name): e.value
            for r in results
            for e in r.entries
            if e.name.endswith("replication.throttled.rate") and not e.is_default
        }
        assert rates == {}
