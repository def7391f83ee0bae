"""What simulated brokers of one process share: each UpdateMetadata body decoded once, and
each topic's next cached state, and each request's next topics map, built once
(``metadata_cache.SharedUpdates``).

The controller sends every broker the same UpdateMetadata partition states behind a header of
its own (its broker epoch). On a real cluster each broker decodes and applies them on its own
CPU, all in parallel; a hundred simulated brokers in one process would do it a hundred times
over on the same core, and hold a hundred copies of the cluster's metadata. Here the first
broker of the process to receive a body decodes and checks it (the servicer's own
``decode_update_metadata``), and the others take that result under their own header; their
caches then share the topic states built from it. Each broker still receives its request over
gRPC, parses its header (its whole request, if its body is new to the process), and runs its
own fences, digest checks and cache update: what is shared is work whose result depends on the
body alone.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import Future

import crc32c

from leasehold.broker.v1 import control_pb2
from leasehold.heap import HeapFreezer
from services.broker_agent.control_servicer import decode_update_metadata
from services.broker_agent.metadata_cache import MetadataCache, SharedUpdates
from services.broker_agent.model import UpdateMetadata

# The header fields an UpdateMetadata has before its partition states, which differ per broker
# (controller id, controller epoch, broker epoch), as their varint tags; and its last field,
# ``nothing_queued``, when true (a hint per request, not part of what the body says).
_HEADER_TAGS = frozenset(
    (control_pb2.UpdateMetadataRequest.DESCRIPTOR.fields_by_name[name].number << 3)
    for name in ("controller_id", "controller_epoch", "broker_epoch")
)
_NOTHING_QUEUED = control_pb2.UpdateMetadataRequest(nothing_queued=True).SerializeToString()
RECEIVED_MAX = 1_000


def split(encoded: bytes) -> tuple[int, int]:
    """Where an UpdateMetadata's encoding has its body: after its per-broker header fields and
    before its ``nothing_queued`` mark (protobuf writes fields in number order: those come
    first and last)."""
    pos = 0
    while pos < len(encoded) and encoded[pos] in _HEADER_TAGS:
        pos += 1
        while encoded[pos] & 0x80:  # the varint's continuation bytes
            pos += 1
        pos += 1
    end = len(encoded)
    if encoded.endswith(_NOTHING_QUEUED):
        end -= len(_NOTHING_QUEUED)
    return pos, end


def body_of(encoded: bytes) -> bytes:
    """An UpdateMetadata's encoding without its per-broker header and ``nothing_queued``."""
    start, end = split(encoded)
    return encoded[start:end]


