"""A real Apache Kafka cluster in KRaft mode on loopback: 3 controllers and 3 brokers.

:class:`KafkaCluster` writes one properties file per node, formats each node's storage with
Kafka's own ``StorageTool``, and starts every node as a separate JVM (``kafka.Kafka``) the way
Kafka's start scripts do: the same JVM flags (:data:`JVM_FLAGS`) and heap (``-Xmx1G -Xms1G``,
``kafka-server-start.sh``'s default). Controllers are their own processes
(``process.roles=controller``, a static 3-voter quorum), as in production. Server settings are
Kafka's defaults; the properties written are only what a node must be told (identity,
listeners, quorum voters, log directory) plus ``KafkaSpec.overrides``, which a scenario uses
to raise a size limit and which :meth:`KafkaSpec.changed_settings` lists for the output.

Every node logs to its own file at Kafka's default level (INFO) with each line stamped in
epoch milliseconds (:data:`LOG4J2`), so log records can serve as witnesses next to client
observations (:meth:`KafkaCluster.log_records`). Only the processes started here are ever
signalled, each by its own process group.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.peers.kafka.install import KafkaDist, installed_libs
from leasehold.testing.ports import free_port, wait_for_port

CONTROLLER_BASE_ID = 100
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
JVM_FLAGS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
DEFAULT_HEAP = "1G"  # kafka-server-start.sh: -Xmx1G -Xms1G
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{UNIX_MILLIS} %p [%c] %m%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
LINE = re.compile(rb"^(\d{13}) (\w+) \[([^\]]*)\] (.*)$")


@dataclass(frozen=True)
class KafkaSpec:
    """The cluster's shape, heap per JVM, where data lives ("" = the work directory's disk),
    and the server settings changed from Kafka's defaults."""

    controllers: int = 3
    brokers: int = 3
    heap: str = DEFAULT_HEAP
    data_root: str = ""
    overrides: Mapping[str, str] = field(default_factory=dict)

    def changed_settings(self) -> str:
        """What differs from Kafka's defaults, for the output."""
        if not self.overrides:
            return "none (Kafka's defaults)"
        return ", ".join(f"{k}={v}" for k, v in sorted(self.overrides.items()))


@dataclass(frozen=True)
class LogRecord:
    """One log line of a node: wall time (s), level, logger, message."""

    at: float
    level: str
    logger: str
    message: str


@dataclass
class KafkaNode:
    """One JVM: a controller or a broker, its port, properties, log and data directory."""

    node_id: int
    role: str
    port: int
    props: Path
    log_path: Path
    data_dir: Path
    popen: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"{self.role}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self, command: list[str]) -> None:
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL, like a crashed machine."""
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=30)

    def wait_exit(self, timeout: float) -> int | None:
        """Wait for the process to end (after a signal); SIGKILL it after ``timeout``."""
        if self.popen is None:
            return None
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def log_tail(self, limit: int = 2000) -> str:
        """The log's last ``limit`` bytes, for an error message."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - limit))
                return log.read().decode(errors="replace")
        except OSError as exc:
            return f"(unreadable: {exc.strerror})"

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0


# Kafka's Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID: reserved, never a cluster id.
RESERVED_IDS = (bytes(16), bytes(15) + b"\x01")


