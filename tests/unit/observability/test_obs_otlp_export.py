"""What a service exports over OTLP/gRPC, received in-process (fast; Jaeger is end to end).

A child process configured only by ``OTEL_*`` variables, as every service is, makes a span,
stores its context the way admin stores it in an etcd intent, parents a second span on the
context read back, and shuts tracing down. The receiver must get both spans in one trace, the
second a child of the first, with the service name and ``leasehold.*`` attributes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from otlp_receiver import OtlpReceiver

SCRIPT = """
from leasehold import telemetry
assert telemetry.setup_tracing("leasehold-unit")
with telemetry.span("admin.validate", operation="CreateTopics"):
    carrier = telemetry.inject()
with telemetry.span("controller.event", parent=telemetry.extract(carrier), event="TopicChange"):
    pass
telemetry.shutdown()
"""


def test_a_stored_context_parents_the_next_span_in_one_exported_trace():
    with OtlpReceiver() as receiver:
        env = dict(
            os.environ,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_INSECURE="true",
            OTEL_TRACES_SAMPLER="parentbased_always_on",
        )
        env.pop("OTEL_SDK_DISABLED", None)
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 10
        while len(receiver.spans()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        spans = {s.name: s for s in receiver.spans()}
    validate, event = spans["admin.validate"], spans["controller.event"]
    assert {validate.service, event.service} == {"leasehold-unit"}
    assert event.trace_id == validate.trace_id
    assert event.parent_span_id == validate.span_id and validate.parent_span_id == ""
    assert validate.attributes["leasehold.operation"] == "CreateTopics"
    assert event.attributes["leasehold.event"] == "TopicChange"