class Body:
    """A body as the key it is decoded under: hashed by its CRC32C and length, equal only to
    the same bytes. Each broker's request brings a new copy of the body, which Python's own
    ``hash`` reads through with SipHash (~42 us for the ~200 KB of a broker's 3,000 partition
    states, for each broker, on the process's one core); CRC32C takes ~7 us and the byte
    comparison that confirms a match ~4 us."""

    __slots__ = ("data", "_hash")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._hash = hash((crc32c.crc32c(data), len(data)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Body):
            return NotImplemented
        return self._hash == other._hash and self.data == other.data


class SharedDecodes:
    """UpdateMetadata bodies decoded once per process (module docstring); the last ``size``
    kept. Big requests are decoded on worker threads (``control_servicer``), so brokers that
    receive one body at once wait for the first to decode it rather than all decoding it."""

    def __init__(
        self,
        decode: Callable[[control_pb2.UpdateMetadataRequest], UpdateMetadata] = (
            decode_update_metadata
        ),
        size: int = 8,
    ) -> None:
        self._decode = decode
        self._size = size
        self._lock = threading.Lock()
        self._decoded: dict[Body, Future[UpdateMetadata]] = {}
        # id(request) -> (its body, its size), from ``deserialize`` to ``update_metadata``.
        self._received: dict[int, tuple[Body, int]] = {}
        self.hits = 0
        self.misses = 0

    def deserialize(self, encoded: bytes) -> control_pb2.UpdateMetadataRequest:
        """gRPC's request deserializer for these brokers: a request whose body was decoded
        already is parsed for its header alone (the rest is the decoded body's); its body and
        size are noted for ``update_metadata`` and the figures."""
        start, end = split(encoded)
        body = Body(encoded[start:end])
        with self._lock:
            found = self._decoded.get(body)
        known = found is not None and found.done() and found.exception() is None
        if known:
            request = control_pb2.UpdateMetadataRequest.FromString(encoded[:start] + encoded[end:])
        else:
            request = control_pb2.UpdateMetadataRequest.FromString(encoded)
        with self._lock:
            self._received[id(request)] = (body, len(encoded))
            while len(self._received) > RECEIVED_MAX:  # requests never handled (cancelled)
                del self._received[next(iter(self._received))]
        return request

    def received_bytes(self, request: control_pb2.UpdateMetadataRequest) -> int:
        """The size ``request`` arrived in."""
        found = self._received.get(id(request))
        return found[1] if found is not None else request.ByteSize()

    def update_metadata(self, request: control_pb2.UpdateMetadataRequest) -> UpdateMetadata:
        with self._lock:
            received = self._received.pop(id(request), None)
        body = received[0] if received else Body(body_of(request.SerializeToString()))
        with self._lock:
            found = self._decoded.pop(body, None)
            first = found is None
            if first:
                found = Future()
            self._decoded[body] = found  # the newest last
            while len(self._decoded) > self._size:
                del self._decoded[next(iter(self._decoded))]
        assert found is not None
        if first:
            self.misses += 1
            try:
                found.set_result(self._decode(request))
            except BaseException as exc:  # a malformed request: refused to every broker
                found.set_exception(exc)
                with self._lock:
                    if self._decoded.get(body) is found:
                        del self._decoded[body]
        else:
            self.hits += 1
        return dataclasses.replace(
            found.result(),
            controller_id=request.controller_id,
            controller_epoch=request.controller_epoch,
            broker_epoch=request.broker_epoch,
        )


class ByDigest:
    """Figures of a metadata cache that depend on its partition states alone, worked out once
    per digest (``MetadataCache.digest``): the brokers of a process hold the same states after
    the same UpdateMetadata (``sharing``), and equal digests mean equal states, as the
    controller's digest-first UpdateMetadata takes them to. The last ``size`` kept."""

    def __init__(self, figure: Callable[[MetadataCache], int], size: int = 64) -> None:
        self._figure = figure
        self._size = size
        self._known: dict[bytes, int] = {}

    def __call__(self, cache: MetadataCache) -> int:
        key = cache.digest()
        value = self._known.get(key)
        if value is None:
            value = self._figure(cache)
            if len(self._known) >= self._size:
                del self._known[next(iter(self._known))]
            self._known[key] = value
        return value


@dataclasses.dataclass
class Sharing:
    """Everything the brokers of one simulation process share, including the collector
    (``heap``): the agent freezes what a big control request built (``leasehold.heap``), and
    so do its brokers here, from one freezer, as the process has one heap. Its main enables
    it, as the agent's does; without, each full collection walks the cached metadata of a
    million partitions (millions of objects) holding the GIL the process's lease-renewal thread
    waits for."""

    decodes: SharedDecodes = dataclasses.field(default_factory=SharedDecodes)
    updates: SharedUpdates = dataclasses.field(default_factory=SharedUpdates)
    # How many partitions a cache holds (the figures' ``cached``), counted once per digest.
    cached: ByDigest = dataclasses.field(
        default_factory=lambda: ByDigest(MetadataCache.cached_partitions)
    )
    heap: HeapFreezer = dataclasses.field(default_factory=lambda: HeapFreezer(enabled=False))
