"""Processes of simulated brokers (``python -m services.broker_agent.simulation``), driven from
the scale benchmark over their stdin/stdout JSON lines, and what the benchmark reads of them.

A fleet process holds many brokers; a broker the benchmark kills or shuts down runs alone in a
process of its own, so the fault is a real SIGKILL / SIGTERM of the process holding it.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

READY_TIMEOUT_S = 600.0
START_WAVE = 4
EXIT_TIMEOUT_S = 60.0


AUTOGROUP = Path("/proc/self/autogroup")


@contextlib.contextmanager
def fleet_niceness(nice: int) -> Iterator[str]:
    """Within: the simulation processes (started from this process, in its session) run at
    CPU niceness ``nice`` against etcd and the controllers; yields how. With the kernel's
    autogroups (``/proc/sys/kernel/sched_autogroup_enabled``) CPU is shared between sessions
    first, and etcd and each controller run in sessions of their own, so a process's own
    niceness only orders it against its own session: the session's group is given the
    niceness (and given back its own after). Each process is also started under ``nice``
    (``FleetProcess.nice``), which is what counts without autogroups."""
    if not nice:
        yield "niceness 0"
        return
    try:
        before = int(AUTOGROUP.read_text().split()[-1])
        AUTOGROUP.write_text(str(nice))
    except (OSError, ValueError, IndexError):  # no autogroups here
        yield f"niceness {nice} (no autogroups)"
        return
    try:
        yield f"niceness {nice} (the session's autogroup, this process included)"
    finally:
        AUTOGROUP.write_text(str(before))


def realtime(pid: int, priority: int = 1) -> int:
    """Every thread of process ``pid`` and of its child processes (a service's lease renewal
    process) under the round-robin real-time policy at ``priority`` (threads and processes
    started later inherit it): they run as soon as they are runnable, ahead of every normal
    process, within the kernel's real-time share (``sched_rt_runtime_us``, 95%). Returns the
    threads set."""
    tasks = os.listdir(f"/proc/{pid}/task")
    for task in tasks:
        os.sched_setscheduler(int(task), os.SCHED_RR, os.sched_param(priority))
    return len(tasks) + sum(realtime(child, priority) for child in children(pid))


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (none once it is gone)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [
                    int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                ]
    return out


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Resident set size of process ``pid`` and its child processes (a service's lease renewal
    process, ~40 MiB), 0 once it is gone; with ``field="VmHWM"`` the peak each has had (the
    kernel's high-water mark), summed."""
    own = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    own = int(line.split()[1]) * 1024
                    break
    except OSError:
        return 0
    return own + sum(rss_bytes(child, field) for child in children(pid))


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU of process ``pid`` (its threads), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # Fields after the command's closing parenthesis: utime and stime are 12th, 13th.
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class CpuTrace:
    """The CPU used by groups of processes over time (the controllers, the fleet, etcd), read
    from ``/proc`` every ``interval_s`` in a thread of its own, so a window ending at an
    instant taken from other clocks (every broker told) can be read afterwards.

    ``groups()`` names each group's processes; it is asked again (and their child processes,
    the lease renewal processes, found) every ``refresh_s``, as controllers restart. A process
    that has gone keeps counting what it used, so a group's total only grows."""

    def __init__(
        self,
        groups: Callable[[], dict[str, Iterable[int]]],
        *,
        interval_s: float = 0.1,
        refresh_s: float = 1.0,
    ) -> None:
        self._groups = groups
        self._interval_s = interval_s
        self._refresh_s = refresh_s
        self._used: dict[str, dict[int, float]] = {}  # group -> pid -> CPU seconds
        self._pids: dict[str, list[int]] = {}
        self._refreshed = float("-inf")
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-trace", daemon=True)

    def start(self) -> CpuTrace:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self._interval_s)

    def sample(self) -> None:
        """One reading of every group (the thread's; a test's)."""
        now = time.time()
        if now - self._refreshed >= self._refresh_s:
            self._refreshed = now
            groups = self._groups()
            # A process in several groups (a controller: the controllers', its own) has its
            # child processes listed once, the same in each.
            listed = dict.fromkeys(p for group in groups.values() for p in group)
            family = {p: [p, *children(p)] for p in listed}
            self._pids = {
                name: [q for p in group for q in family[p]] for name, group in groups.items()
            }
        # Each process read once a sample: a group inside another (the active controller within
        # the controllers) never reads more than it, as a later reading of the same process
        # could (a clock tick, 10 ms, between the two).
        every = dict.fromkeys(pid for group in self._pids.values() for pid in group)
        seconds = {pid: cpu_seconds(pid) for pid in every}
        for name, group in self._pids.items():
            used = self._used.setdefault(name, {})
            for pid in group:
                if (reading := seconds[pid]) is not None:
                    used[pid] = reading
        self.samples.append((now, {n: sum(u.values()) for n, u in self._used.items()}))

    async def past(self, instant: float) -> None:
        """Until a sample after ``instant`` has been taken."""
        while not self.samples or self.samples[-1][0] <= instant:
            await asyncio.sleep(self._interval_s)

    def at(self, group: str, instant: float) -> float:
        """``group``'s CPU seconds up to ``instant``, between the samples around it."""
        samples = self.samples
        i = bisect.bisect_left(samples, instant, key=lambda s: s[0])
        if i == 0:
            return samples[0][1].get(group, 0.0) if samples else 0.0
        if i == len(samples):
            return samples[-1][1].get(group, 0.0)
        (t0, a), (t1, b) = samples[i - 1], samples[i]
        v0, v1 = a.get(group, 0.0), b.get(group, 0.0)
        return v0 + (v1 - v0) * (instant - t0) / (t1 - t0) if t1 > t0 else v1

    def used(self, group: str, start: float, end: float) -> float:
        """``group``'s CPU seconds between two instants (``time.time()``; ``past(end)``
        first)."""
        return self.at(group, end) - self.at(group, start)


