"""Test hosts on one machine: a Linux bridge and one network namespace per host.

``NetnsLab`` makes a bridge in the root namespace (its address, the first of a /24, is the test
runner's own address on that network) and, per host, a network namespace joined to the bridge by
a veth pair whose inner end carries the host's own address. A process runs on a host with
``ip netns exec`` (:meth:`Host.command`) and binds and advertises that address, as a pod does.

Partitions are nftables rules inside a host's namespace that silently drop every packet to and
from chosen peers, both ways (:meth:`NetnsLab.cut`), as a cut cable or a dropping firewall would;
:meth:`NetnsLab.link_down` takes a host's link down altogether.

Names are unique per lab (``lh<id>...``), so labs of parallel test runs never collide; the /24 is
one no live lab and no interface of the machine uses, picked under a lock. ``close()`` kills every
process still in the lab's namespaces (``ip netns pids``: only the lab's own runs start processes
there), then deletes the namespaces, veths and bridge. A lab left behind by a run that died
before its clean-up is removed by the next lab made (its record names the creator's pid).
Needs root, iproute2 and nftables (``make netns-tools``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

STATE_DIR = Path("/run/leasehold-netns")
SUBNET_PREFIX = "10.231"  # labs use 10.231.<n>.0/24: test hosts in our own namespaces only
HOST_OFFSET = 10  # host i gets 10.231.<n>.<10 + i>
TABLE = "leasehold_partition"


class NetnsUnavailable(RuntimeError):
    """The machine cannot make test hosts (not root, or iproute2/nftables missing)."""


def unavailable_reason() -> str:
    """Why labs cannot be made here, or "" when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (run `make netns-tools`)"
    return ""


def _run(*argv: str, check: bool = True, input_text: str | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, input=input_text, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip() or done.stdout}")
    return done.stdout


@dataclass
class Host:
    """One test host: a namespace with its own address on the lab's bridge."""

    name: str
    netns: str
    ip: str
    veth: str  # the root namespace's end, a port of the bridge
    blocked: set[str] = field(default_factory=set)  # peers this host drops traffic with

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.netns, *argv]


