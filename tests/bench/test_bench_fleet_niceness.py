"""``sim_fleet.fleet_niceness``: the benchmark session's autogroup is niced while the fleet runs
and given back its niceness after; without autogroups it says so and changes nothing.
``sim_fleet.realtime``: every thread of a process under the real-time round-robin policy."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

import pytest

from bench import sim_fleet


def test_the_session_group_is_niced_then_restored(tmp_path, monkeypatch) -> None:
    group = tmp_path / "autogroup"
    group.write_text("/autogroup-7 nice 3\n")
    monkeypatch.setattr(sim_fleet, "AUTOGROUP", group)
    with sim_fleet.fleet_niceness(10) as how:
        assert group.read_text() == "10"
        assert how == "niceness 10 (the session's autogroup, this process included)"
    assert group.read_text() == "3"


def test_restored_when_the_run_fails(tmp_path, monkeypatch) -> None:
    group = tmp_path / "autogroup"
    group.write_text("/autogroup-7 nice 0\n")
    monkeypatch.setattr(sim_fleet, "AUTOGROUP", group)
    with pytest.raises(RuntimeError), sim_fleet.fleet_niceness(19):
        raise RuntimeError("the size failed")
    assert group.read_text() == "0"


def test_without_autogroups_nothing_is_written(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sim_fleet, "AUTOGROUP", tmp_path / "absent")
    with sim_fleet.fleet_niceness(10) as how:
        assert how == "niceness 10 (no autogroups)"
    assert not (tmp_path / "absent").exists()


def test_niceness_zero_touches_nothing(tmp_path, monkeypatch) -> None:
    group = tmp_path / "autogroup"
    group.write_text("/autogroup-7 nice 5\n")
    monkeypatch.setattr(sim_fleet, "AUTOGROUP", group)
    with sim_fleet.fleet_niceness(0) as how:
        assert how == "niceness 0"
    assert group.read_text() == "/autogroup-7 nice 5\n"


def test_realtime_sets_every_thread_of_the_process() -> None:
    code = (
        "import threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); "
        "print(1, flush=True); time.sleep(30)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        try:
            count = sim_fleet.realtime(child.pid)
        except PermissionError:
            pytest.skip("no permission to set a real-time policy here")
        tasks = os.listdir(f"/proc/{child.pid}/task")
        assert count == len(tasks) == 2
        assert all(os.sched_getscheduler(int(t)) == os.SCHED_RR for t in tasks)
    finally:
        child.kill()
        child.wait()


def test_the_peak_is_the_high_water_mark_a_process_has_had() -> None:
    """A process that held 200 MiB and let it go: its RSS falls, its peak keeps it (the scale
    suite reads the controllers' peak after the creation, however brief it was)."""
    code = (
        "import sys, time; b = bytearray(200 << 20); del b; "
        "print('freed', flush=True); time.sleep(30)"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "freed"
        peak, now = sim_fleet.rss_bytes(process.pid, "VmHWM"), sim_fleet.rss_bytes(process.pid)
        assert peak >= 200 << 20 > now
    finally:
        process.kill()
        process.wait()


def test_a_service_and_its_renewal_process_are_one_tree() -> None:
    """A service's child process (its lease renewal process) counts in its RSS and is put under
    the real-time policy with it."""
    code = (
        "import subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
        "print(c.pid, flush=True); time.sleep(30)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        assert sim_fleet.children(parent.pid) == [grandchild]
        assert sim_fleet.rss_bytes(parent.pid) > sim_fleet.rss_bytes(grandchild) > 0
        try:
            sim_fleet.realtime(parent.pid)
        except PermissionError:
            pytest.skip("no permission to set a real-time policy here")
        assert os.sched_getscheduler(grandchild) == os.SCHED_RR
    finally:
        parent.kill()
        parent.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, 9)
    assert sim_fleet.rss_bytes(parent.pid) == 0
