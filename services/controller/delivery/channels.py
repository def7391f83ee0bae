"""ControllerChannelManager: one request queue and one sender task per broker (seed 000 section 1).

Requests to a broker are sent one at a time, in queue order, each retried with exponential
back-off until it gets an answer or the broker leaves (``remove_broker`` cancels its sender), as
Kafka's RequestSendThread does. A request batch becomes, per broker, LeaderAndIsr then
UpdateMetadata then StopReplica, queued together. Answers go to ``on_response`` on the sender
task; the callback must only log or put an event on the controller's event loop.

LeaderAndIsr and UpdateMetadata go out pre-encoded (``wire.EncodedRequest``): their partition
states are encoded once per batch, not once per broker. ``wait_issued`` lets a caller make sure
queued requests have been handed to gRPC (which writes them from its own threads) before it
keeps the event loop busy: the failover waits so that its UpdateMetadata is on the wire before
the state machines start.

With ``control_stream`` (the default; ``--no-control-stream`` turns it off) requests go on one
long-lived control stream per broker (``BrokerControlService.Control``, ``_ControlStream``),
each answered in order on it, with the deadline a unary call would have; a failed or timed-out
exchange ends the stream and the retry opens a new one, and a stream that ends between requests
is forgotten as it ends (a request written to one whose end was not seen yet never left, and
goes as a unary call at once). Until a broker's stream is open (in the background) its requests are
unary calls. A broker that answers UNIMPLEMENTED (one without the stream) is sent unary calls
from then on. At a thousand brokers the per-request cost is the fan-out's wall: a unary call
costs the controller about a third more CPU than a request on its stream (``bench.fanout``).
A new stream's first request takes more turns of the event loop than a unary call (headers,
then the message, then the answer), and a new controller's failover holds the loop; so a
standby keeps its channels connected and its streams open (``track``, held: nothing is sent),
and its term starts on them. At 1,000 simulated brokers the failover then told every broker in
0.7-0.8 s from the expiry on streams, 1.1-1.2 s on unary calls (``bench/README.md``, Walls).

Each queued batch remembers the trace context it was queued in (the controller event, itself
possibly continuing an admin call's trace) and is sent under one ``controller.broker_requests``
span, so the gRPC client spans, and the broker's server spans, join that trace.

A request is sent marked ``nothing_queued`` when it is its batch's last, nothing else is queued
for that broker, and no caller holds ``expect_more`` (a broker failure's election chunks do,
until the last chunk is queued): the broker then lets its data plane run as soon as the request
is handled, rather than holding it a while longer in case another request follows
(``services.broker_agent.control_priority``). The mark is appended to the encoded request (the
field has the same number in all three messages) when gRPC serialises it, so it reflects the
queue at the moment the request leaves.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import grpc
from google.protobuf.message import DecodeError, Message
from opentelemetry.context import Context

from leasehold import channels, control_stream, rpc_tracing, telemetry
from leasehold.broker.v1 import control_pb2
from leasehold.clock import Clock, LoopClock, being_cancelled, sleep, wait_for
from leasehold.common.v1 import common_pb2
from leasehold.config import TlsConfig
from leasehold.grpc_errors import bounded
from services.controller.core import BrokerInfo, BrokerRequests, LeaderAndIsrPartitionState
from services.controller.delivery import wire
from services.controller.delivery.metadata_cache import Held
from services.controller.delivery.sent_states import SentStates

log = logging.getLogger(__name__)

LEADER_AND_ISR = "LeaderAndIsr"
UPDATE_METADATA = "UpdateMetadata"
STOP_REPLICA = "StopReplica"

Request = Message | wire.EncodedRequest | wire.DigestFirst | wire.LazyRequest
ResponseCallback = Callable[[int, str, Request, Message], None]

# ``nothing_queued`` (field 15, true) in wire form, the same in all three request messages.
NOTHING_QUEUED = control_pb2.LeaderAndIsrRequest(nothing_queued=True).SerializeToString()
_SERVICE = control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name
_RESPONSES = {
    LEADER_AND_ISR: control_pb2.LeaderAndIsrResponse,
    UPDATE_METADATA: control_pb2.UpdateMetadataResponse,
    STOP_REPLICA: control_pb2.StopReplicaResponse,
}


@dataclass(frozen=True)
class ChannelSettings:
    controller_host: str
    controller_port: int
    tls: TlsConfig | None = None
    request_timeout_s: float = 10.0
    # Added to the timeout per partition a request names: a broker's work on a control request
    # grows with it (a failover's LeaderAndIsr at 100,000 partitions can take over 10 s on a
    # loaded 2-core machine). A retry after a deadline does not stop the broker's first attempt, so
    # too short a deadline for a big request only piles copies of it onto a busy broker.
    timeout_per_partition_s: float = 0.0002
    backoff_s: float = 0.1
    backoff_max_s: float = 2.0
    # A LeaderAndIsr or UpdateMetadata naming more partitions is sent as several requests
    # (pages) of at most this many, in order: a broker refuses one above its own limit
    # (``max_control_partitions_per_request``, 250,000 by default), gRPC one above 64 MiB, and
    # a smaller page is taken, decoded and answered while the next is on its way.
    max_partitions_per_request: int = 50_000
    # Send on a control stream a broker (module docstring); off, every request is a unary call.
    control_stream: bool = True
    # The partition states the requests sent and not yet answered may name, over every broker
    # (``InFlight``); a request that would go past it waits for answers to others (one naming
    # more goes alone). A state is ~80-100 bytes on the wire, so this bounds the requests'
    # bytes the controller holds while brokers take them in (~0.5 GB): a creation step's
    # UpdateMetadata (20,000 partitions, 1.6 MB) written to 1,000 brokers at once held 1.3-1.6
    # GB in the controller for the seconds the brokers took to read them. A broker failure's
    # 3,000 states to each of 1,000 brokers fit.
    max_partitions_in_flight: int = 5_000_000

    def timeout_for(self, partitions: int) -> float:
        return self.request_timeout_s + partitions * self.timeout_per_partition_s


@dataclass(frozen=True)
class _Batch:
    """Requests for one broker from one controller batch, sent in order under one span."""

    requests: tuple[tuple[str, Request], ...]
    parent: Context | None = None


class InFlight:
    """Partition states named by requests sent and not yet answered, over every broker, kept
    under ``limit``: ``hold(n)`` waits while ``n`` more would go past it, in the order the
    waits began (a broker's requests already go in its queue's order, so a small request
    waiting behind a big one to another broker changes little). A request naming more than
    ``limit`` goes when nothing else is in flight."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self.used = 0
        self._waiting: collections.deque[tuple[int, asyncio.Future]] = collections.deque()

    @contextlib.asynccontextmanager
    async def hold(self, partitions: int, waiting: Callable[[], None] = lambda: None):
        """Hold ``partitions`` (``limit`` at most) while the block runs; ``waiting`` is called
        if it has to wait first."""
        n = min(partitions, self.limit)
        if n and (self._waiting or not self._fits(n)):
            future = asyncio.get_running_loop().create_future()
            self._waiting.append((n, future))
            waiting()
            try:
                await future
            except BaseException:
                if future.done() and not future.cancelled():
                    self._give_back(n)  # admitted as it was cancelled
                else:
                    future.cancel()
                    self._admit()
                raise
        else:
            self.used += n
        try:
            yield
        finally:
            self._give_back(n)

    def _fits(self, n: int) -> bool:
        return self.used == 0 or self.used + n <= self.limit

    def _give_back(self, n: int) -> None:
        self.used -= n
        self._admit()

    def _admit(self) -> None:
        waiting = self._waiting
        while waiting:
            n, future = waiting[0]
            if future.done():  # cancelled while waiting
                waiting.popleft()
                continue
            if not self._fits(n):
                return
            waiting.popleft()
            self.used += n
            future.set_result(None)


