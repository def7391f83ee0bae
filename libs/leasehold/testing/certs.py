"""A throw-away certificate authority and per-service certificates for local TLS clusters.

``make run``, ``LocalCluster(ClusterSpec(tls=True))`` and the TLS tests need a CA and one
certificate per identity, each usable as both server and client certificate (mutual TLS on every
hop). The ``cryptography`` package is not a dependency of the project, so the ``openssl`` command
line tool (OpenSSL 3) makes them. Keys are P-256 (every gRPC and etcd build accepts them, and one
takes a few milliseconds to make) and certificates live ``days`` (two by default: a test run).

Identities follow the convention of :mod:`leasehold.peer_auth`: the subject CN is
``<role>-<id>`` and a URI SAN is ``spiffe://<trust-domain>/<role>/<id>`` (the trust domain is the
cluster id). A certificate names the hosts it serves as DNS and IP SANs: ``localhost`` and
``127.0.0.1`` unless told otherwise (hosts in network namespaces pass their own addresses).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from leasehold.config import TlsConfig
from leasehold.etcd.client import TlsFiles

_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class CertFiles:
    """One identity's PEM files, and the CA that signed them."""

    cert: str
    key: str
    ca: str

    def tls(self) -> TlsConfig:
        return TlsConfig(cert=self.cert, key=self.key, ca=self.ca)

    def etcd(self) -> TlsFiles:
        return TlsFiles(self.ca, self.cert, self.key)

    def flags(self) -> list[str]:
        """The service flags presenting this identity (``--tls-cert/--tls-key/--tls-ca``)."""
        return ["--tls-cert", self.cert, "--tls-key", self.key, "--tls-ca", self.ca]

    def etcd_flags(self) -> list[str]:
        """The service flags for a mutual-TLS etcd connection with this identity."""
        return ["--etcd-ca", self.ca, "--etcd-cert", self.cert, "--etcd-key", self.key]


def _openssl(*args: str) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise FileNotFoundError("the openssl command is needed to make test certificates")
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


class CertificateAuthority:
    """A CA in ``directory`` (``ca.crt``/``ca.key``) issuing leaf certificates beside it."""

    def __init__(
        self, directory: str | Path, name: str = "leasehold-test-ca", days: int = 2
    ) -> None:
        self.days = str(days)
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cert = self.dir / "ca.crt"
        self.key = self.dir / "ca.key"
        if not self.cert.exists():
            _openssl(
                "req", "-x509", *_KEY, "-keyout", str(self.key), "-out", str(self.cert),
                "-days", self.days, "-subj", f"/CN={name}",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            )  # fmt: skip

    def issue(
        self,
        name: str,
        *,
        common_name: str | None = None,
        uris: tuple[str, ...] = (),
        dns: tuple[str, ...] = ("localhost",),
        ips: tuple[str, ...] = ("127.0.0.1",),
    ) -> CertFiles:
        """A certificate for ``name`` (file stem) with server and client usage."""
        cert, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        sans = [f"DNS:{d}" for d in dns] + [f"IP:{i}" for i in ips] + [f"URI:{u}" for u in uris]
        _openssl(
            "req", "-x509", *_KEY, "-keyout", str(key), "-out", str(cert),
            "-CA", str(self.cert), "-CAkey", str(self.key), "-days", self.days,
            "-subj", f"/CN={common_name or name}",
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
            "-addext", "extendedKeyUsage=serverAuth,clientAuth",
            "-addext", f"subjectAltName={','.join(sans)}",
        )  # fmt: skip
        return CertFiles(str(cert), str(key), str(self.cert))

    def issue_role(
        self,
        role: str,
        ident: int | str | None = None,
        *,
        trust_domain: str = "leasehold",
        dns: tuple[str, ...] = ("localhost",),
        ips: tuple[str, ...] = ("127.0.0.1",),
        stem: str | None = None,
    ) -> CertFiles:
        """A certificate carrying the Leasehold identity ``role`` (and instance ``ident``) in
        ``trust_domain``, serving the hosts ``dns`` and ``ips`` (loopback always among them,
        besides a test host's own address)."""
        name = role if ident is None else f"{role}-{ident}"
        uri = f"spiffe://{trust_domain}/{role}" + ("" if ident is None else f"/{ident}")
        ips = tuple(dict.fromkeys(("127.0.0.1", *ips)))
        return self.issue(stem or name, common_name=name, uris=(uri,), dns=dns, ips=ips)
