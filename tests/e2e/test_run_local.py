"""``make run``'s supervisor (leasehold.testing.run_local) as a person uses it: Ctrl-C stops the
whole cluster, and killing the supervisor outright leaves no service running (each got the
parent-death signal). It runs on free ports, beside any ``make run`` of the machine's user."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

# Generous bounds (a loaded machine): the Ctrl-C stop takes about 3 s; a supervisor waiting for
# a broker's controlled-shutdown timeout would take over 30.
STOP_WITHIN_S = 20.0
# When the supervisor is killed every process gets SIGTERM at once: a broker's controlled
# shutdown then finds no controller and retries until its timeout (30 s by default), as Kafka's.
ORPHANS_GONE_WITHIN_S = 45.0


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def start(workdir: Path) -> subprocess.Popen:
    free = ["--etcd-port", "0", "--admin-port", "0", "--controller-port", "0", "--broker-port", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "leasehold.testing.run_local", "--workdir", str(workdir),
         "--controllers", "1", "--brokers", "2", *free],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Try:"):
            return proc
    proc.wait(timeout=30)
    raise AssertionError("make run did not start:\n" + "".join(lines))


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if running(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if running(p)]


def kill_left(pids: list[int]) -> None:
    for pid in pids:
        if running(pid):
            os.killpg(pid, signal.SIGKILL)  # each child leads its own session


def test_ctrl_c_stops_everything(tmp_path):
    proc = start(tmp_path / "run")
    services = children_of(proc.pid)
    try:
        assert len(services) == 5, services  # etcd, a controller, two brokers, admin
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=STOP_WITHIN_S + 10)
        took = time.monotonic() - began
        assert proc.returncode == 0, out
        assert "stopped." in out
        assert took < STOP_WITHIN_S, f"make run took {took:.1f}s to stop"
        assert wait_gone(services, 5) == []
    finally:
        kill_left(services)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_services_die_with_their_supervisor(tmp_path):
    proc = start(tmp_path / "run")
    services = children_of(proc.pid)
    try:
        proc.kill()
        proc.wait(timeout=10)
        assert wait_gone(services, ORPHANS_GONE_WITHIN_S) == [], "orphans left running"
    finally:
        kill_left(services)
