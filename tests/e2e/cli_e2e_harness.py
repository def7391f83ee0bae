"""Shared by the CLI and SDK end-to-end tests: a LocalCluster that stops quickly, and the CLI.

Brokers are stopped before the controllers: a broker's SIGTERM runs a controlled shutdown through
the controller, which would otherwise retry against a stopped controller until killed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from click.testing import CliRunner, Result

from leasehold.cli.main import build_cli
from leasehold.client.admin import SyncAdminClient
from leasehold.errors import LeaseholdError
from leasehold.testing.cluster import ClusterSpec, LocalCluster


def wait_ready(cluster: LocalCluster, timeout: float = 30.0) -> None:
    """Until every broker has registered and a controller has bumped its epoch."""
    deadline = time.monotonic() + timeout
    with SyncAdminClient(cluster.admin_address, timeout=5) as admin:
        while True:
            try:
                d = admin.describe_cluster()
                if len(d.brokers) == cluster.spec.brokers and d.active_controller.epoch > 0:
                    return
            except LeaseholdError:
                pass  # admin still starting
            if time.monotonic() > deadline:
                raise TimeoutError(f"cluster not ready after {timeout}s")
            time.sleep(0.1)


@contextlib.contextmanager
def running_cluster(spec: ClusterSpec) -> Iterator[LocalCluster]:
    """A started cluster whose brokers have all registered and whose controller is active."""
    cluster = LocalCluster(spec)
    try:
        cluster.start()
        wait_ready(cluster)
        yield cluster
    finally:
        for broker in cluster.brokers.values():
            broker.terminate(timeout=15)
        cluster.stop()
        cluster.remove_workdir()


def cli(cluster: LocalCluster, *args: str, input: str | None = None) -> Result:
    """Run ``leasehold --admin <cluster's admin> ARGS`` in-process."""
    return CliRunner().invoke(build_cli(), ["--admin", cluster.admin_address, *args], input=input)
