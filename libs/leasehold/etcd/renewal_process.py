"""Lease renewals from a small process of their own, so the service's GIL never delays them.

A ``Renewer`` thread needs the GIL a few times per renewal round. When the service's main
thread holds it for long (a stretch of C code: a garbage collection, a large protobuf decode or
encode), or holds it while the machine's other processes keep it off the CPU, the thread waits
with it: on a loaded 2-core machine an active controller's renewal thread woke 2.9 s late
(``thread_late_s``) and lost a 3 s session while the controller was perfectly able to act.
A Java service's ZooKeeper heartbeats run on a thread that has no such lock to wait for.

``RenewalProcess`` runs the same ``Renewer`` (same policy, same batched keep-alives) in a child
interpreter (``python -m leasehold.etcd.renewal_process``) and stands in for it in the service:
``Session(..., renewer=RenewalProcess(...))``. The service tells the child which leases to keep
(a JSON line each on the child's stdin) and the child reports each lease's state changes and
its least margin back (JSON lines on its stdout), which a reader thread here hands to each
session as the renewal thread would.

What must hold for a lease to mean "the holder lives", as with a thread:

- **the holder dies**: its end of the pipe closes, the child stops renewing and exits, and the
  lease expires a TTL later (as a killed process's renewal thread would stop);
- **the holder is paused** (SIGSTOP, a debugger): the child sees it stopped
  (``/proc/<pid>/stat``) and renews nothing until it runs again, so the lease expires as a
  paused process's thread-renewed lease would; the holder learns it on resuming;
- **the child dies** (killed alone): every lease it held is reported lost, and the next
  ``add`` starts a new child.

The child ignores SIGINT and SIGTERM: a signal to the service's process group (Ctrl-C) must not
stop the renewals while the service itself shuts down; it exits when the service does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from leasehold.etcd.client import EtcdClient, TlsFiles
from leasehold.etcd.lease import LeaseState, LeaseTracker
from leasehold.etcd.session import Renewer

log = logging.getLogger(__name__)

# How long a service waits for its renewal process to be ready (an interpreter start and the
# gRPC import: well under a second on an idle machine, seconds on a loaded one).
READY_TIMEOUT_S = 30.0
# How often the child reports a lease's least margin when it shrank.
MARGIN_REPORT_S = 1.0


@dataclass
class _Lease:
    tracker: LeaseTracker
    report: Callable[[LeaseState], None]
    renewed_by: subprocess.Popen  # the child told to keep it


class RenewalProcess:
    """A ``Renewer`` in a child process; the same ``add`` / ``remove`` / ``stop``."""

    def __init__(
        self,
        client: EtcdClient,
        *,
        name: str = "lease-renewer",
        batched: bool = False,
        service: str = "leasehold",
        log_level: str = "info",
    ) -> None:
        tls = client.tls
        self._config = {
            "endpoints": list(client.endpoints),
            "tls": None if tls is None else {"ca": tls.ca, "cert": tls.cert, "key": tls.key},
            "timeout": client.timeout,
            "name": name,
            "batched": batched,
            "service": f"{service}-renewer",
            "log_level": log_level,
            "holder": os.getpid(),
        }
        self.name = name
        self._lock = threading.Lock()
        self._leases: dict[int, _Lease] = {}
        self._stopping = False
        self._proc: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._spawn()

    # ---- the service's side ------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Block until the child has started its renewer (call before the first session)."""
        if not self._ready.wait(timeout):
            raise TimeoutError(f"lease renewal process not ready within {timeout:g}s")
        proc = self._proc
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"lease renewal process exited (code {proc.returncode})")

    def add(
        self, lease_id: int, tracker: LeaseTracker, report: Callable[[LeaseState], None]
    ) -> None:
        """Keep ``lease_id`` alive from now on (granted when ``tracker`` says)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._spawn()  # the last child died: its leases are reported lost
            assert self._proc is not None
            self._leases[lease_id] = _Lease(tracker, report, self._proc)
        granted_at = tracker.deadline - tracker.ttl
        self._send({"add": lease_id, "ttl": tracker.ttl, "granted_at": granted_at})

    def remove(self, lease_id: int) -> None:
        with self._lock:
            self._leases.pop(lease_id, None)
        self._send({"remove": lease_id})

    def __len__(self) -> int:
        return len(self._leases)

    def stop(self) -> None:
        """Stop the child (it renews nothing more) and wait for it."""
        with self._lock:
            self._stopping = True
            proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    # ---- plumbing ----------------------------------------------------------------------------
    def _spawn(self) -> None:
        self._ready.clear()
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps(self._config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        self._proc = proc
        threading.Thread(
            target=self._read, args=(proc,), name=f"{self.name}-reports", daemon=True
        ).start()

    def _send(self, message: dict) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the child is gone: ``_read`` reports its leases lost

    def _read(self, proc: subprocess.Popen) -> None:
        """The reader thread: the child's reports, until its stdout closes."""
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                log.warning("unreadable line from the lease renewal process", exc_info=True)
                continue
            if message.get("ready"):
                self._ready.set()
                continue
            with self._lock:
                lease = self._leases.get(message["lease"])
            if lease is None:
                continue
            if "min_margin" in message:
                lease.tracker.min_margin = min(lease.tracker.min_margin, message["min_margin"])
            if "state" in message:
                lease.report(LeaseState(message["state"]))
        proc.wait()
        with self._lock:
            if proc is self._proc:
                self._ready.set()  # a ``wait_ready`` caller learns it exited
            if self._stopping:
                return
            orphaned = [lease for lease in self._leases.values() if lease.renewed_by is proc]
        log.error(
            "lease renewal process exited (code %s); its leases are lost",
            proc.returncode,
            extra={"leases": len(orphaned)},
        )
        for lease in orphaned:
            lease.report(LeaseState.LOST)


