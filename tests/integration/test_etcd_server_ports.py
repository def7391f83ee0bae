"""EtcdServer on picked ports: a port taken between the pick and etcd's bind costs a retry on
fresh ports, not a failed test; explicit ports are never changed."""

from __future__ import annotations

import os
import socket
import time

import pytest

from leasehold.testing import etcd_server
from leasehold.testing.etcd_server import EtcdServer
from leasehold.testing.ports import free_port, wait_for_port


@pytest.fixture
def taken():
    """A loopback port something else is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_picked_port_taken_meanwhile_is_replaced(taken, monkeypatch):
    picks = iter([taken, taken])  # the first attempt's client and peer ports

    def pick(host: str = "127.0.0.1") -> int:
        return next(picks, None) or free_port(host)

    monkeypatch.setattr(etcd_server, "free_port", pick)
    started = time.monotonic()
    server = EtcdServer().start()
    try:
        assert server.client_port != taken
        assert wait_for_port("127.0.0.1", server.client_port, 1)
        assert time.monotonic() - started < 15  # the dead attempt was noticed at once
    finally:
        server.stop()


def test_explicit_ports_are_not_retried(taken):
    server = EtcdServer(client_port=taken, peer_port=free_port())
    with pytest.raises(RuntimeError, match=f"did not start on 127.0.0.1:{taken}"):
        server.start(timeout=10)
    assert server.data_dir and not os.path.exists(server.data_dir)  # its own temporary dir


def test_waiting_stops_when_the_process_has_exited():
    port = free_port()
    started = time.monotonic()
    assert not wait_for_port("127.0.0.1", port, 10, alive=lambda: False)
    assert time.monotonic() - started < 1