def random_cluster_id(draw: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. Like Kafka's
    ``Uuid.randomUuid``, it draws again for a reserved id or one starting with ``-`` (1 in 64
    of them), which ``kafka-storage format -t`` would read as an option and refuse."""
    while True:
        raw = draw().bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if raw not in RESERVED_IDS and not text.startswith("-"):
            return text


class KafkaCluster:
    """Controllers ``101..`` and brokers ``1..`` as real processes; see the module docstring.

    ``with KafkaCluster(spec) as kc:`` formats and starts every node and waits until each
    listens; on exit every node is SIGKILLed (a 10,000-partition controlled shutdown per
    broker would only slow the teardown) and the work directory removed unless the block failed.
    """

    def __init__(self, spec: KafkaSpec | None = None, dist: KafkaDist | None = None) -> None:
        self.spec = spec or KafkaSpec()
        self.dist = dist or installed_libs()
        self.workdir = Path(tempfile.mkdtemp(prefix="kafka-peer-"))
        data_root = Path(self.spec.data_root) if self.spec.data_root else self.workdir
        self._data = Path(tempfile.mkdtemp(prefix="kafka-data-", dir=data_root))
        self.cluster_id = random_cluster_id()
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        self.controllers: dict[int, KafkaNode] = {}
        self.brokers: dict[int, KafkaNode] = {}
        for i in range(CONTROLLER_BASE_ID + 1, CONTROLLER_BASE_ID + self.spec.controllers + 1):
            self.controllers[i] = self._node(i, "controller")
        for i in range(1, self.spec.brokers + 1):
            self.brokers[i] = self._node(i, "broker")
        for node in self.nodes():
            node.props.write_text(render_properties(self.properties(node)))

    def _node(self, node_id: int, role: str) -> KafkaNode:
        name = f"{role}-{node_id}"
        return KafkaNode(
            node_id, role, free_port(), self.workdir / f"{name}.properties",
            self.workdir / f"{name}.log", self._data / name,
        )  # fmt: skip

    # --- configuration --------------------------------------------------------------------------

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@{n.address}" for n in self.controllers.values())

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.brokers.values())

    def properties(self, node: KafkaNode) -> dict[str, str]:
        """What a node must be told (no tuning), then the spec's overrides."""
        props = {
            "process.roles": node.role,
            "node.id": str(node.node_id),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(node.data_dir),
        }
        if node.role == "controller":
            props["listeners"] = f"CONTROLLER://{node.address}"
        else:
            props["listeners"] = f"PLAINTEXT://{node.address}"
            props["advertised.listeners"] = f"PLAINTEXT://{node.address}"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        return {**props, **self.spec.overrides}

    def java(self, main: str, *args: str, heap: str) -> list[str]:
        log4j = self.workdir / "log4j2.properties"
        return [
            "java", f"-Xmx{heap}", f"-Xms{heap}", *JVM_FLAGS,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp", self.dist.classpath(), main, *args,
        ]  # fmt: skip

    # --- life cycle -----------------------------------------------------------------------------

    def format(self, timeout: float = 120.0) -> None:
        """``kafka-storage format`` for every node, all at once (one JVM each)."""
        procs = []
        for node in self.nodes():
            command = self.java(
                "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                "-c", str(node.props), heap="256M",
            )  # fmt: skip
            with node.log_path.open("ab") as log:
                procs.append((node, subprocess.Popen(command, stdout=log, stderr=log)))
        for node, proc in procs:
            if proc.wait(timeout=timeout) != 0:
                raise RuntimeError(
                    f"formatting {node.name} failed; see {node.log_path}, which ends:\n"
                    + node.log_tail()
                )

    def start(self, timeout: float = 120.0) -> KafkaCluster:
        self.format(timeout)
        for node in self.nodes():
            self.start_node(node)
        deadline = time.monotonic() + timeout
        for node in self.nodes():
            self.wait_listening(node, max(1.0, deadline - time.monotonic()))
        return self

    def start_node(self, node: KafkaNode) -> None:
        node.start(self.java("kafka.Kafka", str(node.props), heap=self.spec.heap))

    def wait_listening(self, node: KafkaNode, timeout: float) -> None:
        if not wait_for_port("127.0.0.1", node.port, timeout, alive=node.alive):
            raise RuntimeError(
                f"{node.name} did not listen on {node.address}; see {node.log_path}, which ends:\n"
                + node.log_tail()
            )

    def stop(self, keep: bool = False) -> None:
        failure: Exception | None = None
        for node in self.nodes():
            try:
                node.kill()
            except Exception as exc:  # stop the rest all the same
                failure = failure or exc
        shutil.rmtree(self._data, ignore_errors=True)
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if failure is not None:
            raise failure

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.stop(keep=True)
            raise

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.stop(keep=exc is not None)
        if exc is not None:
            exc.add_note(f"Kafka logs kept in {self.workdir}")

    # --- looking at it --------------------------------------------------------------------------

    def nodes(self) -> list[KafkaNode]:
        return [*self.controllers.values(), *self.brokers.values()]

    def pids(self) -> dict[str, int]:
        return {n.name: n.pid for n in self.nodes() if n.alive() and n.pid}

    def broker_addresses(self, exclude: tuple[int, ...] = ()) -> dict[int, str]:
        return {b: n.address for b, n in self.brokers.items() if b not in exclude}

    def log_records(
        self, node: KafkaNode, since: int = 0, contains: str = ""
    ) -> Iterator[LogRecord]:
        """Log lines of ``node`` written after byte ``since`` whose message has ``contains``."""
        try:
            with node.log_path.open("rb") as f:
                f.seek(since)
                data = f.read()
        except OSError:
            return
        needle = contains.encode()
        for line in data.splitlines():
            if needle not in line:
                continue
            m = LINE.match(line)
            if m:
                yield LogRecord(
                    int(m[1]) / 1000, m[2].decode(), m[3].decode(), m[4].decode(errors="replace")
                )


def render_properties(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
