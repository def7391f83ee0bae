"""One running cluster for every fuzz test, and the invariants each fuzzed call must keep.

The cluster (2 controllers, 4 brokers, admin) hosts one topic, ``fuzz-base``, on brokers 1-3 with
some records in it (admin fuzzing may add small ``fz-*`` topics anywhere, never touches the base
topic). Broker 4 hosts no base replica: it is the target of BrokerControlService fuzzing. The
cluster is plaintext, where a request copying etcd's epoch and holder passes the sender check and
an UpdateMetadata carrying it is obeyed (``control_fence`` says what a plaintext broker cannot
check): fuzzing a broker that hosts data could mislead clients of the base topic.

Every call goes through :meth:`FuzzCluster.call`, which checks the invariants that hold for any
input: the answer is either OK with a response whose error codes are all known ``ErrorCode``
values, or a gRPC error with a non-empty message that is neither INTERNAL nor UNKNOWN (nor
DEADLINE_EXCEEDED: the service hung) and is bounded (``MAX_STATUS_CHARS``: it must fit an HTTP/2
header however long the input was); and the process called is still alive afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import event
from hypothesis.control import currently_in_test_context

from leasehold.admin.v1 import admin_pb2_grpc
from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc, control_pb2_grpc
from leasehold.client import AdminClient, Producer
from leasehold.common.v1 import common_pb2
from leasehold.controller.v1 import controller_pb2_grpc
from leasehold.errors import LeaseholdError
from leasehold.etcd import EtcdClient, Keyspace
from leasehold.metadata.v1 import metadata_pb2
from leasehold.testing.cluster import ClusterSpec, LocalCluster, Proc

BASE_TOPIC = "fuzz-base"
BASE_ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 1]}
SACRIFICE = 4  # the broker BrokerControlService fuzzing talks to
CALL_TIMEOUT_S = 15.0
# A status message never quotes unbounded input (``leasehold.grpc_errors.bounded``).
MAX_STATUS_CHARS = 1100
KNOWN_CODES = frozenset(common_pb2.ErrorCode.values())
FORBIDDEN = (
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.DEADLINE_EXCEEDED,
)


@dataclass(frozen=True)
class Outcome:
    """What a call returned: a response, or a gRPC status with its message."""

    response: Any = None
    status: grpc.StatusCode = grpc.StatusCode.OK
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status != grpc.StatusCode.OK


def error_codes(message: Message) -> Iterator[tuple[str, int]]:
    """Every ``ErrorCode`` field anywhere in ``message``: (field path, value)."""
    for field, value in message.ListFields():
        items = value if field.is_repeated else [value]
        if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type.name == "ErrorCode":
            for code in items:
                yield field.name, code
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue
            for item in items:
                for path, code in error_codes(item):
                    yield f"{field.name}.{path}", code


def note(label: str) -> None:
    """Count an outcome in hypothesis' statistics (``--hypothesis-show-statistics``) when
    called from a hypothesis test; table-driven tests share the same helpers."""
    if currently_in_test_context():
        event(label)


class FuzzCluster:
    def __init__(self) -> None:
        self.cluster = LocalCluster(ClusterSpec(controllers=2, brokers=4, session_ttl=3))
        self.keyspace = Keyspace(self.cluster.spec.cluster_id)
        self._runner = asyncio.Runner()
        self._etcd: EtcdClient | None = None
        self._channels: dict[str, grpc.Channel] = {}
        # What one fuzz test learned that a later one needs (e.g. the epoch broker 4 accepted).
        self.notes: dict[str, int] = {}

    # --------------------------------------------------------------------------- lifecycle

    def start(self) -> FuzzCluster:
        self.cluster.start()
        self._etcd = EtcdClient([self.cluster.etcd.endpoint])
        self.run(self._etcd.connect())
        self.run(self._prepare())
        self.wait_quiet()
        return self

    async def _prepare(self) -> None:
        deadline = time.monotonic() + 60
        async with AdminClient(self.cluster.admin_address, timeout=10) as admin:
            while True:
                try:
                    d = await admin.describe_cluster()
                    if len(d.brokers) == 4 and d.active_controller.epoch > 0:
                        break
                except LeaseholdError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("fuzz cluster not ready")
                await asyncio.sleep(0.2)
            created = await admin.create_topic(
                BASE_TOPIC, assignment=BASE_ASSIGNMENT, timeout_ms=30_000
            )
            assert created.error_code == 0, created.error_message
        async with Producer(admin=self.cluster.admin_address, acks="all") as producer:
            for p in BASE_ASSIGNMENT:
                for i in range(5):
                    await producer.send(BASE_TOPIC, f"seed-{p}-{i}".encode(), partition=p)
            await producer.flush()

    def stop(self) -> None:
        # Broker 4's metadata may hold fuzzed controller endpoints (an UpdateMetadata copying
        # etcd's epoch and holder is obeyed without TLS): its controlled shutdown would chase them.
        self.cluster.brokers[SACRIFICE].kill()
        for ch in self._channels.values():
            ch.close()
        if self._etcd is not None:
            self.run(self._etcd.close())
        self._runner.close()
        self.cluster.stop()
        self.cluster.remove_workdir()

    def run(self, coro) -> Any:
        return self._runner.run(coro)

    # ------------------------------------------------------------------------------- stubs

    def _channel(self, address: str) -> grpc.Channel:
        ch = self._channels.get(address)
        if ch is None:
            ch = self._channels[address] = grpc.insecure_channel(address)
        return ch

    def admin(self) -> admin_pb2_grpc.AdminServiceStub:
        return admin_pb2_grpc.AdminServiceStub(self._channel(self.cluster.admin_address))

    def broker(self, broker_id: int) -> broker_pb2_grpc.BrokerServiceStub:
        return broker_pb2_grpc.BrokerServiceStub(self._channel(self.address(broker_id)))

    def control(self, broker_id: int) -> control_pb2_grpc.BrokerControlServiceStub:
        return control_pb2_grpc.BrokerControlServiceStub(self._channel(self.address(broker_id)))

    def controller(self, controller_id: int) -> controller_pb2_grpc.ControllerServiceStub:
        address = self.cluster.controllers[controller_id].address
        return controller_pb2_grpc.ControllerServiceStub(self._channel(address))

    def raw(self, proc: Proc, method: str):
        """``method`` of ``proc`` taking and returning bytes (``.call(payload, timeout=...)``)."""

        class Raw:
            call = self._channel(proc.address).unary_unary(method)

        return Raw

    def address(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id].address

    # ------------------------------------------------------------------------------- calls

    def call(self, proc: Proc, method: Callable[..., Any], request: Message) -> Outcome:
        """Call and check the invariants every answer must keep (module docstring)."""
        try:
            response = method(request, timeout=CALL_TIMEOUT_S)
            outcome = Outcome(response)
        except grpc.RpcError as e:
            outcome = Outcome(None, e.code(), e.details() or "")
        assert proc.alive(), f"{proc.name} died on {type(request).__name__}: {request!r:.500}"
        if outcome.failed:
            assert outcome.status not in FORBIDDEN, (
                f"{type(request).__name__} answered {outcome.status.name}: {outcome.message}"
            )
            assert outcome.message.strip(), f"{outcome.status.name} without a message"
            assert len(outcome.message) <= MAX_STATUS_CHARS, (
                f"{type(request).__name__}: a {len(outcome.message)}-character status message"
            )
        elif isinstance(outcome.response, Message):
            unknown = [(p, c) for p, c in error_codes(outcome.response) if c not in KNOWN_CODES]
            assert not unknown, f"unknown error codes {unknown} in {outcome.response}"
        return outcome

    # -------------------------------------------------------------------------- etcd state

    def revision(self) -> int:
        assert self._etcd is not None
        return self.run(self._etcd.get_with_revision(self.keyspace.controller_epoch))[1]

    def pending_intents(self) -> int:
        """Admin intents the controller has not finished (deletions, reassignments, elections)."""
        assert self._etcd is not None
        ks = self.keyspace
        prefixes = (ks.delete_topics_prefix, ks.reassignments_prefix, ks.elections_prefix)
        return sum(
            len(self.run(self._etcd.range_prefix(prefix, keys_only=True))[0]) for prefix in prefixes
        )

    def wait_quiet(self, quiet_s: float = 1.0, timeout_s: float = 30.0) -> int:
        """Until no admin intent is pending and the etcd revision stays put for ``quiet_s``
        (after an accepted change the controller and brokers react asynchronously)."""
        deadline = time.monotonic() + timeout_s
        last, since = self.revision(), time.monotonic()
        while time.monotonic() - since < quiet_s or self.pending_intents():
            assert time.monotonic() < deadline, (
                f"etcd did not settle within {timeout_s}s ({self.pending_intents()} intents left)"
            )
            time.sleep(0.1)
            now = self.revision()
            if now != last:
                last, since = now, time.monotonic()
        return last

    def active_controller(self) -> int:
        assert self._etcd is not None
        kv = self.run(self._etcd.get(self.keyspace.controller_epoch))
        return metadata_pb2.ControllerEpoch.FromString(kv.value).controller_id

    def controller_epoch(self) -> int:
        assert self._etcd is not None
        kv = self.run(self._etcd.get(self.keyspace.controller_epoch))
        return metadata_pb2.ControllerEpoch.FromString(kv.value).epoch

    def live_endpoints(self) -> list[common_pb2.BrokerEndpoint]:
        return [
            common_pb2.BrokerEndpoint(broker_id=b, host="127.0.0.1", port=proc.port)
            for b, proc in sorted(self.cluster.brokers.items())
        ]

    def partition_state(self, partition: int) -> tuple[metadata_pb2.PartitionState, int]:
        """The base topic's partition state and its partition epoch (mod revision)."""
        assert self._etcd is not None
        kv = self.run(self._etcd.get(self.keyspace.partition_state(BASE_TOPIC, partition)))
        return metadata_pb2.PartitionState.FromString(kv.value), kv.mod_revision

    def broker_epoch(self, broker_id: int) -> int:
        assert self._etcd is not None
        kv = self.run(self._etcd.get(self.keyspace.broker(broker_id)))
        return kv.create_revision if kv is not None else -1

    # --------------------------------------------------------------------- broker state

    def broker_view(self, broker_id: int) -> tuple[bytes, ...]:
        """What a broker tells clients that no rejected call may change: its Metadata (all
        topics) and the log start and end offsets it reports for the base partitions."""
        meta = self.broker(broker_id).Metadata(
            broker_pb2.MetadataRequest(all_topics=True), timeout=CALL_TIMEOUT_S
        )
        views = [meta.SerializeToString(deterministic=True)]
        for timestamp in (-2, -1):
            offsets = self.broker(broker_id).ListOffsets(
                broker_pb2.ListOffsetsRequest(
                    replica_id=-1,
                    topics=[
                        broker_pb2.ListOffsetsTopic(
                            topic=BASE_TOPIC,
                            partitions=[
                                broker_pb2.ListOffsetsPartition(partition=p, timestamp=timestamp)
                                for p in BASE_ASSIGNMENT
                            ],
                        )
                    ],
                ),
                timeout=CALL_TIMEOUT_S,
            )
            views.append(offsets.SerializeToString(deterministic=True))
        return tuple(views)

    def data_dir(self, broker_id: int) -> Path:
        return Path(self.cluster.workdir) / f"broker-{broker_id}"
