"""The manifest checks themselves: each rule flags exactly what it should on small examples."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deploy_checks import (
    container_security_findings,
    coverage_findings,
    env_flag,
    env_reference_findings,
    image_findings,
    parse_quantity,
    pod_security_findings,
    probe_findings,
    resource_findings,
    service_findings,
    workload_findings,
)

POD = {
    "serviceAccountName": "svc",
    "automountServiceAccountToken": False,
    "securityContext": {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}
CONTAINER: dict[str, Any] = {
    "name": "app",
    "image": "leasehold:0.1.0",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    },
    "resources": {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    },
    "ports": [{"name": "grpc", "containerPort": 9092}, {"name": "health", "containerPort": 9405}],
    "livenessProbe": {"grpc": {"port": 9405}},
    "readinessProbe": {"grpc": {"port": 9405, "service": "x.v1.S"}},
}


def changed(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of base with the dotted path set to value (None deletes it)."""
    out = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return out


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("leasehold:0.1.0", []),
        ("quay.io/coreos/etcd:v3.5.25", []),
        ("registry:5000/team/leasehold:0.1.0", []),
        ("leasehold@sha256:" + "0" * 64, []),
        ("leasehold", ["image leasehold has no tag"]),
        ("registry:5000/leasehold", ["image registry:5000/leasehold has no tag"]),
        ("jaegertracing/jaeger:latest", ["image jaegertracing/jaeger:latest uses a floating tag"]),
    ],
)
def test_images_must_be_pinned(image, expected):
    assert image_findings(image) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 0.5), ("2", 2.0), ("0.5", 0.5), ("512Mi", 512 * 2**20), ("1Gi", 2**30), ("1G", 1e9)],
)
def test_quantities_parse(text, value):
    assert parse_quantity(text) == value


def test_a_bad_quantity_is_an_error():
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("lots")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("name", "app", []),
        (
            "securityContext.allowPrivilegeEscalation",
            True,
            ["allowPrivilegeEscalation is not false"],
        ),
        (
            "securityContext.allowPrivilegeEscalation",
            None,
            ["allowPrivilegeEscalation is not false"],
        ),
        ("securityContext.readOnlyRootFilesystem", False, ["readOnlyRootFilesystem is not true"]),
        ("securityContext.privileged", True, ["privileged"]),
        ("securityContext.capabilities.drop", ["NET_RAW"], ["capabilities do not drop ALL"]),
        ("securityContext.capabilities.add", ["NET_ADMIN"], ["capabilities add ['NET_ADMIN']"]),
        ("securityContext.runAsNonRoot", False, ["runAsNonRoot is not true"]),
        ("securityContext.runAsUser", 0, ["runAsUser is not a fixed non-zero uid"]),
        (
            "securityContext.seccompProfile",
            {"type": "Unconfined"},
            ["seccompProfile is not RuntimeDefault"],
        ),
    ],
)
def test_container_hardening(path, value, expected):
    assert container_security_findings(POD, changed(CONTAINER, path, value)) == expected


def test_container_settings_fall_back_to_the_pod_and_are_required_somewhere():
    bare_pod = {"serviceAccountName": "svc", "automountServiceAccountToken": False}
    assert container_security_findings(bare_pod, CONTAINER) == [
        "runAsNonRoot is not true",
        "runAsUser is not a fixed non-zero uid",
        "seccompProfile is not RuntimeDefault",
    ]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("serviceAccountName", "svc", []),
        ("hostNetwork", True, ["hostNetwork is true"]),
        ("hostPID", True, ["hostPID is true"]),
        ("automountServiceAccountToken", None, ["automountServiceAccountToken is not false"]),
        ("serviceAccountName", None, ["runs as the default service account"]),
        ("volumes", [{"name": "root", "hostPath": {"path": "/"}}], ["hostPath volume root"]),
    ],
)
def test_pod_hardening(path, value, expected):
    assert pod_security_findings(changed(POD, path, value)) == expected


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("resources.limits.cpu", "1", []),
        ("resources.limits.cpu", None, ["no limit cpu"]),
        ("resources.requests", None, ["no request cpu", "no request memory"]),
        ("resources.limits.memory", "64Mi", ["memory request 128Mi exceeds limit 64Mi"]),
        ("resources.limits.cpu", "50m", ["cpu request 100m exceeds limit 50m"]),
    ],
)
def test_requests_and_limits(path, value, expected):
    assert resource_findings(changed(CONTAINER, path, value)) == expected


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("livenessProbe.grpc.port", 9405, []),
        ("livenessProbe", None, ["no livenessProbe"]),
        ("readinessProbe", None, ["no readinessProbe"]),
        ("livenessProbe.grpc.port", 9999, ["livenessProbe grpc port 9999 is not a container port"]),
        ("startupProbe", {"httpGet": {"port": "web", "path": "/"}}, [
            "startupProbe httpGet port web is not a container port"
        ]),
        ("startupProbe", {"tcpSocket": {"port": "grpc"}}, []),
    ],
)  # fmt: skip
def test_probes_exist_and_point_at_container_ports(path, value, expected):
    assert probe_findings(changed(CONTAINER, path, value)) == expected


