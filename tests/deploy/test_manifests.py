"""deploy/k8s: rendered offline by kustomize, validated against the Kubernetes schemas, linted for
security misconfiguration, and checked against what the services and the issue require."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from deploy_checks import (
    config_map_keys,
    coverage_findings,
    env_flag,
    ident,
    pod_template,
    service_findings,
    workload_findings,
    workloads,
)
from deploy_tools import (
    DEPLOY,
    K8S,
    ServiceHelp,
    console_scripts,
    load_yaml,
    load_yaml_docs,
    python_tool,
    render,
)

from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2
from leasehold.controller.v1 import controller_pb2

TREES = ("base", "overlays/dev", "overlays/prod")
# The oldest Kubernetes the manifests support (gRPC probes, start ordinals, the pod-index label
# and unhealthyPodEvictionPolicy are all on by default there) and the newest schemas shipped.
K8S_VERSIONS = ("1.30.0", "1.37.0")
READINESS = {
    "controller": controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name,
    "broker-agent": broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name,
    "admin": admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name,
}
TLS_KEYS = (
    "LEASEHOLD_TLS_CERT",
    "LEASEHOLD_TLS_KEY",
    "LEASEHOLD_TLS_CA",
    "LEASEHOLD_ETCD_CA",
    "LEASEHOLD_ETCD_CERT",
    "LEASEHOLD_ETCD_KEY",
)
Docs = list[dict[str, Any]]


@pytest.fixture(scope="module")
def rendered() -> dict[str, Docs]:
    return {tree: render(K8S / tree) for tree in TREES}


@pytest.fixture(scope="module")
def service_help() -> ServiceHelp:
    return ServiceHelp()


def find(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    """A rendered object by kind and name (ConfigMap names carry kustomize's hash suffix)."""
    for d in docs:
        got = d["metadata"]["name"]
        if d["kind"] == kind and (got == name or (kind == "ConfigMap" and _unhashed(got) == name)):
            return d
    raise AssertionError(f"{kind}/{name} not rendered")


def _unhashed(name: str) -> str:
    return re.sub(r"-[a-z0-9]{10}$", "", name)


def leasehold_containers(docs: Docs) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(workload, container) for every container running a Leasehold service command."""
    scripts = console_scripts()
    return [
        (w, c)
        for w in workloads(docs)
        for c in pod_template(w)["spec"]["containers"]
        if c.get("command", [""])[0] in scripts
    ]


def env_of(docs: Docs, container: dict[str, Any]) -> dict[str, str]:
    """The container's literal environment: envFrom ConfigMaps, then env entries."""
    out: dict[str, str] = {}
    for source in container.get("envFrom", []):
        cm = next(d for d in docs if d["metadata"]["name"] == source["configMapRef"]["name"])
        out.update(cm["data"])
    for entry in container.get("env", []):
        source = ",".join(entry.get("valueFrom", {}))  # e.g. fieldRef: known only in the pod
        out[entry["name"]] = entry.get("value", f"<{source}>")
    return out


# --- schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("tree", TREES)
def test_every_object_matches_the_kubernetes_schema(rendered, tree, version):
    python_tool("kubernetes_validate")
    import kubernetes_validate

    errors = []
    for doc in rendered[tree]:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            errors.append(f"{ident(doc)}: {'.'.join(map(str, exc.path))}: {exc.message}")
    assert errors == []


def test_schema_validation_is_strict_about_unknown_fields(rendered):
    python_tool("kubernetes_validate")
    import kubernetes_validate

    bad = find(rendered["base"], "Deployment", "admin")
    container = bad["spec"]["template"]["spec"]["containers"][0]
    typo = {**container, "securityContext": {"readOnlyRootFilesytem": True}}
    spec = {**bad["spec"]["template"]["spec"], "containers": [typo]}
    bad = {**bad, "spec": {**bad["spec"], "template": {**bad["spec"]["template"], "spec": spec}}}
    with pytest.raises(kubernetes_validate.ValidationError, match="readOnlyRootFilesytem"):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


# --- security and wiring ----------------------------------------------------------------------


@pytest.mark.parametrize("tree", TREES)
def test_workloads_are_hardened_pinned_sized_and_probed(rendered, tree):
    docs = rendered[tree]
    config_maps = config_map_keys(docs)
    findings = [f for w in workloads(docs) for f in workload_findings(w, config_maps)]
    assert findings == []


@pytest.mark.parametrize("tree", TREES)
def test_every_workload_has_a_disruption_budget_network_policy_and_matching_services(
    rendered, tree
):
    docs = rendered[tree]
    assert coverage_findings(docs) + service_findings(docs) == []


def test_base_holds_one_file_per_service():
    expected = {"ServiceAccount", "Service", "PodDisruptionBudget", "NetworkPolicy"}
    files = sorted((K8S / "base").glob("*.yaml"))
    # pipeline.yaml is a batch job, not a service (tests/deploy/test_pipeline_deploy.py).
    services = [f for f in files if f.name not in ("kustomization.yaml", "pipeline.yaml")]
    assert [f.stem for f in services] == ["admin", "broker-agent", "controller", "etcd", "jaeger"]
    for path in services:
        docs = load_yaml_docs(path)
        kinds = [d["kind"] for d in docs]
        assert len(workloads(docs)) == 1, path.name
        assert expected <= set(kinds), path.name
        names = {d["metadata"]["name"] for d in docs if d["kind"] != "Service"}
        assert names == {path.stem}, path.name
        assert all(d["metadata"]["name"].startswith(path.stem) for d in docs), path.name
    resources = load_yaml(K8S / "base" / "kustomization.yaml")["resources"]
    assert sorted(resources) == sorted([f.name for f in services] + ["pipeline.yaml"])


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_overlays_only_patch_the_base(rendered, overlay):
    directory = K8S / "overlays" / overlay
    kustomization = load_yaml(directory / "kustomization.yaml")
    assert kustomization["resources"] == ["../../base"]
    patched = {p["path"] for p in kustomization.get("patches", [])}
    assert {f.name for f in directory.glob("*.yaml")} == {"kustomization.yaml", *patched}
    for generator in kustomization.get("configMapGenerator", []):
        assert generator["behavior"] == "merge", generator["name"]

    def ids(docs: Docs) -> set[tuple[str, str]]:
        return {(d["kind"], _unhashed(d["metadata"]["name"])) for d in docs}

    assert ids(rendered[f"overlays/{overlay}"]) == ids(rendered["base"])


# --- what the issue asks for ------------------------------------------------------------------


def test_topology_matches_the_issue(rendered):
    docs = rendered["base"]
    etcd = find(docs, "StatefulSet", "etcd")
    assert (etcd["spec"]["replicas"], etcd["spec"]["podManagementPolicy"]) == (3, "Parallel")
    assert [t["metadata"]["name"] for t in etcd["spec"]["volumeClaimTemplates"]] == ["data"]
    peers = find(docs, "Service", "etcd")["spec"]
    assert (peers["clusterIP"], peers["publishNotReadyAddresses"]) == ("None", True)
    initial = next(
        e["value"]
        for e in pod_template(etcd)["spec"]["containers"][0]["env"]
        if e["name"] == "ETCD_INITIAL_CLUSTER"
    )
    assert [m.split("=")[0] for m in initial.split(",")] == ["etcd-0", "etcd-1", "etcd-2"]

    assert find(docs, "Deployment", "controller")["spec"]["replicas"] == 2
    assert find(docs, "Deployment", "admin")["spec"]["replicas"] >= 1
    assert find(docs, "Service", "admin")["spec"]["ports"][0]["port"] == 9093
    assert find(docs, "Deployment", "jaeger")["spec"]["replicas"] == 1

    brokers = find(docs, "StatefulSet", "broker-agent")
    assert (brokers["spec"]["replicas"], brokers["spec"]["ordinals"]["start"]) == (3, 1)
    assert [t["metadata"]["name"] for t in brokers["spec"]["volumeClaimTemplates"]] == ["data"]
    assert find(docs, "Service", "broker-agent")["spec"]["clusterIP"] == "None"
    broker_env = pod_template(brokers)["spec"]["containers"][0]["env"]
    broker_id = next(e for e in broker_env if e["name"] == "LEASEHOLD_BROKER_ID")
    assert broker_id["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['apps.kubernetes.io/pod-index']"
    )


@pytest.mark.parametrize("tree", TREES)
def test_probes_are_native_grpc_and_readiness_names_the_service(rendered, tree):
    """Only the active controller reports ControllerService SERVING, so only it is Ready."""
    containers = leasehold_containers(rendered[tree])
    assert sorted(w["metadata"]["name"] for w, _ in containers) == sorted(READINESS)
    for workload, c in containers:
        name = workload["metadata"]["name"]
        assert c["readinessProbe"]["grpc"]["service"] == READINESS[name]
        assert "service" not in c["livenessProbe"]["grpc"], name
        health_port = next(p["containerPort"] for p in c["ports"] if p["name"] == "health")
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert c[probe]["grpc"]["port"] == health_port, (name, probe)
        env = env_of(rendered[tree], c)
        assert env["LEASEHOLD_HEALTH_PORT"] == str(health_port)


@pytest.mark.parametrize("tree", TREES)
def test_every_service_exports_traces_to_jaeger(rendered, tree):
    docs = rendered[tree]
    ports = find(docs, "Service", "jaeger")["spec"]["ports"]
    assert {p["name"]: p["port"] for p in ports}["otlp-grpc"] == 4317
    for workload, c in leasehold_containers(docs):
        env = env_of(docs, c)
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4317"
        assert env["OTEL_SERVICE_NAME"] == workload["metadata"]["name"]


def _secret_mounts(workload: dict[str, Any], container: dict[str, Any]) -> dict[str, dict]:
    """mountPath -> secret volume source, for the container's secret volumes. A cert-manager CSI
    volume (one certificate per pod, as brokers need) counts as a required secret: the pod does
    not start without its certificate."""
    volumes = {v["name"]: v for v in pod_template(workload)["spec"].get("volumes", [])}
    mounts = {m["mountPath"]: volumes.get(m["name"], {}) for m in container.get("volumeMounts", [])}
    out = {path: volume["secret"] for path, volume in mounts.items() if "secret" in volume}
    for path, volume in mounts.items():
        if volume.get("csi", {}).get("driver") == "csi.cert-manager.io":
            assert "secret" not in volume, volume
            out[path] = {"optional": False, "csi": volume["csi"]}
    return out


def test_prod_turns_tls_on_with_required_secrets(rendered):
    docs = rendered["overlays/prod"]
    for workload, c in leasehold_containers(docs):
        env, mounts = env_of(docs, c), _secret_mounts(workload, c)
        for key in TLS_KEYS:
            directory = str(Path(env[key]).parent)
            assert directory in mounts, (workload["metadata"]["name"], key)
            assert mounts[directory]["optional"] is False
    etcd = find(docs, "ConfigMap", "etcd-config")["data"]
    assert etcd["SCHEME"] == "https"
    assert etcd["ETCD_CLIENT_CERT_AUTH"] == etcd["ETCD_PEER_CLIENT_CERT_AUTH"] == "true"
    etcd_set = find(docs, "StatefulSet", "etcd")
    etcd_mounts = _secret_mounts(etcd_set, pod_template(etcd_set)["spec"]["containers"][0])
    for key in ("ETCD_CERT_FILE", "ETCD_KEY_FILE", "ETCD_TRUSTED_CA_FILE", "ETCD_PEER_CERT_FILE"):
        assert etcd_mounts[str(Path(etcd[key]).parent)]["optional"] is False


def test_dev_is_plaintext_and_needs_no_secrets(rendered):
    docs = rendered["overlays/dev"]
    assert find(docs, "ConfigMap", "etcd-config")["data"]["SCHEME"] == "http"
    for workload, c in leasehold_containers(docs):
        assert not set(TLS_KEYS) & set(env_of(docs, c)), workload["metadata"]["name"]
        assert all(s["optional"] for s in _secret_mounts(workload, c).values())


def test_every_secret_name_is_documented(rendered):
    readme = (DEPLOY / "README.md").read_text()
    names = {
        v["secret"]["secretName"]
        for w in workloads(rendered["overlays/prod"])
        for v in pod_template(w)["spec"].get("volumes", [])
        if "secret" in v
    }
    assert names and [n for n in sorted(names) if f"`{n}`" not in readme] == []


# --- the manifests and the services agree -----------------------------------------------------


@pytest.mark.parametrize("tree", ["overlays/dev", "overlays/prod"])
def test_every_setting_is_a_flag_the_service_accepts(rendered, tree, service_help):
    """LEASEHOLD_X and args must name flags of the service's own --help, or they do nothing."""
    docs = rendered[tree]
    scripts = console_scripts()
    unknown = {}
    for workload, c in leasehold_containers(docs):
        flags = {env_flag(k) for k in env_of(docs, c) if env_flag(k)}
        flags |= {a.split("=")[0] for a in c.get("args", []) if a.startswith("--")}
        accepted = service_help.flags(scripts[c["command"][0]])
        if flags - accepted:
            unknown[workload["metadata"]["name"]] = sorted(flags - accepted)
    assert unknown == {}
