"""Brokers reach the active controller even when two controllers share one address.

A Kubernetes ClusterIP Service routes each new connection to a Ready pod, and an HTTP/2
connection stays where it was made. Here a tiny TCP proxy plays the Service: each connection it
accepts goes to the controller that is active at that moment. The broker's controller client
first connects through it to controller A; A is then paused past its lease, B takes office, A
resumes as a standby answering NOT_CONTROLLER on the pinned connection. The client must drop
that connection and dial again (landing on B), not retry the pinned one until its deadline.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from leasehold.controller.v1 import controller_pb2
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster
from services.broker_agent.controller_client import ControllerClient
from services.broker_agent.model import Code

pytestmark = pytest.mark.e2e
SERVICE = "leasehold.controller.v1.ControllerService"


def active_of(addresses: list[str]) -> str | None:
    """The controller whose ControllerService health is SERVING (what readiness checks)."""
    for address in addresses:
        with grpc.insecure_channel(address) as ch:
            try:
                status = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(service=SERVICE), timeout=0.5
                )
            except grpc.RpcError:
                continue
        if status.status == health_pb2.HealthCheckResponse.SERVING:
            return address
    return None


class ServiceProxy:
    """One listening address in front of several controllers, connection by connection."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.routed: list[str] = []
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            target = active_of(self.backends)
            if target is None:
                conn.close()
                continue
            self.routed.append(target)
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self.listener.close()


@pytest.fixture
def cluster(tmp_path):
    c = LocalCluster(ClusterSpec(controllers=2, brokers=1, session_ttl=2),
                     workdir=str(tmp_path / "cluster"))  # fmt: skip
    try:
        c.start()
        yield c
    finally:
        for proc in c.controllers.values():
            proc.resume()
        c.stop()


async def test_a_pinned_connection_to_a_deposed_controller_is_dialled_again(cluster):
    addresses = [p.address for p in cluster.controllers.values()]
    deadline = time.monotonic() + 30
    while active_of(addresses) is None:
        assert time.monotonic() < deadline, "no active controller"
        await asyncio.sleep(0.2)
    proxy = ServiceProxy(addresses)
    # The Service's address is all the client knows: both the election (a registration in a
    # keyspace of its own) and the cached endpoint name the proxy.
    shared = Keyspace("behind-a-service")
    async with EtcdClient([cluster.etcd.endpoint]) as etcd:
        reg = metadata_pb2.ControllerRegistration(host="127.0.0.1", port=proxy.port)
        await etcd.put(shared.controller_election_prefix + b"1", reg.SerializeToString())
        client = ControllerClient(etcd, shared, lambda: ("127.0.0.1", proxy.port),
                                  backoff_ms=100)  # fmt: skip
        request = controller_pb2.ControlledShutdownRequest(broker_id=99, broker_epoch=1)
        try:
            first = await client.controlled_shutdown(request, timeout=10)
            assert first.error_code != Code.NOT_CONTROLLER
            old = active_of(addresses)
            paused = next(p for p in cluster.controllers.values() if p.address == old)
            paused.pause()  # past its lease: the other controller takes office
            deadline = time.monotonic() + 30
            while active_of([a for a in addresses if a != old]) is None:
                assert time.monotonic() < deadline, "the standby never took office"
                await asyncio.sleep(0.2)
            paused.resume()  # back, deposed, answering NOT_CONTROLLER on the old connection
            deadline = time.monotonic() + 30
            while active_of([old]) is not None:
                assert time.monotonic() < deadline, "the old controller still claims office"
                await asyncio.sleep(0.2)
            answer = await client.controlled_shutdown(request, timeout=15)
            assert answer.error_code != Code.NOT_CONTROLLER
            assert client.redials >= 1
            assert proxy.routed[-1] != old and old in proxy.routed
        finally:
            await client.close()
            proxy.close()
