"""A real Jaeger (v2 all-in-one, in-memory storage) beside a test or ``make run`` cluster.

The binary is built from Jaeger's Go module by ``make jaeger`` into ``.tools/bin`` (or named by
``$LEASEHOLD_JAEGER_BIN``). :class:`JaegerServer` writes its own configuration rather than using
the embedded all-in-one one, whose receivers and extensions listen on ``$JAEGER_LISTEN_HOST``
(``localhost`` by default) on fixed ports and which also starts Jaeger-, Zipkin- and sampling
endpoints we do not need: here exactly four ports are opened, all on ``host`` (loopback unless
told): OTLP/gRPC (what the services export to), the query service's HTTP port (the UI and its
JSON API ``/api/services``, ``/api/traces``), its gRPC port and a health check. Its own metrics
and traces are off (the collector's default Prometheus reader would listen on port 8888).

Jaeger's Go module does not carry the UI's built assets (they come from the separate jaeger-ui
project, built with npm, and no package registry serves them built), so the binary's UI is
Jaeger's placeholder page; the JSON API is complete. ``$LEASEHOLD_JAEGER_UI_ASSETS`` names a built
jaeger-ui directory (``packages/jaeger-ui/build``) for the query service to serve instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from leasehold.testing.ports import free_port, wait_for_port

BIN_ENV = "LEASEHOLD_JAEGER_BIN"
UI_ASSETS_ENV = "LEASEHOLD_JAEGER_UI_ASSETS"
CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    traces:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: "{host}:{health_port}"
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: {max_traces}
  jaeger_query:
    enable_tracing: false
    ui:
      assets_path: "{ui_assets}"
    storage:
      traces: memstore
    http:
      endpoint: "{host}:{query_port}"
    grpc:
      endpoint: "{host}:{query_grpc_port}"
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: "{host}:{otlp_port}"
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


def jaeger_binary() -> Path:
    explicit = os.environ.get(BIN_ENV)
    if explicit:
        return Path(explicit)
    built = sorted((Path(__file__).resolve().parents[3] / ".tools" / "bin").glob("jaeger-v*"))
    if built:
        return built[-1]
    raise FileNotFoundError(f"no Jaeger binary: run `make jaeger` or set ${BIN_ENV}")


@dataclass
class JaegerServer:
    workdir: Path
    host: str = "127.0.0.1"
    query_port: int = 0  # the UI and its JSON API (Jaeger's usual 16686)
    otlp_port: int = 0  # OTLP/gRPC (the usual 4317)
    max_traces: int = 100_000
    _proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def otlp_endpoint(self) -> str:
        """What ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes."""
        return f"http://{self.host}:{self.otlp_port}"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.query_port}"

    def trace_url(self, trace_id: str) -> str:
        return f"{self.ui_url}/trace/{trace_id}"

    def start(self, timeout: float = 30.0) -> JaegerServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.query_port = self.query_port or free_port(self.host)
        self.otlp_port = self.otlp_port or free_port(self.host)
        health_port = free_port(self.host)
        config = self.workdir / "jaeger.yaml"
        config.write_text(
            CONFIG.format(
                host=self.host,
                health_port=health_port,
                query_port=self.query_port,
                query_grpc_port=free_port(self.host),
                otlp_port=self.otlp_port,
                max_traces=self.max_traces,
                ui_assets=os.environ.get(UI_ASSETS_ENV, ""),
            )
        )
        log = open(self.workdir / "jaeger.log", "ab")
        self._proc = subprocess.Popen(
            [str(jaeger_binary()), "--config", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        for port in (self.otlp_port, self.query_port, health_port):
            left = max(0.5, deadline - time.monotonic())
            if not wait_for_port(self.host, port, left, alive=self.alive):
                self.stop()
                raise RuntimeError(f"Jaeger did not listen on {port}; see {self.workdir}")
        return self

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(timeout=10)
        self._proc = None

    def __enter__(self) -> JaegerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------- the query JSON API

    def _get(self, path: str, **params: object) -> object:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{self.ui_url}{path}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        if body.get("errors"):
            raise RuntimeError(f"Jaeger {path}: {body['errors']}")
        return body.get("data")

    def services(self) -> list[str]:
        return sorted(self._get("/api/services") or [])

    def operations(self, service: str) -> list[str]:
        return sorted(self._get(f"/api/services/{urllib.parse.quote(service)}/operations") or [])

    def traces(self, service: str, operation: str | None = None, limit: int = 100) -> list[dict]:
        """Traces with a span of ``service`` (and ``operation``), in Jaeger's JSON model."""
        return list(
            self._get("/api/traces", service=service, operation=operation, limit=limit) or []
        )

    def trace(self, trace_id: str) -> dict | None:
        try:
            found = self._get(f"/api/traces/{trace_id}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return found[0] if found else None
