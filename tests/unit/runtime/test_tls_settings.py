"""Secure by default: services need certificates or an explicit --insecure; the CLI and SDK find
their TLS settings (flags, environment, client config file) and never fall back to plaintext.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from leasehold.cli.main import build_cli
from leasehold.client_config import ClientConfigError, resolve
from leasehold.config import TlsConfig
from services.admin.config import parse_args as admin_args

CLEAN = ("LEASEHOLD_TLS_CA", "LEASEHOLD_TLS_CERT", "LEASEHOLD_TLS_KEY", "LEASEHOLD_INSECURE")


@pytest.fixture
def pem(tmp_path):
    """Three files standing for a CA, certificate and key (only their existence matters)."""
    paths = {}
    for short, name in (("ca", "ca.crt"), ("crt", "client.crt"), ("key", "client.key")):
        (tmp_path / name).write_text("-----BEGIN-----\n")
        paths[short] = str(tmp_path / name)
    return paths


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    for name in CLEAN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LEASEHOLD_CLIENT_CONFIG", str(tmp_path / "no-such-config.json"))


# ---- services ----------------------------------------------------------------------------------


def test_a_service_without_certificates_or_insecure_refuses_to_start(capsys):
    with pytest.raises(SystemExit) as caught:
        admin_args([])
    assert caught.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "TLS is required" in err and "--insecure" in err and "\n" not in err


def test_insecure_is_plaintext_and_certificates_are_mutual_tls(pem):
    assert admin_args(["--insecure"]).common.tls == TlsConfig()
    flags = ["--tls-cert", pem["crt"], "--tls-key", pem["key"]]
    config = admin_args([*flags, "--tls-ca", pem["ca"]])
    assert config.common.tls == TlsConfig(pem["crt"], pem["key"], pem["ca"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls-cert", "{crt}"], "needs --tls-key, --tls-ca as well"),
        (["--tls-cert", "{crt}", "--tls-key", "{key}", "--tls-ca", "/nope"],
         "--tls-ca: no such file: /nope"),
        (["--insecure", "--tls-cert", "{crt}"], "cannot be combined"),
    ],
)  # fmt: skip
def test_half_configured_tls_is_a_one_line_error(pem, capsys, argv, message):
    with pytest.raises(SystemExit):
        admin_args([a.format(**pem) for a in argv])
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_the_admin_accepts_small_requests_only_by_default():
    assert admin_args(["--insecure"]).common.max_receive_bytes == 2 * 1024 * 1024
    tuned = admin_args(["--insecure", "--max-receive-bytes", "65536"])
    assert tuned.common.max_receive_bytes == 65536


# ---- client settings ---------------------------------------------------------------------------


def test_nothing_configured_is_an_error_for_the_cli_and_plaintext_for_the_sdk():
    with pytest.raises(ClientConfigError, match="--insecure"):
        resolve()
    assert resolve(required=False).tls == TlsConfig()


def test_flags_then_environment_then_file(pem, tmp_path, monkeypatch):
    flags = resolve(ca=pem["ca"], cert=pem["crt"], key=pem["key"])
    assert (flags.tls.ca, flags.source) == (pem["ca"], "flags")
    monkeypatch.setenv("LEASEHOLD_TLS_CA", pem["ca"])
    monkeypatch.setenv("LEASEHOLD_TLS_CERT", pem["crt"])
    monkeypatch.setenv("LEASEHOLD_TLS_KEY", pem["key"])
    assert resolve().source == "environment"
    for name in ("LEASEHOLD_TLS_CA", "LEASEHOLD_TLS_CERT", "LEASEHOLD_TLS_KEY"):
        monkeypatch.delenv(name)
    config = tmp_path / "client.json"
    config.write_text(
        json.dumps(
            {
                "admin": "127.0.0.1:9093",
                "tls": {"ca": "ca.crt", "cert": "client.crt", "key": "client.key"},
            }
        )
    )
    monkeypatch.setenv("LEASEHOLD_CLIENT_CONFIG", str(config))
    found = resolve()
    assert (found.admin, found.tls.cert) == ("127.0.0.1:9093", pem["crt"])
    # A file naming its cluster's admin does not hand its certificates to another cluster.
    assert resolve(admin="127.0.0.1:1", required=False).tls == TlsConfig()
    assert resolve(admin="127.0.0.1:1", insecure=True).tls == TlsConfig()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cert": "{crt}", "key": "{key}"}, "needs the CA (--tls-ca) too"),
        ({"ca": "{ca}"}, "client certificate and key"),
        ({"ca": "{ca}", "cert": "{crt}"}, "--tls-key"),
        ({"ca": "/missing/ca.crt", "cert": "{crt}", "key": "{key}"},
         "no such file: /missing/ca.crt"),
        ({"ca": "{ca}", "insecure": True}, "cannot be combined"),
    ],
)  # fmt: skip
def test_half_configured_client_tls_never_falls_back_to_plaintext(pem, kwargs, message):
    args = {k: v.format(**pem) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(ClientConfigError) as caught:
        resolve(**args)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "argv",
    [
        ["--tls-cert", "/missing/client.crt", "--tls-key", "/missing/k", "--tls-ca", "/m/ca"],
        ["--tls-cert", "{crt}", "--tls-key", "{key}"],
        [],
    ],
)
def test_the_cli_prints_one_line_and_exits_2(pem, argv):
    args = [a.format(**pem) for a in argv]
    result = CliRunner().invoke(build_cli(), [*args, "cluster", "describe"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
