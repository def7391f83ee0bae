"""The conformance scenario (tests/conformance/) in Go, Java, TypeScript and Python against one
cluster of real processes, with mutual TLS: every runner is given the CA, a client certificate
and its key, as a client of a TLS cluster is.

The Go binary, the Java classes and the compiled TypeScript come from ``make conformance-build``
(``make test`` runs it first); the four runners run at once, each on its own topic.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leasehold.testing.cluster import ClusterSpec, LocalCluster

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "conformance" / "scenario.json"
GO_BINARY = ROOT / ".tools" / "bin" / "conformance-go"
JAVA_CLASSES = ROOT / "libs" / "java" / "target" / "classes"
JAVA_LIB = ROOT / "libs" / "java" / "target" / "lib"
TS_RUNNER = ROOT / "libs" / "ts" / "dist" / "tests" / "conformance" / "ts" / "conformance.js"
BUILD = "run `make conformance-build` first (make test does)"


def runners() -> dict[str, list[str]]:
    """Each language's command line; a runner that is not built fails the test."""
    for built in (GO_BINARY, JAVA_CLASSES, JAVA_LIB, TS_RUNNER):
        assert built.exists(), f"{built.relative_to(ROOT)} is missing: {BUILD}"
    java, node = shutil.which("java"), shutil.which("node")
    assert java and node, "java and node are needed for the conformance runners"
    classpath = f"{JAVA_CLASSES}{os.pathsep}{JAVA_LIB / '*'}"
    java_source = ROOT / "tests" / "conformance" / "java" / "Conformance.java"
    python_runner = ROOT / "tests" / "conformance" / "python" / "conformance.py"
    return {
        "go": [str(GO_BINARY)],
        "java": [java, "-cp", classpath, str(java_source)],
        "ts": [node, str(TS_RUNNER)],
        "python": [sys.executable, str(python_runner)],
    }


def test_every_language_runs_the_scenario(tmp_path):
    commands = runners()
    steps = len(json.loads(SCENARIO.read_text())["steps"])
    cluster = LocalCluster(ClusterSpec(controllers=2, brokers=3, session_ttl=3, tls=True))
    try:
        cluster.start()  # brokers registered, a controller in office
        certs = cluster.client_certs
        env = dict(
            os.environ,
            LEASEHOLD_ADMIN=cluster.admin_address,
            LEASEHOLD_TLS_CA=certs.ca,
            LEASEHOLD_TLS_CERT=certs.cert,
            LEASEHOLD_TLS_KEY=certs.key,
        )
        started = time.monotonic()
        procs = {
            lang: subprocess.Popen(
                [*cmd, str(SCENARIO)],
                cwd=ROOT,
                env={**env, "LEASEHOLD_TOPIC": f"conformance-{lang}"},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for lang, cmd in commands.items()
        }
        outputs = {}
        for lang, proc in procs.items():
            try:
                outputs[lang] = (proc.communicate(timeout=300)[0], proc.returncode)
            except subprocess.TimeoutExpired:
                proc.kill()
                outputs[lang] = (proc.communicate()[0], "timed out")
        print(f"four runners took {time.monotonic() - started:.1f}s")
        failed = {lang: out for lang, (out, code) in outputs.items() if code != 0}
        logs = "\n".join(f"--- {p.name}\n{cluster.logs(p.name, 15)}" for p in cluster.processes())
        assert not failed, "\n".join(f"=== {k}\n{v}" for k, v in failed.items()) + logs
        for lang, (out, _code) in outputs.items():
            assert out.strip().splitlines()[-1] == f"{steps} passed, 0 failed", (lang, out)
    finally:
        for broker in cluster.brokers.values():
            broker.terminate(timeout=15)
        cluster.stop()
        cluster.remove_workdir()
