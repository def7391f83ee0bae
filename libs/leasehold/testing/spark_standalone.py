"""A Spark standalone cluster on loopback, from the pyspark distribution: one master and N
workers, each its own JVM process started with ``spark-class`` (what ``sbin/start-master.sh``
and ``start-worker.sh`` run), for tests and benchmarks that submit to ``spark://``.

Workers get few cores and little memory (a 2-core test machine runs the cluster, the driver
and the executors' Python workers at once); executors run this interpreter (the project's venv)
so they import the same ``leasehold`` and ``services`` as the driver.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from leasehold.testing.ports import free_port

HOST = "127.0.0.1"


@dataclass(frozen=True)
class StandaloneSpec:
    workers: int = 2
    cores_per_worker: int = 1
    worker_memory: str = "1g"
    start_timeout_s: float = 120.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class StandaloneCluster:
    """``start()`` / ``stop()``; ``master_url`` is what ``--master`` takes."""

    def __init__(self, spec: StandaloneSpec = StandaloneSpec()) -> None:
        self.spec = spec
        self.port = free_port()
        self.ui_port = free_port()
        self.master_url = f"spark://{HOST}:{self.port}"
        self.workdir = Path(tempfile.mkdtemp(prefix="leasehold-spark-"))
        self.processes: list[subprocess.Popen] = []

    def env(self) -> dict[str, str]:
        """The environment for the cluster's JVMs and for drivers that submit to it."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP=HOST,
            SPARK_LOG_DIR=str(self.workdir / "logs"),
            SPARK_WORKER_DIR=str(self.workdir / "work"),
            SPARK_LOCAL_DIRS=str(self.workdir / "local"),
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        return env

    def _spark_class(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.workdir / f"{name.rsplit('.', 1)[-1]}-{len(self.processes)}.log", "wb")
        proc = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), name, *args],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.processes.append(proc)
        return proc

    def start(self) -> StandaloneCluster:
        for sub in ("logs", "work", "local"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        self._spark_class(
            "org.apache.spark.deploy.master.Master",
            "--host", HOST, "--port", str(self.port), "--webui-port", str(self.ui_port),
        )  # fmt: skip
        self._wait(lambda s: s is not None, "the master")
        for _ in range(self.spec.workers):
            self._spark_class(
                "org.apache.spark.deploy.worker.Worker",
                "--host", HOST, "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", str(self.spec.cores_per_worker),
                "--memory", self.spec.worker_memory,
                "--work-dir", str(self.workdir / "work"),
                self.master_url,
            )  # fmt: skip
        self._wait(lambda s: s is not None and s.get("aliveworkers", 0) >= self.spec.workers,
                   f"{self.spec.workers} workers")  # fmt: skip
        return self

    def status(self) -> dict | None:
        """The master's JSON status (workers, applications), or None if it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.spec.start_timeout_s
        while not ready(self.status()):
            dead = [p.args[1] for p in self.processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                logs = "\n".join(
                    f.read_text(errors="replace")[-1500:] for f in self.workdir.glob("*.log")
                )
                raise RuntimeError(f"spark standalone: {what} not up (exited: {dead})\n{logs}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop the workers, then the master: only the processes this object started."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.processes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.processes.clear()

    def remove_workdir(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.remove_workdir()
