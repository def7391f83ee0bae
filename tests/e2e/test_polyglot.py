"""The Node.js client (tests/polyglot/) against a whole cluster of real processes.

It proves the APIs are usable from another gRPC language using nothing but ``protos/``: the Node
test creates a topic through admin, produces through the partition leader, fetches the records
back, checks health and lists services through reflection.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_e2e_harness import running_cluster

from leasehold.testing.cluster import ClusterSpec

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
POLYGLOT = ROOT / "tests" / "polyglot"


def test_node_client_creates_produces_and_fetches():
    node = shutil.which("node")
    assert node, "node is required for the polyglot test (make test installs the npm packages)"
    assert (POLYGLOT / "node_modules" / "@grpc" / "grpc-js").exists(), "run `make node` first"
    with running_cluster(ClusterSpec(controllers=2, brokers=3, session_ttl=3)) as cluster:
        env = dict(os.environ, LEASEHOLD_ADMIN=cluster.admin_address)
        result = subprocess.run(
            [node, "--test", "tests/polyglot/"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        logs = "\n".join(f"--- {p.name}\n{cluster.logs(p.name, 15)}" for p in cluster.processes())
        assert result.returncode == 0, result.stdout + result.stderr + logs
        assert "# pass 2" in result.stdout and "# fail 0" in result.stdout
