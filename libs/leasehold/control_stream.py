"""The envelopes of ``BrokerControlService.Control``, written and read as bytes.

A control stream carries the unary methods' requests and answers inside ``ControlRequest`` and
``ControlResponse``. Both ends handle the inner message as bytes: the controller encodes a
request's partition states once for every broker and splices them behind each broker's header
(``services.controller.delivery.wire``), and a process of simulated brokers decodes a body once
for all of them (``services.broker_agent.simulation.sharing``). Parsing the envelope with the
generated class would decode the inner message whole, and building one would copy it through
Python objects, so the few envelope fields are written and read here directly; the tests check
the bytes against the generated classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leasehold.fastwire import length_delimited, tag, varint

LEADER_AND_ISR = "LeaderAndIsr"
UPDATE_METADATA = "UpdateMetadata"
STOP_REPLICA = "StopReplica"

# The oneof's field number of each request and answer (the same in both envelopes).
FIELDS: Mapping[str, int] = {LEADER_AND_ISR: 2, UPDATE_METADATA: 3, STOP_REPLICA: 4}
KINDS: Mapping[int, str] = {n: kind for kind, n in FIELDS.items()}
_SEQUENCE, _TRACE, _STATUS, _MESSAGE = 1, 5, 5, 6
_VARINT, _LEN = 0, 2
_SEQUENCE_KEY = tag(_SEQUENCE, _VARINT)
_BODY_KEYS = {kind: tag(n, _LEN) for kind, n in FIELDS.items()}
_TRACE_KEY, _NAME_KEY, _VALUE_KEY = tag(_TRACE, _LEN), tag(1, _LEN), tag(2, _LEN)
# A trace context is two short headers; more than this is not one.
MAX_TRACE_BYTES = 4096


class EnvelopeError(ValueError):
    """The bytes are not a control envelope this end can read (the message says what)."""


def encode_request(
    sequence: int,
    kind: str,
    body: bytes | Sequence[bytes],
    trace: Mapping[str, str] | None = None,
) -> bytes:
    """A ``ControlRequest`` carrying ``body`` (the encoded request of ``kind``), which may be
    given as its parts: they are copied once, into the envelope, rather than joined first."""
    if isinstance(body, bytes | bytearray | memoryview):
        body = (body,)
    parts = [_SEQUENCE_KEY, varint(sequence), _BODY_KEYS[kind], varint(sum(map(len, body)))]
    parts += body
    for name, value in (trace or {}).items():
        entry = length_delimited(_NAME_KEY, name.encode()) + length_delimited(
            _VALUE_KEY, value.encode()
        )
        parts.append(length_delimited(_TRACE_KEY, entry))
    return b"".join(parts)


def encode_response(
    sequence: int, kind: str, body: bytes | None, status_code: int = 0, message: str = ""
) -> bytes:
    """A ``ControlResponse``: the answer ``body`` of ``kind``, or (``body`` None) a failed
    request's status."""
    parts = [_SEQUENCE_KEY, varint(sequence)]
    if body is not None:
        parts.append(length_delimited(_BODY_KEYS[kind], body))
    if status_code:
        parts += [tag(_STATUS, _VARINT), varint(status_code)]
    if message:
        parts.append(length_delimited(tag(_MESSAGE, _LEN), message.encode()))
    return b"".join(parts)


@dataclass(frozen=True)
class Envelope:
    sequence: int
    kind: str
    body: bytes
    trace: dict[str, str]


def _read_varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise EnvelopeError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: memoryview):
    """(field, wire type, value, end) of each field: an int for varints, a memoryview for
    length-delimited fields; fixed-width fields are skipped over (value None)."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, pos = _read_varint(data, pos)
            yield field, wire_type, value
        elif wire_type == _LEN:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise EnvelopeError("a field runs past the end of the message")
            yield field, wire_type, data[pos : pos + size]
            pos += size
        elif wire_type in (1, 5):  # fixed64 / fixed32: none here, skipped as unknown
            pos += 8 if wire_type == 1 else 4
            if pos > len(data):
                raise EnvelopeError("a field runs past the end of the message")
        else:
            raise EnvelopeError(f"unsupported wire type {wire_type}")


def decode_request(data: bytes) -> Envelope:
    """The envelope's sequence, request kind, request bytes and trace context; unknown fields
    are skipped. ``EnvelopeError`` when it is malformed or carries no request."""
    sequence, kind, body, trace, trace_bytes = 0, "", b"", {}, 0
    for field, wire_type, value in _fields(memoryview(data)):
        if field == _SEQUENCE and wire_type == _VARINT:
            sequence = value
        elif field in KINDS and wire_type == _LEN:
            kind, body = KINDS[field], bytes(value)  # the last one wins, as in protobuf
        elif field == _TRACE and wire_type == _LEN:
            trace_bytes += len(value)
            if trace_bytes > MAX_TRACE_BYTES:
                raise EnvelopeError(f"trace_context is over {MAX_TRACE_BYTES} bytes")
            name = header = ""
            for f, w, v in _fields(value):
                if w == _LEN and f in (1, 2):
                    text = _utf8(v)
                    name, header = (text, header) if f == 1 else (name, text)
            trace[name] = header
    if not kind:
        raise EnvelopeError("ControlRequest carries no request")
    return Envelope(sequence, kind, body, trace)


def _utf8(view: memoryview) -> str:
    try:
        return bytes(view).decode()
    except UnicodeDecodeError:
        raise EnvelopeError("trace_context holds a string that is not UTF-8") from None
