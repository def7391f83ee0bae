"""A real etcd cluster of several members, each on a test host of its own.

Every member is an :class:`~leasehold.testing.etcd_server.EtcdServer` on its host's address with
etcd's standard ports (2379 clients, 2380 peers: each host has its own address, so nothing clashes).
The members start together and are ready once each serves its client port and the cluster answers
a linearizable read. Clients get every member's endpoint (:attr:`EtcdMembers.endpoints`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from leasehold.etcd.client import TlsFiles
from leasehold.testing.etcd_server import EtcdServer
from leasehold.testing.netns import Host
from leasehold.testing.ports import wait_for_port

CLIENT_PORT = 2379
PEER_PORT = 2380


class EtcdMembers:
    def __init__(
        self,
        hosts: Sequence[Host],
        workdir: Path,
        client_tls: TlsFiles | None = None,
        **tls: object,
    ) -> None:
        self.hosts = list(hosts)
        self.client_tls = client_tls  # what this module's own readiness probe presents
        self.members = [
            EtcdServer(
                data_dir=str(workdir / f"{h.name}"),
                client_port=CLIENT_PORT,
                peer_port=PEER_PORT,
                name=h.name,
                log_path=str(workdir / f"{h.name}.log"),
                host=h.ip,
                prefix=tuple(h.command([])),
                **tls,
            )
            for h in self.hosts
        ]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.initial_cluster = initial

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    @property
    def endpoint(self) -> str:
        """The first member's endpoint (code that takes one endpoint talks to it)."""
        return self.members[0].endpoint

    @property
    def pid(self) -> int | None:
        return self.members[0].pid

    def start(self, timeout: float = 30.0) -> EtcdMembers:
        procs = [m.launch() for m in self.members]
        deadline = time.monotonic() + timeout
        for m, proc in zip(self.members, procs, strict=True):
            left = max(0.5, deadline - time.monotonic())
            alive = lambda p=proc: p.poll() is None  # noqa: E731
            if not wait_for_port(m.host, m.client_port, left, alive=alive):
                self.stop()
                raise RuntimeError(f"etcd member {m.name} did not serve on {m.endpoint}")
        self._wait_quorum(max(1.0, deadline - time.monotonic()))
        return self

    def _wait_quorum(self, timeout: float) -> None:
        from leasehold.etcd import EtcdClient
        from leasehold.etcd.client import EtcdError

        async def probe() -> None:
            end = time.monotonic() + timeout
            async with EtcdClient(self.endpoints, tls=self.client_tls, timeout=2.0) as client:
                while True:
                    try:
                        await client.get(b"/quorum-probe")
                        return
                    except EtcdError:
                        if time.monotonic() > end:
                            raise
                        await asyncio.sleep(0.1)

        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(asyncio.run, probe()).result()

    def kill(self) -> None:
        for m in self.members:
            m.kill()

    def pause(self) -> None:
        for m in self.members:
            m.pause()

    def resume(self) -> None:
        for m in self.members:
            m.resume()

    def stop(self) -> None:
        for m in self.members:
            m.stop()
