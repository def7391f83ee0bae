"""deploy/compose: valid against the compose-spec schema, clean under a compose security linter
(base and TLS override merged, as Compose runs them), and the cluster the issue asks for."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from deploy_checks import env_flag, image_findings
from deploy_tools import COMPOSE, ServiceHelp, console_scripts, load_yaml, python_tool, run

BASE = COMPOSE / "compose.yaml"
TLS = COMPOSE / "compose.tls.yaml"
ETCD = ["etcd-1", "etcd-2", "etcd-3"]
CONTROLLERS = {"controller-1": "1", "controller-2": "2"}
BROKERS = {"broker-1": "1", "broker-2": "2", "broker-3": "3"}
LEASEHOLD = [*CONTROLLERS, *BROKERS, "admin"]
TLS_ENV = {
    "LEASEHOLD_INSECURE": "false",  # the base says plaintext explicitly; TLS turns it off
    "LEASEHOLD_TLS_CERT": "/etc/leasehold/tls/tls.crt",
    "LEASEHOLD_TLS_KEY": "/etc/leasehold/tls/tls.key",
    "LEASEHOLD_TLS_CA": "/etc/leasehold/tls/ca.crt",
    "LEASEHOLD_ETCD_CA": "/etc/leasehold/etcd-tls/ca.crt",
    "LEASEHOLD_ETCD_CERT": "/etc/leasehold/etcd-tls/tls.crt",
    "LEASEHOLD_ETCD_KEY": "/etc/leasehold/etcd-tls/tls.key",
}


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return load_yaml(BASE)["services"]


@pytest.fixture(scope="module")
def tls() -> dict[str, Any]:
    return load_yaml(TLS)["services"]


def check_schema(*paths: Path) -> Any:
    python_tool("check_jsonschema")
    args = ["--builtin-schema", "vendor.compose-spec", *map(str, paths)]
    return run([sys.executable, "-m", "check_jsonschema", *args])


def lint(directory: Path) -> Any:
    python_tool("compose_lint")
    args = ["check", "--fail-on", "low", "--strict-config", "--skip-suppressed", "-q"]
    return run([sys.executable, "-m", "compose_lint", *args], cwd=directory)


def test_both_files_match_the_compose_spec_schema():
    result = check_schema(BASE, TLS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_an_unknown_key(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  a:\n    image: x:1\n    enviroment: {A: b}\n")
    result = check_schema(bad)
    assert result.returncode != 0 and "enviroment" in result.stdout


def stage(directory: Path, *files: Path, selected: str) -> Path:
    for f in (*files, COMPOSE / ".compose-lint.yml"):
        shutil.copy(f, directory / f.name)
    (directory / ".env").write_text(f"COMPOSE_FILE={selected}\n")
    return directory


@pytest.mark.parametrize("selected", ["compose.yaml", "compose.yaml:compose.tls.yaml"])
def test_compose_lint_finds_nothing(tmp_path, selected):
    """Linted the way Compose loads them: COMPOSE_FILE in a .env selects base (+ override)."""
    result = lint(stage(tmp_path, BASE, TLS, selected=selected))
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_lint_fails_a_privileged_service(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  a:\n    image: x:1\n    privileged: true\n")
    result = lint(stage(tmp_path, selected="compose.yaml"))
    assert result.returncode == 1 and "CL-0002" in result.stdout


def test_the_cluster_the_issue_asks_for(base):
    assert sorted(base) == sorted([*ETCD, "jaeger", *LEASEHOLD])
    for name in ETCD:
        env = base[name]["environment"]
        assert base[name]["networks"]["leasehold"]["aliases"] == ["etcd"]
        assert env["ETCD_NAME"] == name
        members = [m.split("=")[0] for m in env["ETCD_INITIAL_CLUSTER"].split(",")]
        assert members == ETCD
    ids = {n: base[n]["environment"]["LEASEHOLD_CONTROLLER_ID"] for n in CONTROLLERS}
    assert ids == CONTROLLERS
    ids = {n: base[n]["environment"]["LEASEHOLD_BROKER_ID"] for n in BROKERS}
    assert ids == BROKERS
    data = {base[n]["volumes"][0] for n in BROKERS}
    assert data == {f"{n}-data:/var/lib/leasehold/data" for n in BROKERS}


def test_every_service_traces_to_jaeger_and_advertises_its_own_name(base):
    for name in LEASEHOLD:
        env = base[name]["environment"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4317", name
        assert env["OTEL_SERVICE_NAME"] == name.split("-")[0].replace("broker", "broker-agent")
        assert env["OTEL_RESOURCE_ATTRIBUTES"] == f"service.instance.id={name}"
        assert env["LEASEHOLD_ADVERTISED_HOST"] == name


def test_images_are_pinned_and_ports_stay_on_loopback(base):
    compose = load_yaml(BASE)
    for name, svc in base.items():
        assert image_findings(svc["image"]) == [], name
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
        for volume in svc.get("volumes", []):
            assert volume.split(":")[0] in compose["volumes"], (name, volume)


def test_the_tls_override_turns_on_tls_for_every_hop(base, tls):
    assert set(tls) == set(base) - {"jaeger"}
    for name in LEASEHOLD:
        assert tls[name]["environment"] == TLS_ENV, name
        assert sorted(tls[name]["volumes"]) == sorted(
            [
                f"./certs/{name}:/etc/leasehold/tls:ro",
                "./certs/etcd-client:/etc/leasehold/etcd-tls:ro",
            ]
        )
    for name in ETCD:
        env = tls[name]["environment"]
        urls = [v for k, v in env.items() if k.endswith("_URLS") or k == "ETCD_INITIAL_CLUSTER"]
        assert urls and all("http://" not in u and "https://" in u for u in urls), name
        assert env["ETCD_CLIENT_CERT_AUTH"] == env["ETCD_PEER_CLIENT_CERT_AUTH"] == "true"
        assert tls[name]["volumes"] == [f"./certs/{name}:/etc/etcd/tls:ro"]
        assert "https://127.0.0.1:2379" in " ".join(tls[name]["healthcheck"]["test"])


def test_every_setting_is_a_flag_the_service_accepts(base, tls):
    scripts, help_ = console_scripts(), ServiceHelp()
    unknown = {}
    for name in LEASEHOLD:
        command = base[name]["command"][0]
        assert command in scripts, name
        settings = {**base[name]["environment"], **tls[name]["environment"]}
        flags = {env_flag(k) for k in settings if env_flag(k)}
        missing = flags - help_.flags(scripts[command])
        if missing:
            unknown[name] = sorted(missing)
    assert unknown == {}
