"""Where the CLI and the SDK find their admin address and TLS identity, with no flags needed.

In order, the first that says anything wins:

1. flags (CLI) or arguments (SDK: ``tls=TlsConfig(...)``; ``TlsConfig()`` is plaintext);
2. the environment: ``LEASEHOLD_TLS_CA``/``_CERT``/``_KEY``, or ``LEASEHOLD_INSECURE=1``;
3. a client config file: ``$LEASEHOLD_CLIENT_CONFIG``, else
   ``$XDG_CONFIG_HOME/leasehold/client.json`` (``~/.config/leasehold/client.json``). ``make run``
   writes one for the cluster it starts::

       {"admin": "127.0.0.1:9093",
        "tls": {"ca": "run/certs/ca.crt", "cert": "...client.crt", "key": "...client.key"}}

   or ``{"insecure": true}`` for a plaintext cluster. Relative paths are relative to the file.
   A file naming an ``admin`` applies to that admin address only (a client of another cluster
   does not pick up its certificates).

TLS settings are all or nothing: a certificate without its CA or key, or a file that is not
there, is a one-line :class:`ClientConfigError`; nothing falls back to plaintext. With no
settings anywhere the CLI refuses to guess (``--insecure`` says plaintext); the SDK connects in
plaintext, as ``tls=TlsConfig()`` would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from leasehold.config import TlsConfig, TlsSettingsError, check_tls_files

DEFAULT_ADMIN = "127.0.0.1:9093"
_TRUE = ("1", "true", "yes", "on")


class ClientConfigError(ValueError):
    """Client TLS settings that cannot be used as given (one line)."""


@dataclass(frozen=True)
class ClientSettings:
    """What a client connects with: the admin address and TLS (empty TlsConfig: plaintext)."""

    admin: str
    tls: TlsConfig
    source: str  # where the TLS decision came from, for messages


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    explicit = environ.get("LEASEHOLD_CLIENT_CONFIG")
    if explicit:
        return Path(explicit)
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "leasehold" / "client.json"


def _files(ca: str, cert: str, key: str, where: str) -> TlsConfig:
    if not (ca or cert or key):
        raise ClientConfigError(f"{where}: no TLS files named")
    if not ca:
        raise ClientConfigError(f"{where}: a client certificate needs the CA (--tls-ca) too")
    if not cert and not key:
        raise ClientConfigError(
            f"{where}: mutual TLS needs a client certificate and key (--tls-cert, --tls-key)"
        )
    try:
        return check_tls_files(cert, key, ca)
    except TlsSettingsError as exc:
        raise ClientConfigError(f"{where}: {exc}") from None


def read_config_file(path: Path) -> dict | None:
    """The file's settings, None if there is no file; ClientConfigError if it is unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ClientConfigError(f"client config {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ClientConfigError(f"client config {path}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ClientConfigError(f"client config {path}: expected a JSON object")
    return data


def _from_file(path: Path, data: dict) -> TlsConfig:
    if data.get("insecure") is True:
        return TlsConfig()
    tls = data.get("tls")
    if not isinstance(tls, dict):
        raise ClientConfigError(f'client config {path}: needs "tls" or "insecure": true')

    def resolve(name: str) -> str:
        value = tls.get(name, "")
        if not isinstance(value, str):
            raise ClientConfigError(f"client config {path}: tls.{name} must be a path")
        return str(path.parent / value) if value and not os.path.isabs(value) else value

    return _files(resolve("ca"), resolve("cert"), resolve("key"), f"client config {path}")


def resolve(
    *,
    admin: str | None = None,
    ca: str = "",
    cert: str = "",
    key: str = "",
    insecure: bool = False,
    environ: Mapping[str, str] | None = None,
    required: bool = True,
) -> ClientSettings:
    """Settings from flags, then environment, then the client config file (module doc).

    With ``required`` (the CLI) and nothing said anywhere, ClientConfigError; without it (the
    SDK), plaintext.
    """
    environ = os.environ if environ is None else environ
    if insecure and (ca or cert or key):
        raise ClientConfigError("--insecure cannot be combined with --tls-ca/--tls-cert/--tls-key")
    path = config_path(environ)
    data = read_config_file(path)
    file_admin = data.get("admin") if data else None
    if file_admin is not None and not isinstance(file_admin, str):
        raise ClientConfigError(f'client config {path}: "admin" must be host:port')
    address = admin or environ.get("LEASEHOLD_ADMIN") or file_admin or DEFAULT_ADMIN
    if insecure:
        return ClientSettings(address, TlsConfig(), "--insecure")
    if ca or cert or key:
        return ClientSettings(address, _files(ca, cert, key, "TLS flags"), "flags")
    env_files = [environ.get(f"LEASEHOLD_TLS_{n}", "") for n in ("CA", "CERT", "KEY")]
    if environ.get("LEASEHOLD_INSECURE", "").lower() in _TRUE:
        if any(env_files):
            raise ClientConfigError("LEASEHOLD_INSECURE cannot be combined with LEASEHOLD_TLS_*")
        return ClientSettings(address, TlsConfig(), "LEASEHOLD_INSECURE")
    if any(env_files):
        return ClientSettings(address, _files(*env_files, "LEASEHOLD_TLS_*"), "environment")
    if data is not None and (file_admin is None or file_admin == address):
        return ClientSettings(address, _from_file(path, data), str(path))
    if required:
        raise ClientConfigError(
            f"no TLS settings for {address}: give --tls-ca, --tls-cert and --tls-key (or "
            f"LEASEHOLD_TLS_*), a client config file ({path}; make run writes one), or "
            "--insecure for a plaintext cluster"
        )
    return ClientSettings(address, TlsConfig(), "none")


def client_tls(address: str | None, tls: TlsConfig | None) -> TlsConfig:
    """The SDK's TLS for ``address``: ``tls`` when given, else what :func:`resolve` finds."""
    if tls is not None:
        return tls
    return resolve(admin=address, required=False).tls
