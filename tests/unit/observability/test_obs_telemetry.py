"""Tracing is configured only by ``OTEL_*``; with no endpoint nothing is installed at all.

The "nothing installed" check runs a fresh interpreter with every ``OTEL_*`` variable removed, so
no other test can have loaded the SDK first: after ``setup_tracing`` the API's proxy provider is
still in place, neither the SDK nor the exporter was imported, no interceptor is added, spans are
no-ops, and nothing was logged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from leasehold import telemetry

TRACE_1 = "0af7651916cd43dd8448eb211c80319c"
TRACE_2 = "1bf7651916cd43dd8448eb211c80319c"


def _carrier(trace_id: str, span_id: str = "b7ad6b7169203331") -> dict[str, str]:
    return {"traceparent": f"00-{trace_id}-{span_id}-01"}


PROBE = """
import json, sys
from leasehold import telemetry
installed = telemetry.setup_tracing("probe")
with telemetry.span("decision", topic="t") as s:
    recording = s.is_recording()
    carrier = telemetry.inject()
print(json.dumps({
    "installed": installed,
    "enabled": telemetry.enabled(),
    "provider": type(telemetry.trace.get_tracer_provider()).__name__,
    "sdk_loaded": any(m.startswith("opentelemetry.sdk") for m in sys.modules),
    "exporter_loaded": any(m.startswith("opentelemetry.exporter") for m in sys.modules),
    "server_interceptors": len(telemetry.server_interceptors()),
    "client_interceptors": len(telemetry.client_interceptors()),
    "recording": recording,
    "carrier": carrier,
    "context": telemetry.current_context() is not None,
}))
"""


def test_without_an_endpoint_nothing_is_installed():
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == {
        "installed": False,
        "enabled": False,
        "provider": "ProxyTracerProvider",
        "sdk_loaded": False,
        "exporter_loaded": False,
        "server_interceptors": 0,
        "client_interceptors": 0,
        "recording": False,
        "carrier": {},
        "context": False,
    }


@pytest.mark.parametrize(
    ("environ", "requested"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://j:4317", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://j:4317", "OTEL_SDK_DISABLED": "false"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://j:4317", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_SERVICE_NAME": "controller"}, False),
    ],
)
def test_tracing_is_requested_only_by_an_otlp_endpoint(environ, requested):
    assert telemetry.tracing_requested(environ) is requested


def _trace_of(ctx) -> str | None:
    return None if ctx is None else f"{telemetry.trace_id_of(ctx):032x}"


@pytest.mark.parametrize(
    ("carriers", "parent", "links"),
    [
        ([], None, []),
        ([{}], None, []),
        ([{"traceparent": "garbage"}], None, []),
        ([_carrier(TRACE_1)], TRACE_1, []),
        ([_carrier(TRACE_1), _carrier(TRACE_2)], TRACE_1, [TRACE_2]),
        ([_carrier(TRACE_1), _carrier(TRACE_1, "c7ad6b7169203331"), _carrier(TRACE_2)],
         TRACE_1, [TRACE_2]),
        ([{}, _carrier(TRACE_2), _carrier(TRACE_2)], TRACE_2, []),
    ],
)  # fmt: skip
def test_one_event_for_several_intents_is_a_child_of_the_first_and_links_the_rest(
    carriers, parent, links
):
    got_parent, got_links = telemetry.parent_and_links(carriers)
    assert _trace_of(got_parent) == parent
    assert [_trace_of(c) for c in got_links] == links


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, {}),
        ({"topic": "t", "partition": 0}, {"leasehold.topic": "t", "leasehold.partition": 0}),
        ({"broker_id": None, "active": False}, {"leasehold.active": False}),
    ],
)
def test_attributes_are_namespaced_and_none_is_dropped(values, expected):
    assert telemetry.attrs(**values) == expected
