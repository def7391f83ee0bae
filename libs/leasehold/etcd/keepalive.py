"""Keep-alives of many leases in one gRPC call, framed by hand (``BatchedKeepAlive``).

etcd renews one lease per ``LeaseKeepAliveRequest``, each answered on the stream. Through the
gRPC library every message costs a round of Python work and thread hand-offs (about 150 µs of
CPU, and two takings of the GIL): a process holding a thousand sessions (a fleet of simulated
brokers) spent most of a core renewing them, and under load a round took longer than the TTL.
Here the round is one HTTP/2 stream on a connection of the renewer's own: every request written
in one DATA frame, the answers read as they come in a few frames and each parsed with the
protobuf runtime, a few hundred microseconds for a thousand leases. What etcd sees is exactly
what the gRPC library sends (the same method, messages, ``hasleader`` metadata, and the
half-close when the round is over); what a renewal means is unchanged (``leasehold.etcd.lease``).

Anything that goes wrong (connection refused or reset, a deadline, a GOAWAY, a non-zero
``grpc-status``) raises ``KeepAliveError`` and drops the connection; the next round opens a new
one, to the next endpoint.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Sequence

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from aetcd import rpc

from leasehold.etcd.client import REQUIRE_LEADER, TlsFiles

_PATH = "/etcdserverpb.Lease/LeaseKeepAlive"
_PREFIX = 5  # a gRPC message: a compression flag byte, a 4-byte big-endian length
_READ = 65_536


class KeepAliveError(Exception):
    """The round failed as a whole: none of its leases has an answer."""


def frame(message: bytes) -> bytes:
    """One gRPC message on the wire (uncompressed)."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


def unframe(buffer: bytearray) -> list[bytes]:
    """The whole gRPC messages at the start of ``buffer``, taken out of it."""
    out = []
    pos = 0
    while len(buffer) - pos >= _PREFIX:
        if buffer[pos]:
            raise KeepAliveError("compressed gRPC message from etcd")
        size = int.from_bytes(buffer[pos + 1 : pos + _PREFIX], "big")
        end = pos + _PREFIX + size
        if end > len(buffer):
            break
        out.append(bytes(buffer[pos + _PREFIX : end]))
        pos = end
    del buffer[:pos]
    return out


