"""Resolve the Apache Kafka server named in ``pom.xml`` into ``.tools/kafka-<version>/libs``.

``python -m bench.peers.kafka.install`` (run by ``make bench-peer-install``, never at benchmark
or test time) asks Maven for ``org.apache.kafka:kafka_2.13`` and its runtime dependencies and
copies the jars into a gitignored folder of the checkout; Maven's own download cache is kept
beside it (``.tools/m2``) so a clean clone installs from nothing but Maven Central. The jars
are copied into a scratch folder first and renamed into place, so a half-finished copy is never
taken for an installed server. :func:`installed_libs` is what the harness calls: the folder,
or a clear error saying which make target installs it.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
ROOT = HERE.parents[2]
TOOLS = ROOT / ".tools"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
STAMP = ".installed"
INSTALL_TARGET = "make bench-peer-install"


@dataclass(frozen=True)
class KafkaDist:
    """Where one Kafka version's jars live (``libs``) and whether they are complete: the
    stamp holds the digest of the ``pom.xml`` they were resolved from."""

    version: str
    home: Path
    pom_digest: str = ""

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def installed(self) -> bool:
        try:
            return (self.home / STAMP).read_text().strip() == self.pom_digest
        except OSError:
            return False

    def classpath(self) -> str:
        return str(self.libs / "*")


def pom_version(pom: Path = POM) -> str:
    """The Kafka version pinned in ``pom.xml`` (its ``kafka.version`` property)."""
    node = ET.parse(pom).getroot().find("m:properties/m:kafka.version", NS)
    if node is None or not (node.text or "").strip():
        raise ValueError(f"{pom} has no kafka.version property")
    return node.text.strip()


def dist(tools: Path = TOOLS, pom: Path = POM) -> KafkaDist:
    version = pom_version(pom)
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    return KafkaDist(version, tools / f"kafka-{version}", digest)


def installed_libs() -> KafkaDist:
    """The installed server, or ``FileNotFoundError`` naming the install step."""
    d = dist()
    if not d.installed:
        raise FileNotFoundError(
            f"Apache Kafka {d.version} is not installed in {d.home}: run `{INSTALL_TARGET}`"
        )
    return d


def install(tools: Path = TOOLS, pom: Path = POM, quiet: bool = True) -> KafkaDist:
    """Copy the server's jars with Maven unless they are already there; return where."""
    d = dist(tools, pom)
    if d.installed:
        return d
    if shutil.which("mvn") is None:
        raise FileNotFoundError("mvn is not on PATH (Debian: apt-get install maven)")
    tools.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".kafka-{d.version}-", dir=tools))
    try:
        command = [
            "mvn", "-B", "-Dstyle.color=never", *(["-q"] if quiet else []), "-f", str(pom),
            f"-Dmaven.repo.local={tools / 'm2'}",
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime", f"-DoutputDirectory={scratch / 'libs'}",
        ]  # fmt: skip
        subprocess.run(command, check=True)
        if not any((scratch / "libs").glob(f"kafka_2.13-{d.version}.jar")):
            raise RuntimeError(f"Maven did not copy kafka_2.13-{d.version}.jar")
        (scratch / STAMP).write_text(f"{d.pom_digest}\n")
        shutil.rmtree(d.home, ignore_errors=True)
        scratch.rename(d.home)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return d


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers.kafka.install", description=__doc__)
    p.add_argument("--verbose", action="store_true", help="show Maven's output")
    args = p.parse_args(argv)
    d = install(quiet=not args.verbose)
    print(f"Apache Kafka {d.version}: {d.libs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
