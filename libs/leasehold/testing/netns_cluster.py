"""A Leasehold cluster whose every process is a host of its own, as pods are.

``NetnsCluster`` is a :class:`~leasehold.testing.cluster.LocalCluster` placed on a
:class:`~leasehold.testing.netns.NetnsLab`: etcd runs as three members (``etcd-1..3``), and each
controller, broker agent and the admin service runs in its own network namespace with its own
address on the lab's bridge, binding and advertising that address on the role's standard port.
Nothing listens on loopback; every call crosses the bridge, so the lab's cuts (nftables drops)
partition the cluster as a network would. The test runner's own clients call from the bridge's
gateway address (:attr:`NetnsLab.gateway`).

Certificates are issued per process with its host's address as IP SAN (the etcd members' with
theirs), but ``ClusterSpec(tls=True)`` is refused for now: over TLS, the etcd client cannot yet
reach several members by address (gRPC verifies an ``ipv4:a,b,c`` target against one name, and
the handshake fails), and a single endpoint would give up the failover between members.

    with NetnsLab() as lab:
        cluster = NetnsCluster(ClusterSpec(brokers=3), lab).start()
        try:
            ...
        finally:
            cluster.stop()
"""

from __future__ import annotations

from leasehold.testing.cluster import ClusterSpec, LocalCluster, Proc
from leasehold.testing.etcd_members import EtcdMembers
from leasehold.testing.netns import Host, NetnsLab

ETCD_MEMBERS = 3
# Each host has an address of its own, so every role listens on its usual port.
PORTS = {"controller": 9191, "broker": 9092, "admin": 9093}


class NetnsCluster(LocalCluster):
    def __init__(
        self,
        spec: ClusterSpec,
        lab: NetnsLab,
        workdir: str | None = None,
        etcd_members: int = ETCD_MEMBERS,
    ) -> None:
        if spec.tls:
            raise ValueError("NetnsCluster runs plaintext for now (see the module's docstring)")
        self.lab = lab
        super().__init__(spec, workdir)
        hosts = [self._host(f"etcd-{i}") for i in range(1, etcd_members + 1)]
        tls = {}
        if self.ca is not None:
            server = self.ca.issue("etcd-members", ips=("127.0.0.1", *(h.ip for h in hosts)))
            tls = dict(
                cert_file=server.cert,
                key_file=server.key,
                trusted_ca_file=server.ca,
                client_cert_auth=True,
            )
        self.etcd = EtcdMembers(hosts, self.workdir, client_tls=self.etcd_client_tls, **tls)

    def _host(self, name: str) -> Host:
        return self.lab.hosts.get(name) or self.lab.add_host(name)

    def host_of(self, proc: Proc) -> Host:
        """The lab host ``proc`` runs on."""
        return self.lab.hosts[proc.name]

    def _place(self, name: str) -> tuple[str, tuple[str, ...]]:
        host = self._host(name)
        return host.ip, tuple(host.command([]))

    def _port(self, base: int, index: int) -> int:
        return base or 0  # the role's standard port, chosen in _proc

    def _proc(self, name: str, args: list[str], port: int, identity) -> Proc:
        return super()._proc(name, args, port or PORTS[identity[0]], identity)

    def start(self, timeout: float = 90.0) -> NetnsCluster:
        super().start(timeout)
        return self
