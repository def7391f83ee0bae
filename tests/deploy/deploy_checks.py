"""Security and consistency checks over rendered Kubernetes manifests (pure: dicts in, strings out).

Schema validation says a manifest is well-formed; these say it is safe and wired together: the
pod hardening we require of every workload (non-root, read-only root, no privilege escalation,
no capabilities, RuntimeDefault seccomp, no service-account token), pinned images, requests and
limits, probes that point at real ports, $(VAR) references the kubelet can actually expand, and
that every workload is covered by a PodDisruptionBudget, a NetworkPolicy and the Services that
select it. Each check returns findings as sentences; an empty list means clean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
Doc = Mapping[str, Any]

_VAR_REF = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def ident(doc: Doc) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def workloads(docs: Iterable[Doc]) -> list[Doc]:
    return [d for d in docs if d.get("kind") in WORKLOAD_KINDS]


def pod_template(doc: Doc) -> Doc:
    return doc.get("spec", {}).get("template", {})


def all_containers(pod_spec: Doc) -> list[Doc]:
    return [*pod_spec.get("initContainers", []), *pod_spec.get("containers", [])]


def parse_quantity(text: str | int | float) -> float:
    """A Kubernetes quantity ("500m", "2", "512Mi", "1G") as a plain number."""
    match = _QUANTITY.match(str(text))
    if match is None or match.group(2) not in _SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def image_findings(image: str) -> list[str]:
    """Pinned means an explicit version tag (not latest) or a digest."""
    if "@sha256:" in image:
        return []
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return [f"image {image} has no tag"]
    if last.split(":", 1)[1] in ("latest", "stable", "main", "master"):
        return [f"image {image} uses a floating tag"]
    return []


def _effective(pod_spec: Doc, container: Doc, key: str) -> Any:
    own = container.get("securityContext", {}).get(key)
    return own if own is not None else pod_spec.get("securityContext", {}).get(key)


def container_security_findings(pod_spec: Doc, container: Doc) -> list[str]:
    sc = container.get("securityContext", {})
    caps = sc.get("capabilities", {})
    found = []
    if sc.get("allowPrivilegeEscalation") is not False:
        found.append("allowPrivilegeEscalation is not false")
    if sc.get("readOnlyRootFilesystem") is not True:
        found.append("readOnlyRootFilesystem is not true")
    if sc.get("privileged"):
        found.append("privileged")
    if "ALL" not in caps.get("drop", []):
        found.append("capabilities do not drop ALL")
    if caps.get("add"):
        found.append(f"capabilities add {caps['add']}")
    if _effective(pod_spec, container, "runAsNonRoot") is not True:
        found.append("runAsNonRoot is not true")
    uid = _effective(pod_spec, container, "runAsUser")
    if uid is None or uid == 0:
        found.append("runAsUser is not a fixed non-zero uid")
    seccomp = _effective(pod_spec, container, "seccompProfile") or {}
    if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
        found.append("seccompProfile is not RuntimeDefault")
    return found


def pod_security_findings(pod_spec: Doc) -> list[str]:
    found = [f"{key} is true" for key in ("hostNetwork", "hostPID", "hostIPC") if pod_spec.get(key)]
    if pod_spec.get("automountServiceAccountToken") is not False:
        found.append("automountServiceAccountToken is not false")
    if pod_spec.get("serviceAccountName", "default") == "default":
        found.append("runs as the default service account")
    volumes = pod_spec.get("volumes", [])
    found += [f"hostPath volume {v['name']}" for v in volumes if "hostPath" in v]
    return found


def resource_findings(container: Doc) -> list[str]:
    resources = container.get("resources", {})
    requests, limits = resources.get("requests", {}), resources.get("limits", {})
    found = [
        f"no {kind} {res}"
        for kind, values in (("request", requests), ("limit", limits))
        for res in ("cpu", "memory")
        if res not in values
    ]
    for res in sorted(set(requests) & set(limits)):
        if parse_quantity(requests[res]) > parse_quantity(limits[res]):
            found.append(f"{res} request {requests[res]} exceeds limit {limits[res]}")
    return found


def _port_exists(container: Doc, port: int | str) -> bool:
    ports = container.get("ports", [])
    if isinstance(port, str):
        return any(p.get("name") == port for p in ports)
    return any(p.get("containerPort") == port for p in ports)


def probe_findings(container: Doc) -> list[str]:
    found = []
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if probe is None:
            if kind != "startupProbe":
                found.append(f"no {kind}")
            continue
        for handler in ("grpc", "httpGet", "tcpSocket"):
            port = probe.get(handler, {}).get("port")
            if port is not None and not _port_exists(container, port):
                found.append(f"{kind} {handler} port {port} is not a container port")
    return found


def env_reference_findings(container: Doc, config_maps: Mapping[str, set[str]]) -> list[str]:
    """$(VAR) must name a variable the kubelet has defined by then, or it stays literal text.

    envFrom variables come first; each env entry may use envFrom and earlier env entries;
    command and args may use all of them.
    """
    found = []
    defined: set[str] = set()
    for source in container.get("envFrom", []):
        name = source.get("configMapRef", {}).get("name")
        if name is None:
            continue
        if name not in config_maps:
            found.append(f"envFrom ConfigMap {name} is not defined")
        defined |= config_maps.get(name, set())
    for entry in container.get("env", []):
        for ref in _VAR_REF.findall(str(entry.get("value", ""))):
            if ref not in defined:
                found.append(f"env {entry['name']} uses $({ref}) before it is defined")
        defined.add(entry["name"])
    for word in [*container.get("command", []), *container.get("args", [])]:
        for ref in _VAR_REF.findall(str(word)):
            if ref not in defined:
                found.append(f"command/args use $({ref}), which is not defined")
    return found


def config_map_keys(docs: Iterable[Doc]) -> dict[str, set[str]]:
    return {
        d["metadata"]["name"]: set(d.get("data", {})) for d in docs if d.get("kind") == "ConfigMap"
    }


def workload_findings(doc: Doc, config_maps: Mapping[str, set[str]]) -> list[str]:
    """Everything required of one workload, each finding prefixed with where it is."""
    pod_spec = pod_template(doc).get("spec", {})
    found = [f"{ident(doc)}: {f}" for f in pod_security_findings(pod_spec)]
    for c in all_containers(pod_spec):
        where = f"{ident(doc)}: container {c['name']}: "
        found += [where + f for f in image_findings(c.get("image", ""))]
        found += [where + f for f in container_security_findings(pod_spec, c)]
        found += [where + f for f in resource_findings(c)]
        found += [where + f for f in env_reference_findings(c, config_maps)]
    for c in pod_spec.get("containers", []):
        found += [f"{ident(doc)}: container {c['name']}: {f}" for f in probe_findings(c)]
    return found


def selects(selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """Does a non-empty matchLabels-style selector match these labels?"""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def coverage_findings(docs: Sequence[Doc]) -> list[str]:
    """Every workload needs a PodDisruptionBudget and a NetworkPolicy selecting its pods."""
    found = []
    for w in workloads(docs):
        labels = pod_template(w).get("metadata", {}).get("labels", {})
        for kind, path in (
            ("PodDisruptionBudget", ("spec", "selector", "matchLabels")),
            ("NetworkPolicy", ("spec", "podSelector", "matchLabels")),
        ):
            selectors = [_dig(d, path) for d in docs if d.get("kind") == kind]
            if not any(selects(s, labels) for s in selectors):
                found.append(f"{ident(w)}: no {kind} selects its pods")
    return found


def service_findings(docs: Sequence[Doc]) -> list[str]:
    """Every Service selects a workload, and its target ports exist on that workload."""
    found = []
    for svc in (d for d in docs if d.get("kind") == "Service"):
        selector = svc.get("spec", {}).get("selector")
        targets = [
            w for w in workloads(docs) if selects(selector, pod_template(w)["metadata"]["labels"])
        ]
        if not targets:
            found.append(f"{ident(svc)}: selects no workload")
            continue
        containers = [c for w in targets for c in pod_template(w)["spec"]["containers"]]
        for port in svc["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            if not any(_port_exists(c, target) for c in containers):
                found.append(f"{ident(svc)}: targetPort {target} is not a container port")
    return found


def _dig(doc: Doc, path: Sequence[str]) -> Any:
    for key in path:
        doc = doc.get(key, {}) if isinstance(doc, Mapping) else {}
    return doc


def env_flag(name: str) -> str | None:
    """LEASEHOLD_FOO_BAR is the environment form of --foo-bar (libs/leasehold/config.py)."""
    if not name.startswith("LEASEHOLD_"):
        return None
    return "--" + name.removeprefix("LEASEHOLD_").lower().replace("_", "-")
