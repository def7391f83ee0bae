"""The digest of pyproject.toml's dependency pins: ``make`` compares it with the one the lock
files were made from (their first line) and asks for ``make lock`` when they differ."""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib


def digest(path: str = "pyproject.toml") -> str:
    with open(path, "rb") as f:
        project = tomllib.load(f)
    pins = {
        "requires-python": project["project"]["requires-python"],
        "dependencies": project["project"]["dependencies"],
        "optional-dependencies": project["project"].get("optional-dependencies", {}),
        "build-system": project["build-system"]["requires"],
    }
    return hashlib.sha256(json.dumps(pins, sort_keys=True).encode()).hexdigest()


def version_of(package: str, path: str = "pyproject.toml") -> str:
    """The pinned version of ``package`` among the optional dependencies (the lock tool)."""
    with open(path, "rb") as f:
        project = tomllib.load(f)
    for group in project["project"].get("optional-dependencies", {}).values():
        for spec in group:
            name, _, version = spec.partition("==")
            if name.strip().lower() == package:
                return version.strip()
    raise SystemExit(f"{package} is not pinned in pyproject.toml")


def extra(name: str, path: str = "pyproject.toml") -> str:
    """The pins of one optional-dependency group, one a line (a requirements input)."""
    with open(path, "rb") as f:
        project = tomllib.load(f)
    return "\n".join(project["project"]["optional-dependencies"][name])


if __name__ == "__main__":
    command = sys.argv[1:2]
    if command == ["version"]:
        print(version_of(sys.argv[2]))
    elif command == ["extra"]:
        print(extra(sys.argv[2]))
    else:
        print(digest())
