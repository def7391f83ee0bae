"""Run a whole Leasehold cluster as real processes on loopback.

``LocalCluster`` starts etcd, controllers, broker agents and the admin service as separate OS
processes (the same entry points the container image uses), each with its own port and log file.
End-to-end tests, benchmarks, fault tests and ``make run`` all use it. It kills only the processes
it started.

``ClusterSpec(metrics=True)`` gives every service a free ``--metrics-port`` (``Proc.metrics_port``).
``ClusterSpec(tls=True)`` makes a CA and one certificate per process in ``<workdir>/certs`` (see
:mod:`leasehold.testing.certs`) and runs mutual TLS on every hop: etcd's client port, and every
service's gRPC port, each presenting its role's identity (``spiffe://<cluster-id>/controller/<id>``,
``.../broker/<id>``, ``.../admin``); ``client_tls`` is a certificate for the test's own clients.
Without it every service is started with an explicit ``--insecure`` (plaintext, with the warning
that goes with it), and ``client_tls`` is an empty ``TlsConfig`` (plaintext, said explicitly).

:class:`~leasehold.testing.netns_cluster.NetnsCluster` runs the same processes on test hosts of
their own (network namespaces, three etcd members) instead of loopback: ``_place`` says where a
process runs, and tests reach etcd through ``etcd_endpoints``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from leasehold.config import TlsConfig
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.etcd.client import TlsFiles
from leasehold.etcd.election import leader_of
from leasehold.etcd.session import DEFAULT_TTL
from leasehold.testing.certs import CertFiles, CertificateAuthority
from leasehold.testing.etcd_server import EtcdServer
from leasehold.testing.lifetime import parent_death_signal
from leasehold.testing.ports import free_port, wait_for_port
from leasehold.testing.wait import until


@dataclass
class Proc:
    """One service process: its command line, port and log file."""

    name: str
    args: list[str]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen | None = None
    metrics_port: int = 0
    host: str = "127.0.0.1"  # the address it binds and advertises
    prefix: tuple[str, ...] = ()  # a command it runs through, e.g. ``ip netns exec <ns>``
    die_with_parent: bool = False  # SIGTERM when the starting thread exits (testing.lifetime)

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.env)
        log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", *self.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=parent_death_signal() if self.die_with_parent else None,
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
        if not wait_for_port(self.host, self.port, timeout, alive=self.alive):
            raise RuntimeError(f"{self.name} did not listen on {self.address}; see {self.log_path}")


@dataclass
class ClusterSpec:
    controllers: int = 2
    brokers: int = 3
    racks: tuple[str, ...] = ()
    cluster_id: str = "leasehold"
    session_ttl: int = DEFAULT_TTL  # the services' default
    admin_port: int = 0
    controller_base_port: int = 0
    broker_base_port: int = 0
    etcd_port: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)
    metrics: bool = False  # a free --metrics-port per service
    tls: bool = False  # mutual TLS everywhere, with generated certificates
    # Every process gets SIGTERM when the thread that started it exits (testing.lifetime): for
    # a supervisor such as ``make run``, whose children must not outlive it.
    die_with_parent: bool = False


class LocalCluster:
    def __init__(self, spec: ClusterSpec | None = None, workdir: str | None = None) -> None:
        self.spec = spec or ClusterSpec()
        self._owns_workdir = workdir is None  # a temporary directory: ``remove_workdir``
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="leasehold-cluster-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ca = CertificateAuthority(self.workdir / "certs") if self.spec.tls else None
        self._client_certs: CertFiles | None = None
        etcd_tls = {}
        if self.ca is not None:
            server = self.ca.issue("etcd", common_name="etcd")
            etcd_tls = dict(
                cert_file=server.cert,
                key_file=server.key,
                trusted_ca_file=server.ca,
                client_cert_auth=True,
            )
        self.etcd = EtcdServer(
            data_dir=str(self.workdir / "etcd"),
            client_port=self.spec.etcd_port,
            log_path=str(self.workdir / "etcd.log"),
            die_with_parent=self.spec.die_with_parent,
            **etcd_tls,
        )
        self.controllers: dict[int, Proc] = {}
        self.brokers: dict[int, Proc] = {}
        self.admin: Proc | None = None

    # --- construction ---------------------------------------------------------------------------

    @property
    def etcd_endpoints(self) -> list[str]:
        """Every etcd endpoint, for a test's own ``EtcdClient``."""
        return self.etcd.endpoints

    def _place(self, name: str) -> tuple[str, tuple[str, ...]]:
        """Where process ``name`` runs: the address it binds and advertises, and the command
        prefix that puts it there. Every process shares loopback here; ``NetnsCluster`` gives
        each a test host of its own."""
        return "127.0.0.1", ()

    def _proc(self, name: str, args: list[str], port: int, identity) -> Proc:
        """A service process on its place, with the flags every service takes."""
        host, prefix = self._place(name)
        common = [
            "--etcd", ",".join(self.etcd_endpoints),
            "--cluster-id", self.spec.cluster_id,
            "--host", host,
            "--port", str(port),
        ]  # fmt: skip
        metrics_port = free_port() if self.spec.metrics else 0
        if metrics_port:
            common += ["--metrics-port", str(metrics_port)]
        if self.ca is not None:
            certs = self.issue(*identity, ips=(host,))
            common += certs.flags() + certs.etcd_flags()
        else:
            common.append("--insecure")
        return Proc(
            name,
            [args[0], *common, *args[1:]],
            port,
            self.workdir / f"{name}.log",
            env=dict(self.spec.extra_env),
            metrics_port=metrics_port,
            host=host,
            prefix=prefix,
            die_with_parent=self.spec.die_with_parent,
        )

    def issue(
        self, role: str, ident: int | str | None = None, *, ips: tuple[str, ...] = ()
    ) -> CertFiles:
        """A certificate of this cluster's CA and trust domain for ``role``/``ident``, also
        serving ``ips`` (a test host's own address) besides loopback."""
        assert self.ca is not None, "the cluster was not started with tls=True"
        return self.ca.issue_role(role, ident, trust_domain=self.spec.cluster_id, ips=ips)

    @property
    def client_tls(self) -> TlsConfig:
        """A client certificate (role ``client``) for tests' own calls; without TLS an empty
        TlsConfig, which clients take as plaintext."""
        return self.client_certs.tls() if self.ca is not None else TlsConfig()

    @property
    def etcd_client_tls(self) -> TlsFiles | None:
        """What a test's own etcd client needs: the client certificate with TLS, else None."""
        return self.client_certs.etcd() if self.ca is not None else None

    @property
    def client_certs(self) -> CertFiles:
        assert self.ca is not None, "the cluster was not started with tls=True"
        if self._client_certs is None:
            self._client_certs = self.issue("client")
        return self._client_certs

    def _port(self, base: int, index: int) -> int:
        return base + index if base else free_port()

    def add_controller(self, controller_id: int) -> Proc:
        port = self._port(self.spec.controller_base_port, controller_id - 1)
        proc = self._proc(
            f"controller-{controller_id}",
            ["services.controller", "--controller-id", str(controller_id),
             "--session-ttl", str(self.spec.session_ttl),
             "--state-change-log", str(self.workdir / f"state-change-{controller_id}.log")],
            port,
            ("controller", controller_id),
        )  # fmt: skip
        self.controllers[controller_id] = proc
        return proc

    def add_broker(self, broker_id: int) -> Proc:
        port = self._port(self.spec.broker_base_port, broker_id - 1)
        args = [
            "services.broker_agent",
            "--broker-id", str(broker_id),
            "--data-dir", str(self.workdir / f"broker-{broker_id}"),
            "--session-ttl", str(self.spec.session_ttl),
        ]  # fmt: skip
        if self.spec.racks:
            args += ["--rack", self.spec.racks[(broker_id - 1) % len(self.spec.racks)]]
        proc = self._proc(f"broker-{broker_id}", args, port, ("broker", broker_id))
        self.brokers[broker_id] = proc
        return proc

    def start(self, timeout: float = 60.0) -> LocalCluster:
        self.etcd.start()
        for cid in range(1, self.spec.controllers + 1):
            self.add_controller(cid)
        for bid in range(1, self.spec.brokers + 1):
            self.add_broker(bid)
        admin_port = self.spec.admin_port or self._port(0, 0)
        self.admin = self._proc("admin", ["services.admin"], admin_port, ("admin", None))
        for proc in self.processes():
            proc.start()
        deadline = time.monotonic() + timeout
        for proc in self.processes():
            proc.wait_ready(max(1.0, deadline - time.monotonic()))
        self.wait_registered(max(1.0, deadline - time.monotonic()))
        return self

    def wait_registered(self, timeout: float = 30.0) -> None:
        """Block until every running broker is registered and a controller has taken office.

        Listening on a port is not enough: a topic created before a broker registers would
        be placed without it. Runs in its own thread so callers inside an event loop can use it.
        """
        expected = {bid for bid, proc in self.brokers.items() if proc.alive()}
        want_controller = any(p.alive() for p in self.controllers.values())
        keyspace = Keyspace(self.spec.cluster_id)

        async def probe() -> bool:
            async with EtcdClient(self.etcd_endpoints, tls=self.etcd_client_tls) as client:
                kvs, _ = await client.range_prefix(keyspace.brokers_prefix, keys_only=True)
                registered = {keyspace.broker_id_of(kv.key) for kv in kvs}
                epoch = await client.get(keyspace.controller_epoch)
                leader = await leader_of(client, keyspace.controller_election_prefix)
            in_office = leader is not None and epoch is not None
            return expected <= registered and (in_office or not want_controller)

        async def poll() -> None:
            await until(probe, timeout=timeout, interval=0.1, what="brokers and a controller")

        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, poll()).result()

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
        # Every process is stopped even when one of them will not go (a SIGKILLed process not
        # reaped in time, e.g. under a tracer): the first such error is raised at the end, after
        # the rest of the cluster, etcd included, is down.
        failure: Exception | None = None
        for proc in order:
            try:
                proc.terminate(timeout=15)
            except Exception as exc:
                failure = failure or exc
        try:
            self.etcd.stop()
        except Exception as exc:
            failure = failure or exc
        if failure is not None:
            raise failure

    def remove_workdir(self) -> None:
        """Delete the work directory (logs, etcd and broker data: ~60 MB for a small test
        cluster) if this cluster made it as a temporary one; after ``stop``. Kept when
        ``LEASEHOLD_KEEP_TEST_DIRS`` is set, for looking at a run afterwards."""
        if self._owns_workdir and not os.environ.get("LEASEHOLD_KEEP_TEST_DIRS"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def logs(self, name: str, tail: int = 60) -> str:
        path = self.workdir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-tail:])