def split_ids(ids: Sequence[int], per_process: int) -> list[list[int]]:
    """``ids`` cut into runs of at most ``per_process``."""
    return [list(ids[i : i + per_process]) for i in range(0, len(ids), per_process)]


def id_spec(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


@dataclass
class FleetProcess:
    """One simulation process: its broker ids, the Popen, and a lock around its command line."""

    ids: list[int]
    etcd: list[str]
    cluster_id: str
    log_path: Path
    confirm_in_etcd: bool = False
    nice: int = 0  # the process's CPU niceness (``bench.scale.NICE_ENV``)
    popen: subprocess.Popen | None = None
    ports: dict[int, int] = field(default_factory=dict)
    leaving: bool = False  # signalled: asked nothing more
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        args = [
            *(["nice", "-n", str(self.nice)] if self.nice else []),  # nice execs: same pid
            sys.executable, "-m", "services.broker_agent.simulation",
            "--etcd", ",".join(self.etcd), "--cluster-id", self.cluster_id,
            "--brokers", id_spec(self.ids),
            *(["--confirm-in-etcd"] if self.confirm_in_etcd else []),
        ]  # fmt: skip
        self._log = self.log_path.open("ab")
        self.popen = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def wait_ready(self) -> None:
        line = self._read()
        if "ready" not in line:
            raise RuntimeError(f"simulation {self.ids[0]}..: {line}")
        self.ports = {int(k): v for k, v in line["ready"].items()}

    def _read(self) -> dict:
        assert self.popen is not None and self.popen.stdout is not None
        text = self.popen.stdout.readline()
        if not text:
            raise RuntimeError(
                f"simulation process of brokers {self.ids[0]}.. exited "
                f"(rc {self.popen.poll()}); see {self.log_path}"
            )
        return json.loads(text)

    def ask(self, command: dict) -> dict:
        """Send one command and read its answer (blocking; call through a thread)."""
        assert self.popen is not None and self.popen.stdin is not None
        with self._lock:
            self.popen.stdin.write(json.dumps(command) + "\n")
            self.popen.stdin.flush()
            return self._read()

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        self.leaving = True
        if self.alive():
            assert self.popen is not None
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(30)

    def terminate(self) -> dict:
        """SIGTERM (the agent's controlled shutdown): its ``shutdown`` line, once it exited."""
        assert self.popen is not None
        self.leaving = True
        with self._lock:  # a stats call in flight reads its own answer first
            self.popen.send_signal(signal.SIGTERM)
            line = self._read()
        self.popen.wait(EXIT_TIMEOUT_S)
        return line

    def close(self) -> None:
        if self.alive():
            self.kill()
        if self.popen is not None and self.popen.stdin is not None:
            with contextlib.suppress(OSError):  # a killed process's pipe is broken
                self.popen.stdin.close()
            self.popen.stdout.close()  # type: ignore[union-attr]
        if getattr(self, "_log", None) is not None:
            self._log.close()


class Fleet:
    """Every simulation process of a run."""

    def __init__(self, processes: list[FleetProcess]) -> None:
        self.processes = processes
        # Per process, what its brokers shared as of its last figures (``Sharing``).
        self._shared: dict[int, dict[str, list[int]]] = {}

    async def start(self, after_wave: Callable[[int], Awaitable[None]] | None = None) -> None:
        """Start the processes ``START_WAVE`` at a time, each wave once the one before has
        registered every broker and ``after_wave(brokers started so far)`` returned: fifty
        processes importing and registering at once, and a controller telling a thousand
        brokers of each other, kept some from renewing a lease within its TTL (a start, not a
        fault, so not what a size measures)."""
        started = 0
        for i in range(0, len(self.processes), START_WAVE):
            wave = self.processes[i : i + START_WAVE]
            for proc in wave:
                proc.start()
            await asyncio.wait_for(
                asyncio.gather(*(asyncio.to_thread(p.wait_ready) for p in wave)),
                READY_TIMEOUT_S,
            )
            started += sum(len(p.ids) for p in wave)
            if after_wave is not None:
                await after_wave(started)

    def alive(self) -> list[FleetProcess]:
        return [p for p in self.processes if p.alive() and not p.leaving]

    async def stats(self) -> list[dict]:
        """Every live broker's figures (``SimulatedBroker.stats``)."""
        alive = self.alive()
        answers = await asyncio.gather(*(asyncio.to_thread(p.ask, {"cmd": "stats"}) for p in alive))
        for proc, answer in zip(alive, answers, strict=True):
            self._shared[proc.pid] = answer.get("shared", {})
        return [s for a in answers for s in a["stats"]]

    def shared(self) -> dict[str, list[int]]:
        """What the brokers of each process shared, summed over the processes as of their
        last figures: per kind, its counts as a process gives them (``decodes`` and
        ``requests``: [taken from another broker's work, done])."""
        out: dict[str, list[int]] = {}
        for figures in self._shared.values():
            for kind, counts in figures.items():
                summed = out.setdefault(kind, [0] * len(counts))
                for i, n in enumerate(counts):
                    summed[i] += n
        return out

    async def watch(self, leader: int, partitions: list[tuple[str, int]]) -> None:
        command = {"cmd": "watch", "leader": leader, "partitions": partitions}
        await asyncio.gather(*(asyncio.to_thread(p.ask, command) for p in self.alive()))

    def rss(self) -> int:
        return sum(rss_bytes(p.pid) for p in self.alive())

    def close(self) -> None:
        for proc in self.processes:
            proc.close()

    def log_count(self, needle: str) -> int:
        """Lines of every simulation process's log containing ``needle``."""
        count = 0
        for proc in self.processes:
            with contextlib.suppress(OSError), proc.log_path.open(errors="replace") as f:
                count += sum(needle in line for line in f)
        return count
