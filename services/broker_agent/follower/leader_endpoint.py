"""A follower's client for one leader broker: Fetch, OffsetsForLeaderEpoch, ListOffsets.

The fetcher speaks in domain values (``FetchSpec`` in, ``FetchedPartition`` out) so its state
machine is tested without gRPC; this module is the only place that builds those protobufs. Any
transport failure becomes ``LeaderUnreachableError``, which the fetcher answers with a backoff
for every partition of the request, as Kafka's fetcher does on a failed send.

Fetches run in an incremental fetch session (KIP-227; ``FollowerSession`` is Kafka's
FetchSessionHandler): the first request is full and opens the session, later ones carry only the
partitions whose fetch state changed, plus the ones the fetcher dropped (forgotten), and the
leader answers only partitions with something to report. A partition missing from an answer
simply has nothing new. A session error, a failed call or an answer without a session makes the
next request a full one again; the fetcher never sees the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

from leasehold.broker.v1 import broker_pb2, broker_pb2_grpc
from leasehold.channels import channel
from leasehold.config import TlsConfig
from services.broker_agent.follower.fetch_state import EpochEndOffset
from services.broker_agent.leader.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from services.broker_agent.model import Code, Endpoint, TopicPartition


class LeaderUnreachableError(Exception):
    """The leader could not be asked (connection refused, timeout, shutting down)."""


@dataclass(frozen=True)
class FetchSpec:
    tp: TopicPartition
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int
    max_bytes: int


@dataclass(frozen=True)
class FetchedPartition:
    error: Code
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: bytes = b""
    diverging_epoch: EpochEndOffset | None = None


@dataclass(frozen=True)
class SessionRequest:
    """What one Fetch sends: partitions (all of them when ``full``), forgotten ones, and the
    session fields."""

    send: list[FetchSpec]
    forgotten: list[TopicPartition]
    session_id: int
    epoch: int
    base: Sequence[FetchSpec] = ()  # the fetcher's whole list this request was built from

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


SESSION_ERRORS = (Code.FETCH_SESSION_ID_NOT_FOUND, Code.INVALID_FETCH_SESSION_EPOCH)


@dataclass
class FollowerSession:
    """The follower's half of a fetch session: the partitions as the leader's session holds
    them (``sent``), and the id and epoch for the next request.

    ``_sent_ids`` holds the identities of the values in ``sent``: the fetcher passes the same
    spec object while a partition is unchanged, so most partitions are recognised by identity
    alone, without hashing a TopicPartition (10,000 of them a round add up).
    """

    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    sent: dict[TopicPartition, FetchSpec] = field(default_factory=dict)
    _sent_ids: set[int] = field(default_factory=set, repr=False)
    # The list the last answered request was built from: the fetcher hands back the very same
    # list when nothing changed, so the next request is empty without looking inside.
    _answered_base: Sequence[FetchSpec] | None = field(default=None, repr=False)

    def build(self, specs: Sequence[FetchSpec]) -> SessionRequest:
        """Everything for a full request; otherwise only what differs from ``sent``."""
        if self.epoch == INITIAL_EPOCH:
            return SessionRequest(list(specs), [], self.session_id, INITIAL_EPOCH, specs)
        if specs is self._answered_base:
            return SessionRequest([], [], self.session_id, self.epoch, specs)
        sent, ids = self.sent, self._sent_ids
        send = []
        known = 0
        for spec in specs:
            if id(spec) in ids:
                known += 1
                continue
            before = sent.get(spec.tp)
            if before is None:
                send.append(spec)
                continue
            known += 1
            if before == spec:  # same value built anew: keep this object from now on
                self._keep(spec)
            else:
                send.append(spec)
        forgotten: list[TopicPartition] = []
        if known != len(sent):
            wanted = {spec.tp for spec in specs}
            forgotten = [tp for tp in sent if tp not in wanted]
        return SessionRequest(send, forgotten, self.session_id, self.epoch, specs)

    def _keep(self, spec: FetchSpec) -> None:
        before = self.sent.get(spec.tp)
        if before is not None:
            self._sent_ids.discard(id(before))
        self.sent[spec.tp] = spec
        self._sent_ids.add(id(spec))

    def answered(self, request: SessionRequest, error: Code, session_id: int) -> None:
        """Move on after an answer (Kafka's handleResponse)."""
        if error == Code.FETCH_SESSION_ID_NOT_FOUND:
            self.reset(close=False)
        elif error != Code.NONE or session_id == INVALID_SESSION_ID:
            # Any other error closes the session; an answer without one (the leader's cache
            # is full, or it closed ours) means full requests until one opens.
            self.reset(close=error != Code.NONE)
        elif request.full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
            self.sent = {spec.tp: spec for spec in request.send}
            self._sent_ids = {id(spec) for spec in self.sent.values()}
            self._answered_base = request.base
        elif session_id != self.session_id:
            self.reset()  # not the session we asked in: start over
        else:
            self.epoch = next_epoch(self.epoch)
            for spec in request.send:
                self._keep(spec)
            for tp in request.forgotten:
                before = self.sent.pop(tp, None)
                if before is not None:
                    self._sent_ids.discard(id(before))
            self._answered_base = request.base

    def reset(self, close: bool = True) -> None:
        """Start over with a full request, closing the current session on the leader if
        ``close`` (Kafka's nextCloseExisting) or forgetting it (it is already gone)."""
        if not close:
            self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.sent = {}
        self._sent_ids = set()
        self._answered_base = None


@dataclass(frozen=True)
class EpochAnswer:
    error: Code
    epoch_end: EpochEndOffset


class LeaderEndpoint:
    def __init__(
        self,
        leader: Endpoint,
        local_broker_id: int,
        broker_epoch: Callable[[], int],
        tls: TlsConfig | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.leader = leader
        self._local_broker_id = local_broker_id
        self._broker_epoch = broker_epoch
        self._timeout = timeout_s
        self._channel = channel(leader.address, tls)
        self._stub = broker_pb2_grpc.BrokerServiceStub(self._channel)
        self.session = FollowerSession()
        self._failed = False  # the last call failed in transport

    async def wait_ready(self, timeout_s: float) -> bool:
        """Kafka's ``awaitReady`` before a fetcher builds its request: True at once unless the
        last call failed; then True once the channel to the leader is connected again, False
        if it is not within ``timeout_s``. A dead leader's fetcher (until a LeaderAndIsr moves
        its partitions) so waits instead of building a request for every partition only to
        fail, every 200 ms: 0.1 s of CPU per 10,000 partitions each time."""
        if not self._failed:
            return True
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def _call(self, method: str, request, extra_timeout: float = 0.0):
        try:
            answer = await getattr(self._stub, method)(
                request, timeout=self._timeout + extra_timeout
            )
        except grpc.aio.AioRpcError as exc:
            self._failed = True
            raise LeaderUnreachableError(
                f"{method} to broker {self.leader.broker_id} at {self.leader.address} failed: "
                f"{exc.code().name} {exc.details()}"
            ) from exc
        self._failed = False
        return answer

    async def fetch(
        self,
        specs: Sequence[FetchSpec],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
    ) -> dict[TopicPartition, FetchedPartition]:
        """Fetch ``specs`` (every partition ready to fetch); the answer holds only partitions
        with something to report, or nothing at all after a session error."""
        plan = self.session.build(specs)
        by_topic: dict[str, list[broker_pb2.FetchPartition]] = {}
        for spec in plan.send:
            by_topic.setdefault(spec.tp.topic, []).append(
                broker_pb2.FetchPartition(
                    partition=spec.tp.partition,
                    current_leader_epoch=spec.current_leader_epoch,
                    fetch_offset=spec.fetch_offset,
                    last_fetched_epoch=spec.last_fetched_epoch,
                    log_start_offset=spec.log_start_offset,
                    partition_max_bytes=spec.max_bytes,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for tp in plan.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        request = broker_pb2.FetchRequest(
            replica_id=self._local_broker_id,
            replica_broker_epoch=self._broker_epoch(),
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            topics=[broker_pb2.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            record_format=broker_pb2.RECORD_FORMAT_BATCHES,
            session_id=plan.session_id,
            session_epoch=plan.epoch,
            forgotten_topics=[
                broker_pb2.ForgottenTopic(topic=t, partitions=ps) for t, ps in forgotten.items()
            ],
        )
        try:
            response = await self._call("Fetch", request, extra_timeout=max_wait_ms / 1000.0)
        except LeaderUnreachableError:
            self.session.reset()
            raise
        code = _code(response.error_code)
        self.session.answered(plan, code, response.session_id)
        if code in SESSION_ERRORS:
            return {}  # nothing was read: the next round sends a full request
        if code != Code.NONE:
            return {spec.tp: FetchedPartition(code) for spec in specs}
        out: dict[TopicPartition, FetchedPartition] = {}
        for topic in response.topics:
            for p in topic.partitions:
                diverging = None
                if p.HasField("diverging_epoch"):
                    diverging = EpochEndOffset(
                        p.diverging_epoch.epoch, p.diverging_epoch.end_offset
                    )
                out[TopicPartition(topic.topic, p.partition)] = FetchedPartition(
                    error=_code(p.error_code),
                    high_watermark=p.high_watermark,
                    log_start_offset=p.log_start_offset,
                    log_end_offset=p.log_end_offset,
                    records=p.records,
                    diverging_epoch=diverging,
                )
        return out

    async def offsets_for_leader_epoch(
        self, requests: dict[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, EpochAnswer]:
        """``requests`` maps each partition to (current leader epoch, epoch to look up)."""
        by_topic: dict[str, list[broker_pb2.OffsetForLeaderPartition]] = {}
        for tp, (current, epoch) in requests.items():
            by_topic.setdefault(tp.topic, []).append(
                broker_pb2.OffsetForLeaderPartition(
                    partition=tp.partition, current_leader_epoch=current, leader_epoch=epoch
                )
            )
        request = broker_pb2.OffsetsForLeaderEpochRequest(
            replica_id=self._local_broker_id,
            topics=[
                broker_pb2.OffsetForLeaderTopic(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        response = await self._call("OffsetsForLeaderEpoch", request)
        out: dict[TopicPartition, EpochAnswer] = {}
        for topic in response.topics:
            for p in topic.partitions:
                out[TopicPartition(topic.topic, p.partition)] = EpochAnswer(
                    _code(p.error_code), EpochEndOffset(p.leader_epoch, p.end_offset)
                )
        return out

    async def list_offset(
        self, tp: TopicPartition, current_leader_epoch: int, timestamp: int
    ) -> tuple[Code, int]:
        """The leader's offset for ``timestamp`` (-1 latest = log end, -2 earliest)."""
        request = broker_pb2.ListOffsetsRequest(
            replica_id=self._local_broker_id,
            topics=[
                broker_pb2.ListOffsetsTopic(
                    topic=tp.topic,
                    partitions=[
                        broker_pb2.ListOffsetsPartition(
                            partition=tp.partition,
                            current_leader_epoch=current_leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        response = await self._call("ListOffsets", request)
        for topic in response.topics:
            for p in topic.partitions:
                if topic.topic == tp.topic and p.partition == tp.partition:
                    return _code(p.error_code), p.offset
        return Code.UNKNOWN_TOPIC_OR_PARTITION, -1

    async def close(self) -> None:
        await self._channel.close()


def _code(value: int) -> Code:
    try:
        return Code(value)
    except ValueError:
        return Code.UNKNOWN_SERVER_ERROR
