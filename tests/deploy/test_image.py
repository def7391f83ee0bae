"""deploy/Dockerfile and its health check: hadolint-clean, multi-stage, pinned, non-root, and a
build context that holds what the image copies; healthcheck.py asks the real gRPC health API."""

from __future__ import annotations

import re
import tomllib
from concurrent import futures

import grpc
import pytest
from deploy_tools import DEPLOY, REPO, console_scripts, load_script, run, tool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from leasehold.testing.ports import free_port

DOCKERFILE = DEPLOY / "Dockerfile"
IGNORE = DEPLOY / "Dockerfile.dockerignore"
BASE_IMAGE = re.compile(r"^python:(3\.\d+)\.\d+-slim-bookworm$")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def hadolint(path) -> object:
    return run([tool("hadolint"), "--no-color", "--failure-threshold", "style", str(path)])


def test_hadolint_finds_nothing():
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_fails_a_root_image_on_latest(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nUSER root\nRUN pip install grpcio\n")
    result = hadolint(bad)
    assert result.returncode != 0
    assert {"DL3007", "DL3002", "DL3013"} <= set(re.findall(r"DL\d{4}", result.stdout))


def test_two_stages_on_the_same_exactly_pinned_base_matching_the_project_python():
    stages = [args.split() for op, args in instructions() if op == "FROM"]
    assert [s[1:] for s in stages] == [["AS", "builder"], ["AS", "runtime"]]
    images = {s[0] for s in stages}
    assert len(images) == 1
    match = BASE_IMAGE.match(images.pop())
    assert match is not None
    with open(REPO / "pyproject.toml", "rb") as f:
        requires = tomllib.load(f)["project"]["requires-python"]
    assert requires == f">={match.group(1)},<3.{int(match.group(1).split('.')[1]) + 1}"


def test_the_runtime_stage_runs_as_a_fixed_unprivileged_user():
    ops = instructions()
    runtime = ops[max(i for i, (op, _) in enumerate(ops) if op == "FROM") :]
    args = dict(a.split("=", 1) for op, a in runtime if op == "ARG")
    users = [a for op, a in runtime if op == "USER"]
    assert len(users) == 1
    uid, gid = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], users[0]).split(":")
    assert int(uid) >= 10000 and int(gid) >= 10000
    copies = [a for op, a in runtime if op == "COPY"]
    assert copies == ["--from=builder /opt/leasehold /opt/leasehold"]


def test_the_image_installs_only_the_server_and_offers_each_entry_point():
    runs = " ".join(a for op, a in instructions() if op == "RUN")
    assert "[" not in runs and "pipeline" not in runs  # no extras in the server image
    assert {"leasehold-controller", "leasehold-broker-agent", "leasehold-admin"} <= set(
        console_scripts()
    )
    healthcheck = [a for op, a in instructions() if op == "HEALTHCHECK"]
    assert len(healthcheck) == 1 and "/opt/leasehold/healthcheck.py" in healthcheck[0]


def test_the_build_context_allows_exactly_what_the_dockerfile_copies():
    rules = [line for line in IGNORE.read_text().splitlines() if line and line[0] != "#"]
    assert rules[0] == "*"
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    sources = set()
    for op, args in instructions():
        if op == "COPY" and not args.startswith("--from"):
            sources |= {s.rstrip("/") for s in args.split()[:-1]}
    assert sources == allowed
    assert all((REPO / s).exists() for s in sources)


# --- deploy/healthcheck.py --------------------------------------------------------------------

check = load_script(DEPLOY / "healthcheck.py")


PORT = "LEASEHOLD_PORT"
HEALTH = "LEASEHOLD_HEALTH_PORT"
TLS = {
    "LEASEHOLD_TLS_CERT": "c",
    "LEASEHOLD_TLS_KEY": "k",
    "LEASEHOLD_TLS_CA": "a",
    "LEASEHOLD_ADVERTISED_HOST": "admin",
}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({PORT: "0"}, None),
        ({PORT: "9092"}, check.ProbeTarget("127.0.0.1:9092")),
        ({PORT: "9092", HEALTH: "9405"}, check.ProbeTarget("127.0.0.1:9405")),
        ({PORT: "9092", HEALTH: "0"}, check.ProbeTarget("127.0.0.1:9092")),
        ({PORT: "9093", HEALTH: "9405", **TLS}, check.ProbeTarget("127.0.0.1:9405")),
        ({PORT: "9093", **TLS}, check.ProbeTarget("127.0.0.1:9093", True, "admin", "a", "c", "k")),
        (
            {PORT: "9093", "LEASEHOLD_TLS_CERT": "c"},
            check.ProbeTarget("127.0.0.1:9093", True, "localhost", "", "c", ""),
        ),
    ],
)
def test_the_probe_target_follows_the_service_environment(environ, expected):
    assert check.probe_target(environ) == expected


@pytest.fixture
def health_server():
    """A real gRPC server with the standard health service on a free loopback port."""
    servicer = health.HealthServicer()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("x.v1.Active", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("x.v1.Standby", health_pb2.HealthCheckResponse.NOT_SERVING)
    yield port
    server.stop(grace=None)


@pytest.mark.parametrize(
    ("service", "status"),
    [("", 0), ("x.v1.Active", 0), ("x.v1.Standby", 1), ("x.v1.Unknown", 1)],
)
def test_main_reports_the_health_status_as_the_exit_code(health_server, service, status):
    environ = {"LEASEHOLD_HEALTH_PORT": str(health_server)}
    assert check.main([service] if service else [], environ) == status


def test_nothing_listening_is_unhealthy():
    assert check.is_serving(check.ProbeTarget(f"127.0.0.1:{free_port()}"), timeout=1.0) is False


def test_no_port_configured_is_unhealthy():
    assert check.main([], {}) == 1
