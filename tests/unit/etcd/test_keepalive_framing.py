"""gRPC message framing of the batched keep-alive (``leasehold.etcd.keepalive``)."""

from __future__ import annotations

import pytest

from leasehold.etcd.keepalive import KeepAliveError, frame, unframe


def test_messages_split_across_reads_come_out_whole_and_in_order():
    messages = [b"", b"a", b"x" * 300, bytes(range(256))]
    wire = b"".join(frame(m) for m in messages)
    buffer = bytearray()
    out: list[bytes] = []
    for i in range(0, len(wire), 7):  # arriving 7 bytes at a time
        buffer += wire[i : i + 7]
        out.extend(unframe(buffer))
    assert out == messages and not buffer


def test_a_compressed_message_is_refused():
    with pytest.raises(KeepAliveError):
        unframe(bytearray(b"\x01\x00\x00\x00\x01x"))
