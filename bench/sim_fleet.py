"""Processes of simulated brokers (``python -m services.broker_agent.simulation``), driven from
the scale benchmark over their stdin/stdout JSON lines, and what the benchmark reads of them.

A fleet process holds many brokers; a broker the benchmark kills or shuts down runs alone in a
process of its own, so the fault is a real SIGKILL / SIGTERM of the process holding it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
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


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` and its child processes (a service's lease renewal
    process, ~40 MiB), 0 once it is gone."""
    own = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    own = int(line.split()[1]) * 1024
                    break
    except OSError:
        return 0
    return own + sum(rss_bytes(child) for child in children(pid))


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
        answers = await asyncio.gather(
            *(asyncio.to_thread(p.ask, {"cmd": "stats"}) for p in self.alive())
        )
        return [s for a in answers for s in a["stats"]]

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
