"""``sim_fleet.CpuTrace``: each group's CPU read from ``/proc``, a window's share read between
the samples around its ends, and a process that has gone still counted for what it used."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import sim_fleet

# Some CPU, then a line, then waits (until killed).
BURN = "import sys\nprint(sum(range(3_000_000)), flush=True)\nsys.stdin.read()"


def test_cpu_seconds_of_a_process_and_of_none() -> None:
    assert sim_fleet.cpu_seconds(os.getpid()) > 0
    # Never a live pid: above the kernel's pid_max.
    assert sim_fleet.cpu_seconds(2**31 - 1) is None


def _trace_with(samples: list[tuple[float, dict[str, float]]]) -> sim_fleet.CpuTrace:
    trace = sim_fleet.CpuTrace(dict)
    trace.samples = samples
    return trace


def test_a_window_is_read_between_the_samples_around_it() -> None:
    trace = _trace_with([(10.0, {"a": 1.0}), (11.0, {"a": 3.0}), (12.0, {"a": 3.5})])
    assert trace.at("a", 10.5) == pytest.approx(2.0)
    assert trace.used("a", 10.5, 11.5) == pytest.approx(1.25)
    # Outside the samples: the nearest one; a group never sampled used nothing.
    assert trace.at("a", 9.0) == 1.0 and trace.at("a", 13.0) == 3.5
    assert trace.used("b", 10.0, 12.0) == 0.0


def test_a_process_that_has_gone_keeps_what_it_used() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", BURN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline()  # its work is done
        trace = sim_fleet.CpuTrace(lambda: {"burner": [proc.pid], "none": []}, refresh_s=0.0)
        trace.sample()
        used = trace.samples[-1][1]["burner"]
        assert used > 0
    finally:
        proc.kill()
        proc.wait()
    trace.sample()  # its pid is gone now
    assert trace.samples[-1][1] == {"burner": used, "none": 0}
    assert sim_fleet.cpu_seconds(proc.pid) is None


def test_a_process_in_two_groups_is_read_once_a_sample(monkeypatch) -> None:
    # Every reading later than the one before (as a clock tick between two reads would make it):
    # the group inside the other never counts more than it.
    readings = iter(range(1, 100))
    monkeypatch.setattr(sim_fleet, "cpu_seconds", lambda pid: float(next(readings)))
    monkeypatch.setattr(sim_fleet, "children", lambda pid: [pid + 100] if pid == 1 else [])
    trace = sim_fleet.CpuTrace(lambda: {"all": [1, 2], "one": [1]}, refresh_s=0.0)
    for _ in range(3):
        trace.sample()
    for _, used in trace.samples:
        # Its child process counted in both; the other process in "all" alone.
        assert used["all"] - used["one"] > 0
    start, end = trace.samples[0][0], trace.samples[-1][0]
    assert trace.used("one", start, end) <= trace.used("all", start, end)
    # Three processes, each read once a sample: nine readings.
    assert next(readings) == 10
