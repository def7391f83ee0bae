"""gRPC spans follow the current semantic conventions, and idle long polls are not traced.

A fresh interpreter (so this test owns the process-wide tracer provider) serves two methods on
loopback through the server interceptor and calls them through the client interceptor, with an
in-memory exporter; the spans come back as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from leasehold.rpc_tracing import client_address, server_address, span_name

PROBE = r"""
import asyncio, json, sys
import grpc
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from leasehold.broker.v1 import broker_pb2
from leasehold.rpc_tracing import ClientInterceptor, ServerInterceptor

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
FETCH = "/leasehold.broker.v1.BrokerService/Fetch"

async def fetch(request, context):
    resp = broker_pb2.FetchResponse()
    if request.max_bytes:  # "data arrived"
        resp.topics.add(topic="t").partitions.add(partition=0, records=b"x")
    else:
        resp.topics.add(topic="t").partitions.add(partition=0)
    return resp

async def main():
    server = grpc.aio.server(interceptors=[ServerInterceptor(trace_empty=False)])
    async def produce(request, context):
        return broker_pb2.ProduceResponse()

    handler = grpc.method_handlers_generic_handler("leasehold.broker.v1.BrokerService", {
        "Fetch": grpc.unary_unary_rpc_method_handler(
            fetch, request_deserializer=broker_pb2.FetchRequest.FromString,
            response_serializer=broker_pb2.FetchResponse.SerializeToString),
        "Produce": grpc.unary_unary_rpc_method_handler(
            produce, request_deserializer=broker_pb2.ProduceRequest.FromString,
            response_serializer=broker_pb2.ProduceResponse.SerializeToString)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    target = f"127.0.0.1:{port}"
    async with grpc.aio.insecure_channel(
        target, interceptors=[ClientInterceptor(target, trace_empty=False)]
    ) as ch:
        call = ch.unary_unary(FETCH, request_serializer=broker_pb2.FetchRequest.SerializeToString,
                              response_deserializer=broker_pb2.FetchResponse.FromString)
        produce = ch.unary_unary("/leasehold.broker.v1.BrokerService/Produce",
                                 request_serializer=broker_pb2.ProduceRequest.SerializeToString,
                                 response_deserializer=broker_pb2.ProduceResponse.FromString)
        with trace.get_tracer("probe").start_as_current_span("leasehold produce"):
            await produce(broker_pb2.ProduceRequest(acks=-1))
            await call(broker_pb2.FetchRequest(replica_id=2, max_bytes=1))
        for _ in range(3):  # idle long polls
            await call(broker_pb2.FetchRequest(replica_id=2, max_bytes=0))
    await server.stop(None)

asyncio.run(main())
print(json.dumps([{"name": s.name, "kind": s.kind.name, "trace": s.context.trace_id,
                   "parent": s.parent.span_id if s.parent else None, "id": s.context.span_id,
                   "attributes": dict(s.attributes)} for s in exporter.get_finished_spans()]))
"""


@pytest.fixture(scope="module")
def spans() -> list[dict]:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=120, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_names_and_attributes_follow_the_conventions(spans):
    rpc = [s for s in spans if s["kind"] in ("CLIENT", "SERVER") and "Fetch" in s["name"]]
    assert {s["name"] for s in rpc} == {"leasehold.broker.v1.BrokerService/Fetch"}
    client = next(s for s in rpc if s["kind"] == "CLIENT")
    server = next(s for s in rpc if s["kind"] == "SERVER")
    assert client["attributes"]["server.address"] == "127.0.0.1"
    assert isinstance(client["attributes"]["server.port"], int)
    assert server["attributes"]["client.address"] == "127.0.0.1"
    assert isinstance(server["attributes"]["client.port"], int)
    for s in rpc:
        a = s["attributes"]
        assert (a["rpc.system"], a["rpc.service"], a["rpc.method"]) == (
            "grpc", "leasehold.broker.v1.BrokerService", "Fetch")  # fmt: skip
        assert a["rpc.grpc.status_code"] == 0
        assert not [k for k in a if k.startswith("net.")]


def test_one_trace_from_the_caller_and_no_span_for_idle_long_polls(spans):
    root = next(s for s in spans if s["name"] == "leasehold produce")
    produce = [s for s in spans if s["name"].endswith("/Produce")]
    client = next(s for s in produce if s["kind"] == "CLIENT")
    server = next(s for s in produce if s["kind"] == "SERVER")
    assert client["trace"] == server["trace"] == root["trace"]
    assert (client["parent"], server["parent"]) == (root["id"], client["id"])
    fetch = [s for s in spans if s["name"].endswith("/Fetch")]
    fetch_client = next(s for s in fetch if s["kind"] == "CLIENT")
    fetch_server = next(s for s in fetch if s["kind"] == "SERVER")
    assert (fetch_client["parent"], fetch_server["parent"]) == (root["id"], fetch_client["id"])
    # the three empty answers: no span on either side
    assert len(spans) == 5


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("10.0.0.1:9092", {"server.address": "10.0.0.1", "server.port": 9092}),
        ("dns:///controller:9190", {"server.address": "controller", "server.port": 9190}),
        ("[::1]:9093", {"server.address": "::1", "server.port": 9093}),
    ],
)
def test_server_address_of_a_target(target, expected):
    assert server_address(target) == expected


def test_client_address_and_span_name():
    assert client_address("ipv4:127.0.0.1:5555") == {"client.address": "127.0.0.1",
                                                    "client.port": 5555}  # fmt: skip
    assert client_address("ipv6:[::1]:7") == {"client.address": "::1", "client.port": 7}
    assert span_name("/leasehold.admin.v1.AdminService/CreateTopics") == (
        "leasehold.admin.v1.AdminService/CreateTopics"
    )