class BatchedKeepAlive:
    """Renews leases over HTTP/2 to ``endpoints`` (``host:port``), TLS when ``tls`` is given."""

    def __init__(self, endpoints: Sequence[str], tls: TlsFiles | None = None) -> None:
        self._endpoints = [e.removeprefix("http://").removeprefix("https://") for e in endpoints]
        self._next = 0
        self._tls = tls
        self._sock: socket.socket | None = None
        self._conn: h2.connection.H2Connection | None = None
        self._authority = ""
        self._encoded: dict[int, bytes] = {}  # lease id -> its framed request

    def close(self) -> None:
        sock, self._sock, self._conn = self._sock, None, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def keep_alive(self, lease_ids: Sequence[int], timeout: float) -> dict[int, int]:
        """Renew every lease in ``lease_ids``: the TTL etcd granted each (0 or less: the lease
        is gone). Raises ``KeepAliveError`` unless every lease was answered in ``timeout``."""
        deadline = time.monotonic() + timeout
        try:
            return self._round(lease_ids, deadline)
        except (OSError, h2.exceptions.H2Error, KeepAliveError) as e:
            self.close()
            raise KeepAliveError(f"lease keep-alive failed: {e!r}") from e

    # ------------------------------------------------------------------ one round

    def _round(self, lease_ids: Sequence[int], deadline: float) -> dict[int, int]:
        sock, conn = self._connected(deadline)
        stream = conn.get_next_available_stream_id()
        conn.send_headers(
            stream,
            [
                (":method", "POST"),
                (":scheme", "https" if self._tls else "http"),
                (":path", _PATH),
                (":authority", self._authority),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                *REQUIRE_LEADER,
            ],
        )
        body = b"".join(self._request(i) for i in lease_ids)
        wanted = set(lease_ids)
        answers: dict[int, int] = {}
        buffer = bytearray()
        sent = 0
        while True:
            # Write what flow control lets through, then read what etcd has for us.
            while sent < len(body):
                window = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size)
                if window <= 0:
                    break
                conn.send_data(stream, body[sent : sent + window])
                sent += min(window, len(body) - sent)
            self._flush(sock, conn)
            if len(answers) == len(wanted):
                break
            for event in self._receive(sock, conn, deadline):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    status = dict(event.headers).get(b":status")
                    if status != b"200":
                        raise KeepAliveError(f"HTTP status {status!r}")
                    grpc_status = dict(event.headers).get(b"grpc-status")
                    if grpc_status not in (None, b"0"):  # a trailers-only answer: an error
                        raise KeepAliveError(_status(event.headers))
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                    conn.acknowledge_received_data(event.flow_controlled_length, stream)
                    buffer += event.data
                    for message in unframe(buffer):
                        answer = rpc.LeaseKeepAliveResponse.FromString(message)
                        if answer.ID in wanted:
                            answers[answer.ID] = answer.TTL
                elif isinstance(event, h2.events.TrailersReceived) and event.stream_id == stream:
                    raise KeepAliveError(_status(event.headers))
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    raise KeepAliveError(f"stream reset by etcd ({event.error_code!r})")
                elif isinstance(event, h2.events.ConnectionTerminated):
                    raise KeepAliveError(f"GOAWAY from etcd ({event.error_code!r})")
        # The round is over: half-close, as the gRPC library does when its requests run out,
        # and let etcd end the stream; nothing more is read from it.
        conn.end_stream(stream)
        self._flush(sock, conn)
        return answers

    def _request(self, lease_id: int) -> bytes:
        found = self._encoded.get(lease_id)
        if found is None:
            if len(self._encoded) > 100_000:
                self._encoded.clear()
            found = self._encoded[lease_id] = frame(
                rpc.LeaseKeepAliveRequest(ID=lease_id).SerializeToString()
            )
        return found

    # ------------------------------------------------------------------ the connection

    def _connected(self, deadline: float) -> tuple[socket.socket, h2.connection.H2Connection]:
        if self._sock is not None and self._conn is not None:
            return self._sock, self._conn
        endpoint = self._endpoints[self._next % len(self._endpoints)]
        self._next += 1
        host, _, port = endpoint.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=_left(deadline))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            context = ssl.create_default_context(cafile=self._tls.ca or None)
            if self._tls.cert:
                context.load_cert_chain(self._tls.cert, self._tls.key or None)
            context.set_alpn_protocols(["h2"])
            sock = context.wrap_socket(sock, server_hostname=host)
        conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        conn.initiate_connection()
        self._sock, self._conn, self._authority = sock, conn, endpoint
        self._flush(sock, conn)
        return sock, conn

    @staticmethod
    def _flush(sock: socket.socket, conn: h2.connection.H2Connection) -> None:
        data = conn.data_to_send()
        if data:
            sock.sendall(data)

    @staticmethod
    def _receive(
        sock: socket.socket, conn: h2.connection.H2Connection, deadline: float
    ) -> list[h2.events.Event]:
        sock.settimeout(_left(deadline))
        try:
            data = sock.recv(_READ)
        except TimeoutError as e:
            raise KeepAliveError("no answer within the deadline") from e
        if not data:
            raise KeepAliveError("etcd closed the connection")
        events = conn.receive_data(data)
        data_out = conn.data_to_send()  # SETTINGS and PING acknowledgements, window updates
        if data_out:
            sock.sendall(data_out)
        return events


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise KeepAliveError("no answer within the deadline")
    return left


def _status(headers: Sequence[tuple[bytes, bytes]]) -> str:
    found = dict(headers)
    code = found.get(b"grpc-status", b"?").decode(errors="replace")
    message = found.get(b"grpc-message", b"").decode(errors="replace")[:200]
    return f"grpc-status {code}: {message}"
