"""Run a whole Leasehold cluster as real processes on loopback.

``LocalCluster`` starts etcd, controllers, broker agents and the admin service as separate OS
processes (the same entry points the container image uses), each with its own port and log file.
End-to-end tests, benchmarks, fault tests and ``make run`` all use it. It kills only the processes
it started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from leasehold.testing.etcd_server import EtcdServer
from leasehold.testing.ports import free_port, wait_for_port


@dataclass
class Proc:
    """One service process: its command line, port and log file."""

    name: str
    args: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.env)
        log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        log.close()

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL: no clean-up, like a crashed machine."""
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def terminate(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait (a broker's controlled shutdown runs here)."""
        if not self.alive():
            return self.popen.returncode if self.popen else None
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def wait_ready(self, timeout: float = 30.0) -> None:
        if not wait_for_port("127.0.0.1", self.port, timeout):
            raise RuntimeError(f"{self.name} did not listen on {self.address}; see {self.log_path}")


@dataclass
class ClusterSpec:
    controllers: int = 2
    brokers: int = 3
    racks: tuple[str, ...] = ()
    cluster_id: str = "leasehold"
    session_ttl: int = 3
    admin_port: int = 0
    controller_base_port: int = 0
    broker_base_port: int = 0
    etcd_port: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)


class LocalCluster:
    def __init__(self, spec: ClusterSpec | None = None, workdir: str | None = None) -> None:
        self.spec = spec or ClusterSpec()
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="leasehold-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.etcd = EtcdServer(
            data_dir=str(self.workdir / "etcd"),
            client_port=self.spec.etcd_port,
            log_path=str(self.workdir / "etcd.log"),
        )
        self.controllers: dict[int, Proc] = {}
        self.brokers: dict[int, Proc] = {}
        self.admin: Proc | None = None

    # --- construction ---------------------------------------------------------------------------

    def _common(self, port: int) -> list[str]:
        return [
            "--etcd", self.etcd.endpoint,
            "--cluster-id", self.spec.cluster_id,
            "--host", "127.0.0.1",
            "--port", str(port),
        ]  # fmt: skip

    def _port(self, base: int, index: int) -> int:
        return base + index if base else free_port()

    def add_controller(self, controller_id: int) -> Proc:
        port = self._port(self.spec.controller_base_port, controller_id - 1)
        proc = Proc(
            f"controller-{controller_id}",
            ["services.controller", *self._common(port), "--controller-id", str(controller_id),
             "--session-ttl", str(self.spec.session_ttl),
             "--state-change-log", str(self.workdir / f"state-change-{controller_id}.log")],
            port,
            self.workdir / f"controller-{controller_id}.log",
            env=dict(self.spec.extra_env),
        )  # fmt: skip
        self.controllers[controller_id] = proc
        return proc

    def add_broker(self, broker_id: int) -> Proc:
        port = self._port(self.spec.broker_base_port, broker_id - 1)
        args = [
            "services.broker_agent", *self._common(port),
            "--broker-id", str(broker_id),
            "--data-dir", str(self.workdir / f"broker-{broker_id}"),
            "--session-ttl", str(self.spec.session_ttl),
        ]  # fmt: skip
        if self.spec.racks:
            args += ["--rack", self.spec.racks[(broker_id - 1) % len(self.spec.racks)]]
        proc = Proc(
            f"broker-{broker_id}",
            args,
            port,
            self.workdir / f"broker-{broker_id}.log",
            env=dict(self.spec.extra_env),
        )
        self.brokers[broker_id] = proc
        return proc

    def start(self, timeout: float = 60.0) -> LocalCluster:
        self.etcd.start()
        for cid in range(1, self.spec.controllers + 1):
            self.add_controller(cid)
        for bid in range(1, self.spec.brokers + 1):
            self.add_broker(bid)
        admin_port = self.spec.admin_port or free_port()
        self.admin = Proc(
            "admin",
            ["services.admin", *self._common(admin_port)],
            admin_port,
            self.workdir / "admin.log",
            env=dict(self.spec.extra_env),
        )
        for proc in self.processes():
            proc.start()
        deadline = time.monotonic() + timeout
        for proc in self.processes():
            proc.wait_ready(max(1.0, deadline - time.monotonic()))
        return self

    def processes(self) -> list[Proc]:
        procs = [*self.controllers.values(), *self.brokers.values()]
        return procs + ([self.admin] if self.admin else [])

    @property
    def admin_address(self) -> str:
        assert self.admin is not None
        return self.admin.address

    def stop(self) -> None:
        """Brokers first (their controlled shutdown needs a controller), then admin, controllers."""
        for proc in self.processes():
            proc.resume()
        order = [
            *self.brokers.values(),
            *([self.admin] if self.admin else []),
            *self.controllers.values(),
        ]
        for proc in order:
            proc.terminate(timeout=15)
        self.etcd.stop()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self, name: str, tail: int = 60) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-tail:])
