"""Pieces of protobuf's wire format, for the few hot messages assembled by hand.

The generated classes build one Python-level message object per element and fill it field by
field; for messages sent or answered tens of thousands of times in one event (a broker
failure's partition states, a Metadata answer's partitions), putting the bytes together from
pieces kept per value is several times cheaper. Every user checks its output against the
generated encoder in its tests: same message, same bytes (fields in number order, proto3
defaults left out, repeated scalars packed).
"""

from __future__ import annotations

# Wire types.
VARINT = 0
LEN = 2

# Bounded piece caches are cleared when they hold this many entries: the values they key on
# (partition numbers, broker ids, epochs, distinct replica lists) are few in practice.
MAX_PIECES = 100_000


def tag(field_number: int, wire_type: int) -> bytes:
    """A field's key: ``field_number << 3 | wire_type`` as a varint."""
    return varint(field_number << 3 | wire_type)


def varint(n: int) -> bytes:
    """Protobuf's base-128 varint; negative int32/int64 values as their 64-bit two's
    complement (ten bytes), as protobuf writes them."""
    n &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Varints of 0-127 are one byte: lengths of small messages.
SMALL = tuple(varint(n) for n in range(128))


def length_delimited(key: bytes, body: bytes) -> bytes:
    """A length-delimited field: key, length, ``body`` (always written, even empty)."""
    size = len(body)
    return key + (SMALL[size] if size < 128 else varint(size)) + body


def keep(pieces: dict, key: object, piece: bytes) -> bytes:
    """Store ``piece`` under ``key`` in a piece cache and return it; a cache holding
    ``MAX_PIECES`` entries is emptied first, so every cache stays bounded."""
    if len(pieces) >= MAX_PIECES:
        pieces.clear()
    pieces[key] = piece
    return piece


def scalar(key: bytes, value: int) -> bytes:
    """A varint field; nothing for proto3's default zero."""
    return key + varint(value) if value else b""


def packed(key: bytes, values: tuple[int, ...]) -> bytes:
    """A packed repeated int32/int64 field; nothing for an empty list."""
    if not values:
        return b""
    return length_delimited(key, b"".join([varint(v) for v in values]))


def string(key: bytes, value: str) -> bytes:
    """A string field; nothing for the empty string."""
    if not value:
        return b""
    return length_delimited(key, value.encode())
