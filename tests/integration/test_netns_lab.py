"""Test hosts in network namespaces (leasehold.testing.netns): reachability, cuts, clean-up.

Real namespaces, veths, a bridge and nftables rules; needs root (CI runs as root).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from leasehold.testing.netns import NetnsLab, unavailable_reason

pytestmark = pytest.mark.skipif(bool(unavailable_reason()), reason=unavailable_reason() or "ok")


PORT = 7000
LISTEN = "import socket, time; s = socket.socket(); s.bind(({ip!r}, {port})); s.listen(); " + (
    "time.sleep(120)"
)
CONNECT = "import socket; socket.create_connection(({ip!r}, {port}), timeout=1)"


def _listen(lab: NetnsLab, name: str) -> subprocess.Popen:
    """A socket listening on host ``name`` (connections complete in its backlog)."""
    code = LISTEN.format(ip=lab.hosts[name].ip, port=PORT)
    return subprocess.Popen(lab.hosts[name].command([sys.executable, "-c", code]))


def _ping(lab: NetnsLab, source: str, target: str) -> bool:
    """Whether a TCP connection from ``source`` to ``target`` (a host or an address) opens."""
    ip = lab.hosts[target].ip if target in lab.hosts else target
    argv = lab.hosts[source].command([sys.executable, "-c", CONNECT.format(ip=ip, port=PORT)])
    return subprocess.run(argv, capture_output=True).returncode == 0


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_hosts_reach_each_other_until_cut_and_again_after_the_heal():
    with NetnsLab() as lab, NetnsLab() as other:
        a, b, c = (lab.add_host(n) for n in ("a", "b", "c"))
        other.add_host("a")
        for name in ("a", "b", "c"):  # the lab's close() kills them with their namespaces
            _listen(lab, name)
        gateway = socket.socket()
        gateway.bind((lab.gateway, PORT))
        gateway.listen()
        time.sleep(1.0)
        assert lab.subnet != other.subnet and a.netns != other.hosts["a"].netns
        assert len({a.ip, b.ip, c.ip}) == 3
        assert _ping(lab, "a", "b") and _ping(lab, "a", "c")
        lab.cut("a", ["b"])
        assert not _ping(lab, "a", "b") and not _ping(lab, "b", "a")  # both ways
        assert _ping(lab, "a", "c") and _ping(lab, "b", "c")  # only that pair
        lab.cut("a", [lab.gateway])
        assert not _ping(lab, "a", lab.gateway)
        lab.heal("a")
        assert _ping(lab, "a", "b") and _ping(lab, "a", lab.gateway)
        lab.link_down("c")
        assert not _ping(lab, "a", "c")
        lab.heal()
        assert _ping(lab, "a", "c")
        names = [h.netns for h in (*lab.hosts.values(), *other.hosts.values())]
        gateway.close()
    left = _namespaces()
    assert not [n for n in names if n in left]


def test_a_lab_whose_creator_died_is_removed_by_the_next_lab():
    script = (
        "import os, signal\n"
        "from leasehold.testing.netns import NetnsLab\n"
        "lab = NetnsLab(); lab.add_host('orphan'); print(lab.id, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    lab_id = done.stdout.strip()
    assert lab_id and f"lh{lab_id}-orphan" in _namespaces()
    with NetnsLab():
        pass
    assert f"lh{lab_id}-orphan" not in _namespaces()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"lhb{lab_id}" not in links
