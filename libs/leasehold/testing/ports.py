"""Free loopback ports for processes a test or ``make run`` starts."""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Callable

# Ports handed out below the kernel's ephemeral range (``ip_local_port_range``): a port the
# kernel picks for ``bind(0)`` comes from that range, and between our check and the service's
# own bind an outgoing connection (any client on the machine) may take it as its source port.
# Seen in ``make test``: a broker's metrics port "already in use" a second after it was picked.
_LOW = 20_000
_handed: set[int] = set()


def _ephemeral_start(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on, from below the ephemeral range when there is one, and not
    handed out before by this process (two services started together get different ports)."""
    top = _ephemeral_start()
    if top - _LOW >= 1_000:
        for _ in range(200):
            port = random.randrange(_LOW, top)
            if port not in _handed and _bindable(host, port):
                _handed.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    _handed.add(port)
    return port


def wait_for_port(
    host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None
) -> bool:
    """True once ``port`` accepts connections; False after ``timeout``, or at once when
    ``alive`` says the process that should listen has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            if alive is not None and not alive():
                return False
            time.sleep(0.05)
    return False


def listening_pid_owns(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` (in its own network
    namespace); None when /proc cannot tell (not Linux, or no permission).

    A port that accepts connections may belong to someone else: a process that failed to bind
    a port another took meanwhile exits, but the port still answers."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False  # the process is gone
    except OSError:
        return None
    inodes = set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue  # no IPv6, or the process is gone (then nothing listens for it)
        except OSError:
            return None
        for row in rows:
            cols = row.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                return True
    return False