@pytest.mark.parametrize(
    ("env", "args", "expected"),
    [
        ([{"name": "A", "value": "x"}, {"name": "B", "value": "$(A).y"}], [], []),
        ([{"name": "B", "value": "$(FROM_CM)"}], ["--x=$(B)"], []),
        ([{"name": "B", "value": "$$(A) is escaped"}], [], []),
        (
            [{"name": "B", "value": "$(A).y"}, {"name": "A", "value": "x"}],
            [],
            ["env B uses $(A) before it is defined"],
        ),
        ([], ["--host=$(NOPE)"], ["command/args use $(NOPE), which is not defined"]),
    ],
)
def test_variable_references_resolve_in_kubelet_order(env, args, expected):
    container = {"envFrom": [{"configMapRef": {"name": "cm"}}], "env": env, "args": args}
    assert env_reference_findings(container, {"cm": {"FROM_CM"}}) == expected


def test_an_unknown_config_map_is_reported():
    container = {"envFrom": [{"configMapRef": {"name": "missing"}}]}
    assert env_reference_findings(container, {}) == ["envFrom ConfigMap missing is not defined"]


def workload(labels: dict[str, str], container: dict[str, Any] = CONTAINER) -> dict[str, Any]:
    pod = {"metadata": {"labels": labels}, "spec": {**POD, "containers": [container]}}
    return {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": pod}}


def test_a_clean_workload_has_no_findings_and_a_bad_one_says_where():
    assert workload_findings(workload({"app": "a"}), {}) == []
    bad = workload({"app": "a"}, changed(CONTAINER, "image", "leasehold:latest"))
    assert workload_findings(bad, {}) == [
        "Deployment/app: container app: image leasehold:latest uses a floating tag"
    ]


def test_every_workload_needs_a_pdb_and_a_network_policy_selecting_it():
    pdb = {"kind": "PodDisruptionBudget", "spec": {"selector": {"matchLabels": {"app": "a"}}}}
    netpol = {"kind": "NetworkPolicy", "spec": {"podSelector": {"matchLabels": {"app": "a"}}}}
    other = {"kind": "NetworkPolicy", "spec": {"podSelector": {"matchLabels": {"app": "b"}}}}
    assert coverage_findings([workload({"app": "a"}), pdb, netpol]) == []
    assert coverage_findings([workload({"app": "a"}), pdb, other]) == [
        "Deployment/app: no NetworkPolicy selects its pods"
    ]
    assert coverage_findings([workload({"app": "a"})]) == [
        "Deployment/app: no PodDisruptionBudget selects its pods",
        "Deployment/app: no NetworkPolicy selects its pods",
    ]


def service(selector: dict[str, str], target: Any) -> dict[str, Any]:
    return {
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": target}]},
    }


NOT_A_PORT = "Service/svc: targetPort metrics is not a container port"
SELECTS_NOTHING = "Service/svc: selects no workload"


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        (service({"app": "a"}, "grpc"), []),
        (service({"app": "a"}, 9092), []),
        (service({"app": "a"}, "metrics"), [NOT_A_PORT]),
        (service({"app": "b"}, "grpc"), [SELECTS_NOTHING]),
        (service({}, "grpc"), [SELECTS_NOTHING]),
    ],
)
def test_services_select_a_workload_and_real_ports(svc, expected):
    assert service_findings([workload({"app": "a"}), svc]) == expected


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("LEASEHOLD_ETCD", "--etcd"),
        ("LEASEHOLD_METRICS_PORT", "--metrics-port"),
        ("LEASEHOLD_BROKER_ID", "--broker-id"),
        ("OTEL_SERVICE_NAME", None),
        ("POD_NAME", None),
    ],
)
def test_environment_names_map_to_flags(name, flag):
    assert env_flag(name) == flag
