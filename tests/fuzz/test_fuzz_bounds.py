"""Oversized input on every RPC: a short error (or a normal answer), fast, and no lasting memory.

Two hostile shapes per method of every service, built from the request's descriptor so a new
field or RPC is covered without editing this file:

* **long**: every string field (and map key and value) 100,000 characters, every bytes field
  100,000 bytes, one element in each repeated message field, nested three deep;
* **many**: the request's first repeated message field with as many empty elements as fit just
  under the service's receive limit, and one beyond it (refused by gRPC before decoding).

Every answer keeps the fuzz invariants (``FuzzCluster.call``: a known status with a message that
fits a header, the process alive), comes within ``FAST_S``, and the process's resident memory
after all the calls is within ``RSS_SLACK_MB`` of before (``/proc/<pid>/status``).
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import pytest
from fuzz_harness import SACRIFICE, FuzzCluster
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from leasehold.admin.v1 import admin_pb2
from leasehold.broker.v1 import broker_pb2, control_pb2
from leasehold.controller.v1 import controller_pb2

pytestmark = pytest.mark.e2e

LONG = 100_000
FAST_S = 5.0
RSS_SLACK_MB = 64
ADMIN_RECEIVE = 2 * 1024 * 1024  # the admin service's default --max-receive-bytes
CONTROLLER_RECEIVE = 16 * 1024 * 1024
SERVICES = [
    ("admin", admin_pb2, "AdminService", ADMIN_RECEIVE),
    ("broker", broker_pb2, "BrokerService", 64 * 1024 * 1024),
    ("control", control_pb2, "BrokerControlService", 64 * 1024 * 1024),
    ("controller", controller_pb2, "ControllerService", CONTROLLER_RECEIVE),
]
METHODS = [
    (kind, method.name, method.input_type.name, limit)
    for kind, module, service, limit in SERVICES
    for method in module.DESCRIPTOR.services_by_name[service].methods
    # The control stream carries the unary methods' requests, each under their bounds
    # (tests/integration/broker/test_control_stream.py); the unary ones are fuzzed here.
    if not method.client_streaming
]


def long_request(cls: type[Message], depth: int = 0) -> Message:
    """Every string and bytes field at LONG, one element per repeated message, ints -1 (no
    id or epoch a real process has, so nothing is obeyed by accident)."""
    msg = cls()
    for f in cls.DESCRIPTOR.fields:
        target = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            value_field = f.message_type.fields_by_name["value"]
            if value_field.type == FieldDescriptor.TYPE_STRING:
                target["k" * LONG] = "v" * LONG
            continue
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 3:
                continue
            child = long_request(f.message_type._concrete_class, depth + 1)
            if f.is_repeated:
                target.append(child)
            else:
                target.CopyFrom(child)
            continue
        if f.type == FieldDescriptor.TYPE_STRING:
            value: Any = "s" * LONG
        elif f.type == FieldDescriptor.TYPE_BYTES:
            value = b"b" * LONG
        elif f.type == FieldDescriptor.TYPE_BOOL:
            value = False
        elif f.type == FieldDescriptor.TYPE_ENUM:
            value = 0
        elif f.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
            value = -1.0
        else:
            value = -1
        if f.is_repeated:
            target.append(value)
        else:
            setattr(msg, f.name, value)
    return msg


def many_request(cls: type[Message], wire_bytes: int) -> Message | None:
    """``cls`` with its first repeated message field holding empty elements: ``wire_bytes``
    of them, give or take (each is two bytes on the wire); None without such a field."""
    for f in cls.DESCRIPTOR.fields:
        if f.is_repeated and f.type == FieldDescriptor.TYPE_MESSAGE:
            if f.message_type.GetOptions().map_entry:
                continue
            item = f.message_type._concrete_class()
            msg = cls()
            getattr(msg, f.name).extend([item] * (wire_bytes // 2))
            return msg
    return None


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def target(fuzz: FuzzCluster, kind: str):
    if kind == "admin":
        return fuzz.cluster.admin, fuzz.admin()
    if kind == "broker":
        return fuzz.cluster.brokers[SACRIFICE], fuzz.broker(SACRIFICE)
    if kind == "control":
        return fuzz.cluster.brokers[SACRIFICE], fuzz.control(SACRIFICE)
    controller = fuzz.active_controller()
    return fuzz.cluster.controllers[controller], fuzz.controller(controller)


def timed_call(fuzz: FuzzCluster, proc, stub, method: str, request: Message | bytes):
    started = time.monotonic()
    outcome = fuzz.call(proc, getattr(stub, method), request)
    took = time.monotonic() - started
    assert took < FAST_S, f"{method} took {took:.1f} s on an oversized request"
    return outcome


@pytest.fixture(scope="module")
def memory(fuzz):
    """RSS of every service before the module's calls, checked after all of them."""
    fuzz.wait_quiet()
    procs = [
        fuzz.cluster.admin,
        fuzz.cluster.brokers[SACRIFICE],
        *fuzz.cluster.controllers.values(),
    ]
    before = {p.name: rss_mb(p.pid) for p in procs}
    yield
    after = {p.name: rss_mb(p.pid) for p in procs}
    figures = ", ".join(f"{n} {before[n]:.0f} -> {after[n]:.0f} MB" for n in before)
    print(f"\nRSS before/after the oversized requests: {figures}")
    for name in before:
        assert after[name] - before[name] < RSS_SLACK_MB, figures


@pytest.mark.parametrize(("kind", "method", "request_type", "limit"), METHODS)
def test_long_fields(fuzz, memory, kind, method, request_type, limit):
    proc, stub = target(fuzz, kind)
    module = dict((k, m) for k, m, _, _ in SERVICES)[kind]
    request = long_request(getattr(module, request_type))
    outcome = timed_call(fuzz, proc, stub, method, request)
    # Well inside every receive limit: answered on its merits, not refused for its size.
    assert request.ByteSize() < ADMIN_RECEIVE
    assert outcome.status != grpc.StatusCode.RESOURCE_EXHAUSTED, outcome


@pytest.mark.parametrize(("kind", "method", "request_type", "limit"), METHODS)
def test_many_elements(fuzz, memory, kind, method, request_type, limit):
    """Just under the receive limit: answered on its merits (usually a bounds or validation
    error); past it: RESOURCE_EXHAUSTED from gRPC, before anything is decoded. The 64 MiB
    services are tried at 2 MiB: enough elements for any per-request count."""
    proc, stub = target(fuzz, kind)
    module = dict((k, m) for k, m, _, _ in SERVICES)[kind]
    if limit <= CONTROLLER_RECEIVE:
        # Past the limit the content does not matter: gRPC refuses it by its length alone.
        service = dict((k, n) for k, _, n, _ in SERVICES)[kind]
        package = dict((k, m) for k, m, _, _ in SERVICES)[kind].DESCRIPTOR.package
        raw = fuzz.raw(proc, f"/{package}.{service}/{method}")
        outcome = timed_call(fuzz, proc, raw, "call", b"\0" * (limit + 1024))
        assert outcome.status == grpc.StatusCode.RESOURCE_EXHAUSTED, outcome
    size = min(limit, ADMIN_RECEIVE) - 64 * 1024
    under = many_request(getattr(module, request_type), size)
    if under is None:
        pytest.skip(f"{request_type} has no repeated message field")
    timed_call(fuzz, proc, stub, method, under)