class NetnsLab:
    """A bridge and named hosts; ``with NetnsLab() as lab: lab.add_host("etcd-1")``."""

    def __init__(self) -> None:
        reason = unavailable_reason()
        if reason:
            raise NetnsUnavailable(reason)
        self.id = secrets.token_hex(3)
        self.bridge = f"lhb{self.id}"
        self.hosts: dict[str, Host] = {}
        self.subnet = ""
        self._record = STATE_DIR / f"{self.id}.json"
        self._closed = False
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with self._locked():
            _sweep_dead_labs()
            self.subnet = _free_subnet()
            self._save()
            _run("ip", "link", "add", "name", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge: where the test runner's calls come from."""
        return f"{self.subnet}.1"

    @contextlib.contextmanager
    def _locked(self):
        with open(STATE_DIR / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _save(self) -> None:
        record = {
            "pid": os.getpid(),
            "subnet": self.subnet,
            "bridge": self.bridge,
            "hosts": {h.name: [h.netns, h.veth] for h in self.hosts.values()},
        }
        self._record.write_text(json.dumps(record))

    def add_host(self, name: str) -> Host:
        index = len(self.hosts)
        if index + HOST_OFFSET > 250:
            raise ValueError("a lab holds at most 240 hosts")
        host = Host(
            name=name,
            netns=f"lh{self.id}-{name}",
            ip=f"{self.subnet}.{HOST_OFFSET + index}",
            veth=f"lh{self.id}{index:02d}",
        )
        self.hosts[name] = host
        self._save()  # recorded before it exists: a sweep removes a half-made host too
        inner = f"{host.veth}p"
        _run("ip", "netns", "add", host.netns)
        _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", inner)
        _run("ip", "link", "set", inner, "netns", host.netns)
        _run("ip", "link", "set", host.veth, "master", self.bridge, "up")
        _run("ip", "-n", host.netns, "link", "set", inner, "name", "eth0")
        _run("ip", "-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        _run("ip", "-n", host.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", host.netns, "link", "set", "lo", "up")
        return host

    # ----------------------------------------------------------------------------- faults

    def cut(self, name: str, peers: list[str]) -> None:
        """Drop every packet between host ``name`` and ``peers`` (host names, or addresses such
        as :attr:`gateway`), both ways, until :meth:`heal`."""
        host = self.hosts[name]
        host.blocked |= {self.hosts[p].ip if p in self.hosts else p for p in peers}
        self._apply_rules(host)

    def heal(self, name: str | None = None) -> None:
        """Remove the cuts of host ``name`` (of every host when None) and bring links up."""
        for host in [self.hosts[name]] if name else list(self.hosts.values()):
            host.blocked.clear()
            self._apply_rules(host)
            _run("ip", "-n", host.netns, "link", "set", "eth0", "up")

    def link_down(self, name: str) -> None:
        """Take host ``name``'s link down: it is cut from every other host."""
        _run("ip", "-n", self.hosts[name].netns, "link", "set", "eth0", "down")

    def _apply_rules(self, host: Host) -> None:
        # "add table; delete table; add table {...}" replaces the table in one transaction.
        script = f"table inet {TABLE}\ndelete table inet {TABLE}\n"
        if host.blocked:
            peers = ", ".join(sorted(host.blocked))
            script += (
                f"table inet {TABLE} {{\n"
                f"  chain input {{ type filter hook input priority 0; policy accept; "
                f"ip saddr {{ {peers} }} drop; }}\n"
                f"  chain output {{ type filter hook output priority 0; policy accept; "
                f"ip daddr {{ {peers} }} drop; }}\n"
                "}\n"
            )
        _run("ip", "netns", "exec", host.netns, "nft", "-f", "-", input_text=script)

    # ---------------------------------------------------------------------------- clean-up

    def close(self) -> None:
        """Kill what still runs in the lab's namespaces, delete them, the veths and the bridge."""
        if self._closed:
            return
        self._closed = True
        with self._locked():
            _teardown(self.bridge, [(h.netns, h.veth) for h in self.hosts.values()])
            self._record.unlink(missing_ok=True)

    def __enter__(self) -> NetnsLab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pids_in(netns: str) -> list[int]:
    out = _run("ip", "netns", "pids", netns, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def _teardown(bridge: str, hosts: list[tuple[str, str]]) -> None:
    for netns, _ in hosts:
        for pid in _pids_in(netns):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_pids_in(netns) for netns, _ in hosts) and time.monotonic() < deadline:
        time.sleep(0.05)
    for netns, veth in hosts:
        _run("ip", "link", "del", veth, check=False)  # removes its peer in the namespace too
        _run("ip", "netns", "del", netns, check=False)
    _run("ip", "link", "del", bridge, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_dead_labs() -> None:
    """Remove labs whose creating process is gone (called with the lock held)."""
    for path in STATE_DIR.glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if _alive(int(record.get("pid", 0))):
            continue
        _teardown(record["bridge"], [tuple(v) for v in record.get("hosts", {}).values()])
        path.unlink(missing_ok=True)


def _free_subnet() -> str:
    """A 10.231.<n> no live lab records and no interface of the machine has (lock held)."""
    used = set()
    for path in STATE_DIR.glob("*.json"):
        with contextlib.suppress(OSError, json.JSONDecodeError, KeyError):
            used.add(json.loads(path.read_text())["subnet"])
    addresses = _run("ip", "-4", "-o", "addr", "show")
    for n in range(256):
        subnet = f"{SUBNET_PREFIX}.{n}"
        if subnet not in used and f" {subnet}." not in addresses:
            return subnet
    raise NetnsUnavailable("no free 10.231.x.0/24 for a lab")