@dataclass(eq=False)
class _Broker:
    """One broker's channel and sender. ``queued`` counts batches put on the queue, ``issued``
    those whose first request gRPC has serialised (and so sends without our event loop),
    ``finished`` those the sender is done with (all answered); ``on_progress`` is told whenever
    one of them moves (the manager's waiters, ``_wait_progress``)."""

    info: BrokerInfo
    channel: grpc.aio.Channel
    methods: dict[str, grpc.aio.UnaryUnaryMultiCallable] = field(default_factory=dict)
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    task: asyncio.Task | None = None
    queued: int = 0
    issued: int = 0
    sending: int = 0  # the batch the sender is working on
    finished: int = 0
    on_progress: Callable[[_Broker], None] = lambda broker: None
    sending_in_full: wire.DigestFirst | None = None  # its full request is being sent
    # The live brokers as of the last UpdateMetadata queued to it, which it holds once that is
    # answered: the next one names the change from it (None: not known, the whole set).
    live_sent: tuple[BrokerInfo, ...] | None = None
    # It was sent the failover's UpdateMetadata: it holds what
    # ``ControllerChannelManager.held_states`` says, and is not sent those states again.
    holds: bool = False
    sent: SentStates = field(default_factory=SentStates)  # queued this event (``sent_states``)
    last_of_batch: bool = False  # the request being sent is its batch's last
    more_coming: Callable[[], bool] = lambda: False  # the manager's ``expect_more`` is held
    stream: _ControlStream | None = None  # None: unary calls
    # Its next request waits for others' answers (``InFlight``): it cannot be issued before,
    # and ``wait_issued`` does not wait for it.
    held_back: bool = False

    def serialize(self, request: Request) -> bytes:
        """gRPC's request serialiser for this broker (unary calls): ``encode``, and notes that
        the current batch is issued. gRPC calls it as the call starts, and hands the bytes to
        its core, which writes them from its own threads, before the event loop runs anything
        else."""
        data = self.encode(request)
        self.mark_issued()
        return data

    def mark_issued(self) -> None:
        """The current batch's request is in gRPC's hands (``wait_issued``)."""
        if self.sending > self.issued:
            self.issued = self.sending
            self.on_progress(self)

    def encode(self, request: Request) -> bytes:
        return b"".join(self.parts(request))

    def parts(self, request: Request) -> tuple[bytes, ...]:
        """The request's bytes, in parts that may be shared with other brokers' requests (a
        digest-first UpdateMetadata sent in full is noted as settled), marked
        ``nothing_queued`` when it is the last this broker has to go (module docstring)."""
        parts: tuple[bytes, ...]
        if isinstance(request, wire.EncodedRequest):
            parts = request.parts
            pending = self.sending_in_full
            if pending is not None and request is pending.pages[0]:
                self.sending_in_full = None
                pending.settled.set()
        elif isinstance(request, wire.LazyRequest):
            parts = request.build().parts
        else:
            parts = (request.SerializeToString(),)
        if self.last_of_batch and self.queue.empty() and not self.more_coming():
            parts = (*parts, NOTHING_QUEUED)
        return parts


def _open_channel(target: str, tls: TlsConfig | None) -> grpc.aio.Channel:
    """TLS (presenting our certificate) when a CA is configured; tracing interceptors always."""
    return channels.channel(target, tls if tls is not None and tls.ca else None)