# ---- the child ---------------------------------------------------------------------------------


def holder_running(pid: int) -> bool:
    """False while process ``pid`` is stopped (SIGSTOP, a tracer) or gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"T", b"t", b"Z", b"X", b"")


class _Child:
    def __init__(self, config: dict) -> None:
        tls = config["tls"]
        client = EtcdClient(
            config["endpoints"],
            tls=None if tls is None else TlsFiles(**tls),
            timeout=config["timeout"],
        )
        holder = config["holder"]
        self._out = sys.stdout.buffer
        self._out_lock = threading.Lock()
        self._trackers: dict[int, LeaseTracker] = {}
        self._margins: dict[int, float] = {}
        self.renewer = Renewer(
            client,
            name=config["name"],
            batched=config["batched"],
            may_renew=lambda: holder_running(holder),
        )

    def send(self, message: dict) -> None:
        with self._out_lock, contextlib.suppress(OSError, ValueError):
            self._out.write(json.dumps(message).encode() + b"\n")
            self._out.flush()

    def report(self, lease_id: int, tracker: LeaseTracker, state: LeaseState) -> None:
        self.send({"lease": lease_id, "state": state.value, "min_margin": tracker.min_margin})

    def margins(self) -> None:
        """Each lease's least margin, when it shrank (a thread of its own)."""
        while True:
            time.sleep(MARGIN_REPORT_S)
            for lease_id, tracker in list(self._trackers.items()):
                margin = tracker.min_margin
                if margin < self._margins.get(lease_id, float("inf")) - 0.01:
                    self._margins[lease_id] = margin
                    self.send({"lease": lease_id, "min_margin": margin})

    def serve(self, commands) -> None:
        self.send({"ready": True})
        threading.Thread(target=self.margins, name="margins", daemon=True).start()
        for line in commands:
            message = json.loads(line)
            if "add" in message:
                lease_id = message["add"]
                tracker = LeaseTracker(message["ttl"], message["granted_at"])
                self._trackers[lease_id] = tracker
                self.renewer.add(
                    lease_id, tracker, lambda s, i=lease_id, t=tracker: self.report(i, t, s)
                )
            elif "remove" in message:
                self._trackers.pop(message["remove"], None)
                self.renewer.remove(message["remove"])
        self.renewer.stop()  # the holder is gone (or stopped us): renew nothing more


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    config = json.loads(sys.argv[1])
    from leasehold import logs

    logs.configure(config["service"], config["log_level"])
    _Child(config).serve(sys.stdin.buffer)


if __name__ == "__main__":
    main()
