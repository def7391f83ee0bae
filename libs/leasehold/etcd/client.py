"""A small asyncio etcd v3 client on top of aetcd's generated stubs.

aetcd's high-level ``Client`` cannot read at a revision, page a range, use TLS, or resume a watch,
all of which Leasehold needs; its stubs and messages are fine, so this module owns the gRPC
channel and speaks to the stubs directly. Values above gRPC's default 4 MiB are possible on large
range reads, so ranges are paged and the channel's receive limit is raised.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass

import grpc
from aetcd import rpc

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
PAGE_SIZE = 10_000  # etcd re-counts the rest of the range per page: few big pages

Compare = rpc.Compare
RequestOp = rpc.RequestOp


class EtcdError(Exception):
    """etcd could not be reached or refused a request; callers may retry (gRPC UNAVAILABLE)."""

    grpc_status = "UNAVAILABLE"


class CompactedError(EtcdError):
    """A watch asked for a revision that etcd has compacted away."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"revision compacted; oldest available is {compact_revision}")
        self.compact_revision = compact_revision


@dataclass(frozen=True, slots=True)
class KV:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int

    @classmethod
    def from_pb(cls, kv: rpc.KeyValue) -> KV:
        return cls(kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: ``kv.value`` is empty for deletions; ``prev`` is set when asked for."""

    deleted: bool
    kv: KV
    prev: KV | None = None


def _watch_event(ev: rpc.Event) -> WatchEvent:
    prev = KV.from_pb(ev.prev_kv) if ev.HasField("prev_kv") else None
    return WatchEvent(ev.type == rpc.Event.DELETE, KV.from_pb(ev.kv), prev)


class WatchEvents(Sequence[WatchEvent]):
    """The events of one watch response, turned into ``WatchEvent`` values when first read.

    A watcher that only queues a batch on receipt (the controller's, which decodes it later on
    its event loop) then does not pay for thousands of conversions while the response arrives;
    ``keys`` and ``last_revision`` read the protobuf directly.
    """

    __slots__ = ("_events", "_raw")

    def __init__(self, raw: Sequence[rpc.Event] = (), events: Sequence[WatchEvent] = ()) -> None:
        self._raw = raw
        self._events: tuple[WatchEvent, ...] | None = None if raw else tuple(events)

    def _converted(self) -> tuple[WatchEvent, ...]:
        if self._events is None:
            self._events = tuple(map(_watch_event, self._raw))
            self._raw = ()
        return self._events

    def __len__(self) -> int:
        return len(self._events) if self._events is not None else len(self._raw)

    def __getitem__(self, index):  # type: ignore[override]
        return self._converted()[index]

    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(self._converted())

    def keys(self) -> list[bytes]:
        if self._events is not None:
            return [ev.kv.key for ev in self._events]
        return [ev.kv.key for ev in self._raw]

    def changes(self) -> list[tuple[bool, bytes, bytes]]:
        """``(deleted, key, value)`` per event, read from the protobuf without converting the
        events (for a watcher that needs no more, such as the benchmarks' observers)."""
        if self._events is not None:
            return [(ev.deleted, ev.kv.key, ev.kv.value) for ev in self._events]
        delete = rpc.Event.DELETE
        return [(ev.type == delete, ev.kv.key, ev.kv.value) for ev in self._raw]

    @property
    def last_revision(self) -> int:
        """The highest mod revision among the events (0 when there are none)."""
        source = self._events if self._events is not None else self._raw
        return max((ev.kv.mod_revision for ev in source), default=0)


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """The events of one watch response, all at or below ``revision``."""

    events: WatchEvents
    revision: int


@dataclass(frozen=True, slots=True)
class TxnResult:
    succeeded: bool
    revision: int
    responses: tuple[rpc.ResponseOp, ...]

    def range_kvs(self, index: int) -> list[KV]:
        return [KV.from_pb(kv) for kv in self.responses[index].response_range.kvs]


def prefix_end(prefix: bytes) -> bytes:
    """The exclusive end of the key range that starts with ``prefix``."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


# --- compare and operation builders -------------------------------------------------------------

_OPS = {"=": Compare.EQUAL, "!=": Compare.NOT_EQUAL, "<": Compare.LESS, ">": Compare.GREATER}


def cmp_create_revision(key: bytes, op: str, revision: int) -> rpc.Compare:
    return Compare(result=_OPS[op], target=Compare.CREATE, key=key, create_revision=revision)


def cmp_mod_revision(key: bytes, op: str, revision: int) -> rpc.Compare:
    return Compare(result=_OPS[op], target=Compare.MOD, key=key, mod_revision=revision)


def cmp_version(key: bytes, op: str, version: int) -> rpc.Compare:
    return Compare(result=_OPS[op], target=Compare.VERSION, key=key, version=version)


def op_put(key: bytes, value: bytes, lease: int = 0) -> rpc.RequestOp:
    return RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=lease))


def op_delete(key: bytes, *, prefix: bool = False) -> rpc.RequestOp:
    end = prefix_end(key) if prefix else b""
    return RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=key, range_end=end))


def op_get(key: bytes) -> rpc.RequestOp:
    return RequestOp(request_range=rpc.RangeRequest(key=key))


@dataclass(frozen=True)
class TlsFiles:
    """Certificate files for a TLS (optionally mutual) connection."""

    ca: str
    cert: str = ""
    key: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str) -> bytes | None:
            if not path:
                return None
            with open(path, "rb") as f:
                return f.read()

        return grpc.ssl_channel_credentials(read(self.ca), read(self.key), read(self.cert))


# Metadata etcd's own client sends (``clientv3.WithRequireLeader``): a member that has lost its
# raft leader (one cut off in a minority) rejects such a call at once with "etcdserver: no
# leader", and cancels such a watch or keep-alive stream, instead of holding it until its
# deadline. The caller's retry then goes, by round robin, to another member.
REQUIRE_LEADER = (("hasleader", "true"),)
# How etcd answers a call carrying REQUIRE_LEADER on such a member: the call was not executed, so
# retrying it (a write too) is safe.
NO_LEADER = "etcdserver: no leader"


def _target(endpoints: Sequence[str]) -> str:
    """A gRPC target for one or more ``host:port`` endpoints (several IPs fail over in order)."""
    cleaned = [e.removeprefix("http://").removeprefix("https://") for e in endpoints]
    if len(cleaned) == 1:
        return cleaned[0]
    if all(e.split(":")[0].replace(".", "").isdigit() for e in cleaned):
        return "ipv4:" + ",".join(cleaned)
    raise ValueError(
        "several etcd endpoints must be IP addresses; use one DNS name that resolves to all"
    )


class EtcdClient:
    """An etcd v3 connection. Create with endpoints, ``await connect()``, ``await close()``."""

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        tls: TlsFiles | None = None,
        timeout: float = 5.0,
    ) -> None:
        self._target = _target(endpoints)
        self.endpoints = tuple(endpoints)
        self._tls = tls
        self.timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self.kv: rpc.KVStub
        self.lease: rpc.LeaseStub
        self.watch_stub: rpc.WatchStub
        self.maintenance: rpc.MaintenanceStub

    def _options(self) -> list[tuple[str, int]]:
        return [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            # etcd's server refuses pings on a connection with no call open (gRPC's
            # PermitWithoutStream is false there) and answers a few with GOAWAY
            # "too_many_pings"; idle, a dead connection is found by the next call's deadline.
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.initial_reconnect_backoff_ms", 100),
            # etcd back from a restart or a pause is seen within half a second.
            ("grpc.max_reconnect_backoff_ms", 500),
            # Every member is connected and calls take turns: a call retried after one member
            # failed it reaches another (pick_first would stay on a member that answers
            # nothing useful for as long as its TCP connection lives).
            ("grpc.lb_policy_name", "round_robin"),
        ]

    async def connect(self) -> None:
        options = self._options()
        if self._tls is None:
            self._channel = grpc.aio.insecure_channel(self._target, options=options)
        else:
            creds = self._tls.credentials()
            self._channel = grpc.aio.secure_channel(self._target, creds, options=options)
        self.kv = rpc.KVStub(self._channel)
        # Txn taking a request already in wire form (``txn_encoded``): no serialiser.
        self._txn_encoded = self._channel.unary_unary(
            "/etcdserverpb.KV/Txn", response_deserializer=rpc.TxnResponse.FromString
        )
        self.lease = rpc.LeaseStub(self._channel)
        self.watch_stub = rpc.WatchStub(self._channel)
        self.maintenance = rpc.MaintenanceStub(self._channel)

    @property
    def tls(self) -> TlsFiles | None:
        return self._tls

    def sync_channel(self) -> grpc.Channel:
        """A blocking channel of its own to the same etcd (for a thread: lease keep-alives)."""
        options = dict(self._options())
        options.update({"grpc.min_reconnect_backoff_ms": 100, "grpc.enable_retries": 0})
        if self._tls is None:
            return grpc.insecure_channel(self._target, options=list(options.items()))
        creds = self._tls.credentials()
        return grpc.secure_channel(self._target, creds, options=list(options.items()))

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def __aenter__(self) -> EtcdClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, method, request, timeout: float | None = None, *, name: str = ""):
        """One call within ``timeout``; one a leaderless member refused is sent again (round
        robin takes it to the next member) until it is answered or the time is up."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            try:
                return await method(
                    request,
                    timeout=max(deadline - time.monotonic(), 0.001),
                    wait_for_ready=True,
                    metadata=REQUIRE_LEADER,
                )
            except grpc.aio.AioRpcError as e:
                refused = e.code() == grpc.StatusCode.UNAVAILABLE and e.details() == NO_LEADER
                if refused and time.monotonic() < deadline - 0.01:
                    await asyncio.sleep(0.01)
                    continue
                name = name or type(request).__name__
                raise EtcdError(f"etcd {name} failed: {e.code().name} {e.details()}") from e

    # --- key-value ------------------------------------------------------------------------------

    async def get(self, key: bytes, *, revision: int = 0) -> KV | None:
        resp = await self._call(self.kv.Range, rpc.RangeRequest(key=key, revision=revision))
        return KV.from_pb(resp.kvs[0]) if resp.kvs else None

    async def get_with_revision(self, key: bytes) -> tuple[KV | None, int]:
        resp = await self._call(self.kv.Range, rpc.RangeRequest(key=key))
        return (KV.from_pb(resp.kvs[0]) if resp.kvs else None), resp.header.revision

    async def range_prefix(
        self,
        prefix: bytes,
        *,
        revision: int = 0,
        keys_only: bool = False,
        page_size: int = PAGE_SIZE,
    ) -> tuple[list[KV], int]:
        """Every key under ``prefix`` at one revision (the current one when 0), read in pages."""
        end = prefix_end(prefix)
        start = prefix
        out: list[KV] = []
        while True:
            req = rpc.RangeRequest(
                key=start, range_end=end, revision=revision, limit=page_size, keys_only=keys_only
            )
            resp = await self._call(self.kv.Range, req, timeout=max(self.timeout, 30.0))
            if revision == 0:
                revision = resp.header.revision
            out.extend(KV.from_pb(kv) for kv in resp.kvs)
            if not resp.more or not resp.kvs:
                return out, revision
            start = resp.kvs[-1].key + b"\0"

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> int:
        resp = await self._call(self.kv.Put, rpc.PutRequest(key=key, value=value, lease=lease))
        return resp.header.revision

    async def delete(self, key: bytes, *, prefix: bool = False) -> int:
        end = prefix_end(key) if prefix else b""
        resp = await self._call(self.kv.DeleteRange, rpc.DeleteRangeRequest(key=key, range_end=end))
        return resp.deleted

    async def txn(
        self,
        compare: Sequence[rpc.Compare],
        success: Sequence[rpc.RequestOp] = (),
        failure: Sequence[rpc.RequestOp] = (),
    ) -> TxnResult:
        req = rpc.TxnRequest(compare=list(compare), success=list(success), failure=list(failure))
        resp = await self._call(self.kv.Txn, req)
        return TxnResult(resp.succeeded, resp.header.revision, tuple(resp.responses))

    async def txn_encoded(self, request: bytes) -> TxnResult:
        """``txn`` with the request already encoded (a ``TxnRequest``'s bytes)."""
        resp = await self._call(self._txn_encoded, request, name="TxnRequest")
        return TxnResult(resp.succeeded, resp.header.revision, tuple(resp.responses))

    async def compact(self, revision: int) -> None:
        await self._call(self.kv.Compact, rpc.CompactionRequest(revision=revision, physical=True))

    # --- leases ---------------------------------------------------------------------------------

    async def lease_grant(self, ttl: int) -> int:
        resp = await self._call(self.lease.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl))
        if resp.error:
            raise EtcdError(f"lease grant failed: {resp.error}")
        return resp.ID

    async def lease_revoke(self, lease_id: int) -> None:
        try:
            await self._call(self.lease.LeaseRevoke, rpc.LeaseRevokeRequest(ID=lease_id))
        except EtcdError as e:
            if "NOT_FOUND" not in str(e) and "not found" not in str(e):
                raise

    async def lease_ttl(self, lease_id: int) -> int:
        """Whole seconds the lease has left: -1 once etcd no longer has it, 0 under a second."""
        resp = await self._call(self.lease.LeaseTimeToLive, rpc.LeaseTimeToLiveRequest(ID=lease_id))
        return resp.TTL

    # --- watches --------------------------------------------------------------------------------

    async def watch(
        self,
        key: bytes,
        *,
        prefix: bool = False,
        start_revision: int = 0,
        prev_kv: bool = False,
    ) -> AsyncIterator[WatchBatch]:
        """Yield batches of events from ``start_revision`` on, forever.

        Raises :class:`CompactedError` when ``start_revision`` is compacted and
        :class:`EtcdError` when the stream breaks; callers resume from the last revision seen.
        Progress notifications advance ``revision`` even when nothing changes.
        """
        create = rpc.WatchCreateRequest(
            key=key,
            range_end=prefix_end(key) if prefix else b"",
            start_revision=start_revision,
            progress_notify=True,
            prev_kv=prev_kv,
        )
        queue: asyncio.Queue = asyncio.Queue()
        await queue.put(rpc.WatchRequest(create_request=create))

        async def requests():
            while True:
                item = await queue.get()
                if item is None:
                    return
                yield item

        call = self.watch_stub.Watch(requests(), metadata=REQUIRE_LEADER)
        try:
            async for resp in call:
                if resp.compact_revision:
                    raise CompactedError(resp.compact_revision)
                if resp.canceled:
                    raise EtcdError(f"watch canceled by etcd: {resp.cancel_reason}")
                if resp.created and not resp.events:
                    continue
                yield WatchBatch(WatchEvents(resp.events), resp.header.revision)
        except grpc.aio.AioRpcError as e:
            raise EtcdError(f"watch stream broke: {e.code().name} {e.details()}") from e
        finally:
            await queue.put(None)
            call.cancel()