class ControllerChannelManager:
    def __init__(
        self,
        settings: ChannelSettings,
        on_response: ResponseCallback,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._clock = clock or LoopClock()  # retry backoffs and bounded waits
        self.settings = settings
        self.on_response = on_response
        self._brokers: dict[int, _Broker] = {}
        self.sent: dict[str, int] = {}
        self.failures = 0
        self.digest_mismatches = 0  # digest-first UpdateMetadata sent in full after all
        self._expecting = 0  # holders of ``expect_more``
        self._open = asyncio.Event()  # cleared by ``hold``: nothing is sent meanwhile
        self._open.set()
        # What the brokers the failover's UpdateMetadata reached hold (``metadata_cache.Held``);
        # None: nothing is left out.
        self.held_states: Held | None = None
        self._waiters: list[_Waiter] = []  # callers of ``wait_issued``/``wait_answered``
        # Batches queued to each broker that left, so that a broker's counts only grow while
        # this manager lives: a mark (``queued_marks``) taken before a broker left and came back
        # is one it has answered, not one its new sender has yet to reach.
        self._counted: dict[int, int] = {}
        self.in_flight = InFlight(settings.max_partitions_in_flight)

    def hold(self) -> None:
        """Send nothing until ``release`` (the controller's office is suspended): requests
        stay queued, and one whose answer failed is retried only after ``release``."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    @property
    def held(self) -> bool:
        return not self._open.is_set()

    @property
    def broker_ids(self) -> frozenset[int]:
        return frozenset(self._brokers)

    def add_broker(self, info: BrokerInfo) -> None:
        """Open a channel and start a sender; an existing one for the id is replaced."""
        self.remove_broker(info.id)
        channel = _open_channel(f"{info.host}:{info.port}", self.settings.tls)
        broker = self._broker(info, channel)
        for kind, response in _RESPONSES.items():
            broker.methods[kind] = channel.unary_unary(
                f"/{_SERVICE}/{kind}",
                request_serializer=broker.serialize,
                response_deserializer=response.FromString,
            )
        if self.settings.control_stream:
            broker.stream = _ControlStream(channel, f"{info.host}:{info.port}", self._clock)
        with telemetry.untraced():  # each batch is sent under the context it was queued in
            broker.task = asyncio.create_task(self._sender(broker), name=f"to-broker-{info.id}")
        self._brokers[info.id] = broker

    def _broker(self, info: BrokerInfo, channel: grpc.aio.Channel) -> _Broker:
        """A broker's state, tied to this manager (its ``expect_more`` and its waiters), its
        counts going on from where its last sender's stopped (its dropped batches finished)."""
        n = self._counted.get(info.id, 0)
        return _Broker(
            info,
            channel,
            queued=n,
            issued=n,
            sending=n,
            finished=n,
            more_coming=self.more_coming,
            on_progress=self._progressed,
        )

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to a broker; queued requests are dropped (it left the cluster)."""
        broker = self._take(broker_id)
        if broker is None:
            return
        _stop(broker)
        broker.on_progress(broker)  # nobody waits for its answers any more (``wait_answered``)
        asyncio.get_running_loop().create_task(broker.channel.close())

    def _take(self, broker_id: int) -> _Broker | None:
        """A broker's state out of the manager, its count of batches kept for its next one."""
        broker = self._brokers.pop(broker_id, None)
        if broker is not None:
            self._counted[broker_id] = broker.queued
        return broker

    def update_broker(self, info: BrokerInfo) -> None:
        """A changed endpoint (same broker epoch): reconnect, keeping nothing queued."""
        current = self._brokers.get(info.id)
        if current is None or (current.info.host, current.info.port) != (info.host, info.port):
            self.add_broker(info)
        else:
            current.info = info

    def track(self, brokers: Iterable[BrokerInfo]) -> None:
        """Channels to exactly ``brokers`` (added, removed, reconnected where an endpoint
        changed), each asked to connect now, and its control stream opened, rather than at its
        first request (``_connect_ahead``)."""
        wanted = {info.id: info for info in brokers}
        for broker_id in self._brokers.keys() - wanted.keys():
            self.remove_broker(broker_id)
        for info in wanted.values():
            self.update_broker(info)
        for broker in self._brokers.values():
            self._connect_ahead(broker)

    def _connect_ahead(self, broker: _Broker) -> None:
        """Start connecting the broker's channel, and opening its control stream, if not done:
        a channel connects at its first call otherwise, and a new controller's first round to
        1,000 brokers then pays every connection on its failover's path."""
        broker.channel.get_state(try_to_connect=True)
        if broker.stream is not None and not broker.stream.unsupported:
            broker.stream.prepare()

    def more_coming(self) -> bool:
        """Someone holds ``expect_more``."""
        return self._expecting > 0

    def expect_more(self) -> Callable[[], None]:
        """Until the returned release is called (once or more), no request is marked
        ``nothing_queued``: the caller is about to queue more (a broker failure's election
        chunks), and brokers should keep their data plane waiting for it."""
        self._expecting += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._expecting -= 1

        return release

    def send_batch(self, requests: dict[int, BrokerRequests]) -> None:
        """Queue one built request batch: per broker LeaderAndIsr, UpdateMetadata, StopReplica.

        The batch gives every broker the same UpdateMetadata partition states (one tuple), so
        they are encoded once and follow each broker's own header. Partition states equal to
        those already queued to the same broker in this controller event are left out
        (``sent_states``), and a request left with none is not sent. A request naming more
        than ``max_partitions_per_request`` partitions goes as several (pages). UpdateMetadata
        names the live brokers as the change since the set last queued to the broker
        (``wire.change``), and in whole only if the broker answers that it holds another set.
        """
        s = self.settings
        page = max(1, s.max_partitions_per_request)
        bodies: dict[object, list[tuple[bytes, int]]] = {}
        # Each LeaderAndIsr partition state is encoded once, however many brokers get it.
        states: dict[int, bytes] = {}
        changes: dict[tuple[int, int], wire.LiveBrokers] = {}

        def encode_state(state: LeaderAndIsrPartitionState) -> bytes:
            data = states.get(id(state))  # every state outlives this call: ids stay unique
            if data is None:
                data = states[id(state)] = wire.leader_and_isr_state_bytes(state)
            return data

        entries: dict[object, list[bytes]] = {}
        alive: list[tuple] = []  # every tuple keyed by its id here lives until the call ends
        for broker_id, req in requests.items():
            batch_um = req.update_metadata  # alive (and so its id unique) for the whole call
            broker = self._brokers.get(broker_id)
            if broker is not None:
                req = broker.sent.unsent_requests(req)
            ums: list[Request] = []
            if req.update_metadata is not None:
                alive.append(req.update_metadata)
                held = self.held_states if broker is not None and broker.holds else None
                key = (_body_key(req.update_metadata, batch_um), held is not None)
                if key not in bodies:
                    um_states = req.update_metadata
                    encoded = entries.get(key[0])
                    if encoded is None:
                        encoded = entries[key[0]] = wire.update_metadata_entries(um_states)
                    if held is not None:
                        um_states, encoded = held.unheld(um_states, encoded)
                    bodies[key] = [
                        (b"".join(encoded[i : i + page]), len(encoded[i : i + page]))
                        for i in range(0, len(encoded), page)
                    ] or [(b"", 0)]
                pages_of = bodies[key]
                # Left out when every state in it is held and it names no new live brokers.
                if (
                    held is None
                    or pages_of[0][1]
                    or not req.update_metadata
                    or broker is None
                    or broker.live_sent is None
                    or wire.live_digest(broker.live_sent) != wire.live_digest(req.live_brokers)
                ):
                    ums = self._update_metadata_pages(broker, req, pages_of, changes)
            lais = [
                wire.encoded_leader_and_isr(
                    req
                    if chunk is req.leader_and_isr
                    else dataclasses.replace(req, leader_and_isr=chunk),
                    encode_state,
                )
                for chunk in pages(req.leader_and_isr, page)
            ]
            self.queue(
                broker_id,
                (
                    *((LEADER_AND_ISR, r) for r in lais),
                    *((UPDATE_METADATA, r) for r in ums),
                    (STOP_REPLICA, wire.stop_replica(req)),
                ),
            )

    def _update_metadata_pages(
        self,
        broker: _Broker | None,
        req: BrokerRequests,
        bodies: list[tuple[bytes, int]],
        changes: dict[tuple[int, int], wire.LiveBrokers],
    ) -> list[Request]:
        """One broker's UpdateMetadata of a batch, as its pages: the first names the live
        brokers (as a change, with the whole set to follow on a mismatch, when the broker's last
        set is known), the others name them unchanged."""
        s = self.settings
        host, port = s.controller_host, s.controller_port
        live = req.live_brokers
        before = broker.live_sent if broker is not None else None
        if broker is not None:
            broker.live_sent = live
        first_body, first_count = bodies[0]
        first: Request
        if before is None:
            first = wire.encoded_update_metadata(req, host, port, first_body, first_count)
        else:
            key = (id(before), id(live))  # brokers of one batch share both tuples
            delta = changes.get(key)
            if delta is None:
                delta = changes[key] = wire.change(before, live)
            first = wire.DigestFirst(
                wire.encoded_update_metadata(req, host, port, first_body, first_count, delta),
                functools.partial(
                    wire.encoded_update_metadata, req, host, port, first_body, first_count
                ),
                partition_count=first_count,
            )
        if len(bodies) == 1:
            return [first]
        unchanged = wire.LiveBrokers(wire.live_digest(live), ())
        return [
            first,
            *(
                wire.encoded_update_metadata(req, host, port, b, n, unchanged)
                for b, n in bodies[1:]
            ),
        ]

    def now_holds(self, broker_id: int) -> None:
        """The broker is being sent the failover's UpdateMetadata: it holds ``held_states``."""
        broker = self._brokers.get(broker_id)
        if broker is not None:
            broker.holds = True

    def send(
        self,
        broker_id: int,
        kind: str,
        request: Request | None,
        *,
        live_brokers: tuple[BrokerInfo, ...] | None = None,
    ) -> bool:
        """Queue one request outside a batch. The broker's memory of this event's states is
        dropped: what such a request changes on the broker is not tracked. An UpdateMetadata
        says in ``live_brokers`` the live set the broker holds once it is answered (else the
        next UpdateMetadata names the whole set)."""
        broker = self._brokers.get(broker_id)
        if broker is not None:
            broker.sent.clear()
            if kind == UPDATE_METADATA and request is not None:
                broker.live_sent = live_brokers
        return self.queue(broker_id, ((kind, request),))

    def forget_sent(self) -> None:
        """The controller event is over: forget the states queued in it (``sent_states``)."""
        for broker in self._brokers.values():
            if broker.sent:
                broker.sent.clear()

    def queue(self, broker_id: int, requests: tuple[tuple[str, Request | None], ...]) -> bool:
        """Queue one broker's requests as one batch (sent in order, under one span); None
        entries are left out. False if nothing was queued."""
        present = tuple((k, r) for k, r in requests if r is not None)
        if not present:
            return False
        broker = self._brokers.get(broker_id)
        if broker is None:
            log.debug("no channel to broker %d; dropping %s", broker_id, [k for k, _ in present])
            return False
        broker.queue.put_nowait(_Batch(present, telemetry.current_context()))
        broker.queued += 1
        return True

    async def wait_issued(self, timeout_s: float, *, idle_only: bool = False) -> bool:
        """Wait until every broker's sender has handed the first request of each batch queued
        so far to gRPC; False if that took longer than ``timeout_s`` (a sender still busy with
        an earlier request to a slow broker).

        With ``idle_only`` only the senders that are not working on a batch are waited for, and
        only until they have handed over the next one: a busy sender sends when its broker
        answers, which needs the event loop free, so waiting for it would only stall the caller.
        """
        if idle_only:
            targets = [
                (b, b.sending + 1)
                for b in self._brokers.values()
                if b.sending == b.finished and b.issued < b.queued
            ]
        else:
            targets = [(b, b.queued) for b in self._brokers.values() if b.issued < b.queued]
        return await self._wait_progress(
            targets, lambda b, t: b.issued >= t or b.held_back, timeout_s
        )

    def queued_marks(self) -> dict[int, int]:
        """How many batches each broker has been queued so far (for ``wait_answered``)."""
        return {broker_id: b.queued for broker_id, b in self._brokers.items()}

    def unanswered(self, upto: Mapping[int, int]) -> frozenset[int]:
        """The brokers (still here) that have not answered every batch queued by the time
        ``upto`` was taken."""
        return frozenset(i for i, b in self._brokers.items() if b.finished < upto.get(i, 0))

    async def wait_answered(
        self,
        timeout_s: float,
        upto: Mapping[int, int] | None = None,
        *,
        quiet_s: float | None = None,
    ) -> bool:
        """Wait until every broker has answered each batch queued so far (its sender is done
        with them, the requests queued behind an answer included), or only those queued by
        the time ``upto`` was taken (``queued_marks``); False after ``timeout_s``, or with
        ``quiet_s`` as soon as that long has passed without a broker waited for answering
        (those left are not answering: stopped, partitioned): a wait that lasts as long as a
        busy fleet takes to answer, and not much longer when some broker never will.

        A caller about to compute for long on the event loop waits here first, so that each
        answer is taken as it comes and the next request leaves at once, as Kafka's send
        threads would do beside its event thread. A broker removed meanwhile is not waited for.
        """
        targets = [
            (b, b.queued if upto is None else upto.get(broker_id, 0))
            for broker_id, b in self._brokers.items()
        ]
        targets = [(b, target) for b, target in targets if b.finished < target]

        def done(broker: _Broker, target: int) -> bool:
            return broker.finished >= target or self._brokers.get(broker.info.id) is not broker

        return await self._wait_progress(targets, done, timeout_s, quiet_s)

    async def _wait_progress(
        self,
        targets: list[tuple[_Broker, int]],
        done: Callable[[_Broker, int], bool],
        timeout_s: float,
        quiet_s: float | None = None,
    ) -> bool:
        """Wait until ``done(broker, target)`` for every target (re-checked whenever that
        broker's sender moves on); False after ``timeout_s``, or after ``quiet_s`` with no
        target reached. One waiter for all the targets, not a task a broker: a wait on a
        thousand brokers after every batch would otherwise cost a thousand tasks."""
        pending = {b: t for b, t in targets if not done(b, t)}
        if not pending:
            return True
        clock = self._clock
        waiter = _Waiter(pending, done, asyncio.get_running_loop().create_future(), clock)
        self._waiters.append(waiter)
        deadline = clock.now() + timeout_s
        try:
            while True:
                left = deadline - clock.now()
                if quiet_s is not None:
                    left = min(left, waiter.progressed_at + quiet_s - clock.now())
                if left <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await wait_for(clock, asyncio.shield(waiter.future), left)
                    return True
        finally:
            self._waiters.remove(waiter)

    def _progressed(self, broker: _Broker) -> None:
        """A broker's sender moved on: the waiters it was the last one pending for are done."""
        for waiter in self._waiters:
            waiter.progressed(broker)

    def total_queue_size(self) -> int:
        """Request batches not yet answered, over every broker: queued or in flight (Kafka's
        ControllerChannelManager TotalQueueSize)."""
        return sum(b.queued - b.finished for b in self._brokers.values())

    def queued(self, broker_id: int) -> int:
        """Request batches waiting for the broker's sender (not counting the one in flight)."""
        broker = self._brokers.get(broker_id)
        return broker.queue.qsize() if broker is not None else 0

    async def _sender(self, broker: _Broker) -> None:
        while True:
            batch: _Batch | None = await broker.queue.get()
            if batch is None:  # the broker was removed or the manager closed (``_stop``)
                return
            broker.sending += 1
            with _batch_span(broker, batch) as span:
                attempts = 0
                last = len(batch.requests) - 1
                for i, (kind, queued) in enumerate(batch.requests):
                    broker.last_of_batch = i == last
                    request = queued
                    if isinstance(queued, wire.DigestFirst):
                        request = queued.digest_only
                    response, tries = await self._send_until_answered(broker, kind, request)
                    answers = [(request, response)]
                    if isinstance(queued, wire.DigestFirst):
                        answers, more = await self._settle(broker, queued, response)
                        tries += more
                    attempts += tries
                    self.sent[kind] = self.sent.get(kind, 0) + 1
                    for request, response in answers:
                        try:
                            self.on_response(broker.info.id, kind, request, response)
                        except Exception:
                            log.exception(
                                "error in %s response callback for broker %d",
                                kind,
                                broker.info.id,
                            )
                if span is not None:
                    span.set_attributes(telemetry.attrs(attempts=attempts))
            broker.finished += 1
            broker.on_progress(broker)

    async def _settle(
        self, broker: _Broker, queued: wire.DigestFirst, answer: Message
    ) -> tuple[list[tuple[Request, Message]], int]:
        """After the short form's answer: the full request (its pages in order) if the broker's
        cache or live set differs. The requests that count with their answers, and the extra
        attempts."""
        queued.answered(_digest_mismatch(answer))
        if not queued.in_full:
            queued.settled.set()
            return [(queued.digest_only, answer)], 0
        log.info(
            "broker %d's metadata differs from the controller's (%s); sending it in full "
            "(%d partition states)",
            broker.info.id,
            answer.error_message,
            queued.partition_count,
        )
        self.digest_mismatches += 1
        pages = queued.pages
        broker.sending_in_full = queued
        answers: list[tuple[Request, Message]] = []
        attempts = 0
        for page in pages:
            self.sent[UPDATE_METADATA] = self.sent.get(UPDATE_METADATA, 0) + 1
            response, tries = await self._send_until_answered(broker, UPDATE_METADATA, page)
            answers.append((page, response))
            attempts += tries
        return answers, attempts

    async def _send_until_answered(
        self, broker: _Broker, kind: str, request: Request
    ) -> tuple[Message, int]:
        """The answer, and how many attempts it took."""
        partitions = _partitions(request)
        backoff = self.settings.backoff_s
        attempts = 0
        while True:
            await self._open.wait()
            attempts += 1
            try:
                async with self.in_flight.hold(partitions, lambda: _hold_back(broker, True)):
                    _hold_back(broker, False)
                    return await self._ask(broker, kind, request, partitions), attempts
            except _Resend:
                attempts -= 1
                continue
            except grpc.aio.AioRpcError as e:
                if being_cancelled():
                    raise asyncio.CancelledError from None
                self.failures += 1
                log.warning(
                    "%s to broker %d failed (%s); retrying in %.1fs",
                    kind,
                    broker.info.id,
                    e.code().name,
                    backoff,
                )
            finally:
                _hold_back(broker, False)
            await sleep(self._clock, backoff)
            backoff = min(backoff * 2, self.settings.backoff_max_s)

    async def _ask(self, broker: _Broker, kind: str, request: Request, partitions: int) -> Message:
        """One attempt: on the broker's control stream, or a unary call until it is open;
        ``_Resend`` when the request did not leave and goes again at once."""
        method = broker.methods[kind]
        timeout = self.settings.timeout_for(partitions)
        stream = broker.stream
        if stream is not None and stream.unsupported:
            log.info("broker %d has no control stream; sending it unary calls", broker.info.id)
            broker.stream = stream = None
        if stream is None or not stream.ready:
            # Until its stream is open, a unary call: a new stream's first request takes more
            # turns of the event loop than a unary call, and a new controller opens one to
            # every broker while its failover holds the loop.
            if stream is not None:
                stream.prepare()
            return await method(request, timeout=timeout)
        try:
            # Issued as gRPC takes the write, not before: a new stream's first write waits for
            # the event loop (its headers go first), which a caller of ``wait_issued`` is about
            # to hold for long.
            body = broker.parts(request)
            return await stream.ask(kind, body, timeout, broker.mark_issued)
        except _NoStream:
            log.info("broker %d has no control stream; sending it unary calls", broker.info.id)
            broker.stream = None
            raise _Resend from None
        except _NotWritten:
            raise _Resend from None  # not sent: at once as a unary call, while another opens

    async def close(self) -> None:
        """Stop every sender and close every channel. A controller's deactivation awaits this
        on its event loop, so it waits for the senders at most ``CLOSE_WAIT_S``: a sender that
        does not stop (it should not happen) is left behind, cancelled, rather than keeping
        the controller from its next term."""
        brokers, self._brokers = list(self._brokers.values()), {}
        for b in brokers:
            _stop(b)
        tasks = [b.task for b in brokers if b.task is not None and not b.task.done()]
        if tasks:
            with contextlib.suppress(TimeoutError):
                await wait_for(self._clock, asyncio.wait(tasks), CLOSE_WAIT_S)
            left = [t for t in tasks if not t.done()]
            if left:
                log.warning(
                    "%d broker senders still running %.0fs after they were cancelled; "
                    "closing their channels anyway",
                    len(left),
                    CLOSE_WAIT_S,
                )
        for b in brokers:
            if b.task is not None and b.task.done() and not b.task.cancelled():
                b.task.exception()  # retrieved: a sender's failure is logged where it happens
            await b.channel.close()


# A control stream's deadline that fires this late (the event loop was held) waits this much
# longer for an answer already received to be read.
LATE_DEADLINE_S = 0.1
# How long closing a manager waits for its senders to stop once cancelled.
CLOSE_WAIT_S = 5.0


def _stop(broker: _Broker) -> None:
    """Stop a broker's sender: cancelled, its stream closed, and an end mark queued, which
    ends it at its next request should it ever be back waiting for one."""
    if broker.task is not None:
        broker.task.cancel()
    broker.queue.put_nowait(None)
    if broker.stream is not None:
        broker.stream.close()


class _Resend(Exception):
    """The request did not leave (no stream after all, or it had ended): send it again at
    once, not counted as an attempt."""


class _NoStream(Exception):
    """The broker does not serve the control stream."""


class _NotWritten(Exception):
    """The control stream had ended before the request could be written to it."""


_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _failed(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    """A failed exchange on the stream, as the unary call's error would say it."""
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


@dataclass(frozen=True)
class _Outgoing:
    data: bytes
    written: Callable[[], None]


def _hand_over(outgoing: _Outgoing) -> bytes:
    """The stream's request serialiser: gRPC calls it as it starts the write, which its core
    then carries out from its own threads (a unary call's serialiser marks the same moment)."""
    outgoing.written()
    return outgoing.data


class _ControlStream:
    """The control stream to one broker: one request at a time (the sender's), each written
    in its envelope and its answer read back before the next. Opened at the first request and
    after any failed exchange, which ends it: a broker that restarts or misses a deadline gets
    a new stream, and the retry's answer cannot be confused with the old request's."""

    def __init__(self, channel: grpc.aio.Channel, target: str, clock: Clock) -> None:
        # Envelopes pass as bytes both ways (``leasehold.control_stream``).
        self._open = channel.stream_stream(f"/{_SERVICE}/Control", request_serializer=_hand_over)
        self._target = target
        self._clock = clock
        self._call: grpc.aio.StreamStreamCall | None = None
        self._exchanged = 0  # on the current call
        self._connected = False  # the current call's headers are sent
        self._opening: asyncio.Task | None = None
        self._ending: asyncio.Task | None = None  # reading why the last stream ended
        self.unsupported = False  # the broker answered UNIMPLEMENTED
        self._sequence = 0

    @property
    def ready(self) -> bool:
        """Open, its headers sent: a request on it costs a write and a read."""
        return self._call is not None and self._connected

    def prepare(self) -> None:
        """Open the stream in the background, if not open or opening."""
        if self.unsupported or self._call is not None:
            return
        if not _running(self._opening) and not _running(self._ending):
            with telemetry.untraced():
                self._opening = asyncio.get_running_loop().create_task(self._connect())

    def _new_call(self) -> grpc.aio.StreamStreamCall:
        """A new stream, forgotten as soon as it ends (the broker restarted, the connection
        broke): the next request then goes unary while another opens, rather than failing on a
        stream that is gone."""
        call = self._call = self._open()
        self._exchanged = 0
        call.add_done_callback(self._ended)
        return call

    def _ended(self, call: grpc.aio.StreamStreamCall) -> None:
        """A stream's end: forgotten, and its status read (a broker without the stream answers
        UNIMPLEMENTED, which may come after its headers were sent: ``wait_for_connection``
        does not wait for the broker); no other opens until that is known."""
        self._drop(call)
        self._ending = asyncio.get_running_loop().create_task(self._note_end(call))

    async def _note_end(self, call: grpc.aio.StreamStreamCall) -> None:
        if await call.code() == grpc.StatusCode.UNIMPLEMENTED:
            self.unsupported = True

    async def _connect(self) -> None:
        call = self._new_call()
        try:
            await call.wait_for_connection()
        except grpc.aio.AioRpcError as e:
            self._drop(call)
            self.unsupported = e.code() == grpc.StatusCode.UNIMPLEMENTED
            return
        except asyncio.CancelledError:
            self._drop(call)
            raise
        if self._call is call:
            self._connected = True

    def close(self) -> None:
        for task in (self._opening, self._ending):
            if task is not None:
                task.cancel()
        if self._call is not None:
            self._call.cancel()
            self._call = None
            self._connected = False

    async def ask(
        self,
        kind: str,
        body: bytes | Sequence[bytes],
        timeout: float,
        written: Callable[[], None] = lambda: None,
    ) -> Message:
        """The broker's answer to ``body`` (a ``kind`` request, encoded), ``written`` called as
        gRPC takes it; ``AioRpcError`` as a unary call's (DEADLINE_EXCEEDED after
        ``timeout``), ``_NoStream`` if not served, ``_NotWritten`` if the stream had ended
        before the request could be written."""
        carrier: dict[str, str] = {}
        if not telemetry.enabled():
            return await self._exchange(kind, body, timeout, carrier, written)
        with rpc_tracing.client_span(f"/{_SERVICE}/{kind}", self._target, carrier) as span:
            try:
                answer = await self._exchange(kind, body, timeout, carrier, written)
            except grpc.aio.AioRpcError as e:
                span.code = e.code()
                raise
            span.code = grpc.StatusCode.OK
            return answer

    async def _exchange(
        self,
        kind: str,
        body: bytes | Sequence[bytes],
        timeout: float,
        trace: dict[str, str],
        written: Callable[[], None],
    ) -> Message:
        call = self._call
        if call is None:
            call = self._new_call()
        fresh = self._exchanged == 0
        self._exchanged += 1
        self._sequence += 1
        sequence = self._sequence
        expired = graced = False
        clock = self._clock
        due = clock.now() + max(timeout, 0.0)

        def expire() -> None:
            nonlocal expired, graced, deadline
            if not graced and clock.now() - due > LATE_DEADLINE_S:
                # The loop was held past the deadline (a long computation): an answer that
                # came meanwhile is still waiting to be read. gRPC's own deadline (a unary
                # call's) would have seen it come; give it a moment to be read.
                graced = True
                deadline = clock.call_later(LATE_DEADLINE_S, expire)
                return
            expired = True
            call.cancel()

        deadline = clock.call_later(max(timeout, 0.0), expire)
        wrote = False
        try:
            # The envelope is this broker's own copy of a request whose parts the brokers
            # share: kept only until gRPC has written it, not while the broker works on it
            # (a creation step's UpdateMetadata, 1.6 MB, to each of 1,000 brokers).
            await call.write(
                _Outgoing(control_stream.encode_request(sequence, kind, body, trace), written)
            )
            wrote = True
            data = await call.read()
        except (asyncio.CancelledError, grpc.aio.AioRpcError, asyncio.InvalidStateError) as e:
            self._drop(call)
            if isinstance(e, asyncio.CancelledError):
                if being_cancelled():
                    # This sender is being stopped (its broker left, the term ended), whether
                    # or not the deadline fired too: a loop held past the deadline runs its
                    # timer in the same turn as the cancellation. Never a timeout to retry.
                    raise
                code = grpc.StatusCode.CANCELLED  # the call alone was cancelled
            elif isinstance(e, grpc.aio.AioRpcError):
                code = e.code()
            else:  # InvalidStateError: the call had ended before the write, its end unseen
                code = await call.code()
            if expired:
                raise _failed(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
            if fresh and code == grpc.StatusCode.UNIMPLEMENTED:
                self.unsupported = True
                raise _NoStream from None
            if not wrote:
                # The stream had ended before the write, its end not seen yet: the request
                # never left. (gRPC says INTERNAL when the broker's end is still on its way,
                # whatever that end was: an UNIMPLEMENTED is found by the next stream.)
                raise _NotWritten from None
            if isinstance(e, grpc.aio.AioRpcError):
                raise
            raise _failed(grpc.StatusCode.UNAVAILABLE, "the control stream had ended") from None
        finally:
            deadline.cancel()
        if self._call is call:
            self._connected = True
        if data is grpc.aio.EOF:
            self._drop(call)
            raise _failed(grpc.StatusCode.UNAVAILABLE, "the broker ended the control stream")
        try:
            reply = control_pb2.ControlResponse.FromString(data)
        except DecodeError:
            self._drop(call)
            raise _failed(grpc.StatusCode.INTERNAL, "unreadable control stream answer") from None
        if reply.sequence != sequence:
            self._drop(call)
            raise _failed(
                grpc.StatusCode.INTERNAL,
                f"control stream answer {reply.sequence} to request {sequence}",
            )
        if reply.status_code:
            code = _CODES.get(reply.status_code, grpc.StatusCode.UNKNOWN)
            raise _failed(code, bounded(reply.status_message))
        field = _ANSWER_FIELDS[kind]
        if reply.WhichOneof("response") != field:
            self._drop(call)
            raise _failed(grpc.StatusCode.INTERNAL, f"control stream answer to {kind} has none")
        return getattr(reply, field)

    def _drop(self, call: grpc.aio.StreamStreamCall) -> None:
        call.cancel()
        if self._call is call:
            self._call = None
            self._connected = False


def _hold_back(broker: _Broker, held: bool) -> None:
    """Note whether the broker's next request waits for others' answers (``InFlight``); its
    waiters (``wait_issued``) are told when that starts."""
    if broker.held_back != held:
        broker.held_back = held
        if held:
            broker.on_progress(broker)


def _running(task: asyncio.Task | None) -> bool:
    return task is not None and not task.done()


_ANSWER_FIELDS = {
    LEADER_AND_ISR: "leader_and_isr",
    UPDATE_METADATA: "update_metadata",
    STOP_REPLICA: "stop_replica",
}


@dataclass(eq=False)
class _Waiter:
    """One ``_wait_progress`` call: the brokers still short of their target, and when the
    last one reached it (on ``clock``)."""

    pending: dict[_Broker, int]
    done: Callable[[_Broker, int], bool]
    future: asyncio.Future
    clock: Clock
    progressed_at: float = field(init=False)

    def __post_init__(self) -> None:
        self.progressed_at = self.clock.now()

    def progressed(self, broker: _Broker) -> None:
        target = self.pending.get(broker)
        if target is None or not self.done(broker, target):
            return
        del self.pending[broker]
        self.progressed_at = self.clock.now()
        if not self.pending and not self.future.done():
            self.future.set_result(None)


def _batch_span(broker: _Broker, batch: _Batch) -> contextlib.AbstractContextManager:
    """The span a batch is sent under; none (a null context giving None) when tracing is off
    and the batch was queued outside any trace. A no-op span there would record nothing and
    hand nothing on (no client interceptors without tracing), yet its context switch and
    attributes cost ~0.1 ms a batch, a tenth of a second for each change told to a thousand
    brokers."""
    if batch.parent is None and not telemetry.enabled():
        return contextlib.nullcontext()
    first = batch.requests[0][1]
    return telemetry.span(
        "controller.broker_requests",
        parent=batch.parent,
        broker_id=broker.info.id,
        broker_epoch=getattr(first, "broker_epoch", None),
        controller_epoch=getattr(first, "controller_epoch", None),
        requests=",".join(k for k, _ in batch.requests),
        partition_count=sum(_partitions(r) for _, r in batch.requests),
    )


def _body_key(states: tuple, batch_states: tuple | None) -> object:
    """Brokers sent the batch's whole UpdateMetadata tuple share its encoding, keyed by the
    tuple's identity (the batch outlives ``send_batch``); so do brokers sent the same trimmed
    tuple (``SentStates.unsent_requests`` gives brokers with the same memory the same one, which
    that memory keeps alive for the event)."""
    return id(states)


def pages(items: tuple, size: int) -> list[tuple]:
    """``items`` cut into runs of at most ``size`` (one, possibly empty, run if it fits)."""
    if len(items) <= size:
        return [items]
    return [items[i : i + size] for i in range(0, len(items), size)]


def _digest_mismatch(response: Message) -> bool:
    return response.error_code == common_pb2.ERROR_CODE_METADATA_DIGEST_MISMATCH


def _partitions(request: Request) -> int:
    """Partitions a control request names (LeaderAndIsr, StopReplica, UpdateMetadata); a
    digest-first UpdateMetadata counts those it names when sent in full."""
    if isinstance(request, wire.DigestFirst):
        return request.partition_count
    if isinstance(request, wire.EncodedRequest | wire.LazyRequest):
        return request.partition_count
    states = getattr(request, "partition_states", None)
    return len(states) if states is not None else 0
