"""The span a request batch is sent under: left out when tracing is off and the batch was queued
outside any trace (a no-op span there costs ~0.1 ms a batch and records nothing), kept whenever
the batch carries a trace or tracing is on."""

from __future__ import annotations

import contextlib

import pytest
from opentelemetry import context as otel_context

from leasehold.broker.v1 import control_pb2
from services.controller.core import BrokerInfo
from services.controller.delivery import channels
from services.controller.delivery.channels import _Batch, _batch_span, _Broker


@pytest.fixture
def spans(monkeypatch) -> list[dict]:
    started: list[dict] = []

    @contextlib.contextmanager
    def span(name, **values):
        started.append({"name": name, **values})
        yield "span"

    monkeypatch.setattr(channels.telemetry, "span", span)
    return started


def _batch(parent=None) -> _Batch:
    request = control_pb2.StopReplicaRequest(controller_epoch=3, broker_epoch=9)
    return _Batch((("StopReplica", request),), parent)


BROKER = _Broker(BrokerInfo(2, "127.0.0.1", 2), None)  # type: ignore[arg-type]


def test_no_span_when_tracing_is_off_and_nothing_is_traced(monkeypatch, spans) -> None:
    monkeypatch.setattr(channels.telemetry, "enabled", lambda: False)
    with _batch_span(BROKER, _batch()) as span:
        assert span is None
    assert spans == []


def test_a_traced_batch_keeps_its_span_even_with_tracing_off(monkeypatch, spans) -> None:
    monkeypatch.setattr(channels.telemetry, "enabled", lambda: False)
    parent = otel_context.Context()
    with _batch_span(BROKER, _batch(parent)) as span:
        assert span == "span"
    assert spans == [
        {
            "name": "controller.broker_requests",
            "parent": parent,
            "broker_id": 2,
            "broker_epoch": 9,
            "controller_epoch": 3,
            "requests": "StopReplica",
            "partition_count": 0,
        }
    ]


def test_every_batch_has_its_span_when_tracing_is_on(monkeypatch, spans) -> None:
    monkeypatch.setattr(channels.telemetry, "enabled", lambda: True)
    with _batch_span(BROKER, _batch()) as span:
        assert span == "span"
    assert [s["name"] for s in spans] == ["controller.broker_requests"]
