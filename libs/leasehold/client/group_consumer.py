"""A consumer in a consumer group: the coordinator assigns partitions, positions are committed.

``GroupConsumer`` joins ``group_id`` with a subscription and keeps a heartbeat going (Kafka's
KIP-848 consumer protocol): every answer may carry a new assignment, which the consumer
reconciles before its next heartbeat — for partitions taken away it commits the position (with
auto-commit) and stops fetching them, then reports what it owns; for partitions given it starts
at the group's committed offset, or where ``auto_offset_reset`` says when the group has none. A
member fenced by the coordinator (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: it was silent past
its session, or a newer member took its place) drops its partitions without committing and
joins again. ``close`` commits (auto-commit) and leaves the group; a static member
(``group_instance_id``) leaves "for now", so a restart within the session timeout gets its
partitions back without a rebalance.

Fetching is the plain :class:`Consumer` over the partitions owned; a lock keeps a revocation
from interleaving with a poll, so no record of a partition is returned after it was given up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from leasehold.client.consumer import Consumer, ConsumerRecord, _start_code
from leasehold.client.groups import TP, Committed, GroupClient, assignment_pb, partitions_of
from leasehold.client.metadata import ClusterMetadata
from leasehold.common.v1 import common_pb2 as c
from leasehold.config import TlsConfig
from leasehold.errors import LeaseholdError
from leasehold.group.v1 import group_pb2 as g

log = logging.getLogger(__name__)

FENCED = frozenset({c.ERROR_CODE_FENCED_MEMBER_EPOCH, c.ERROR_CODE_UNKNOWN_MEMBER_ID})
LEAVE = -1
LEAVE_STATIC = -2
RETRY_S = 0.5

Listener = Callable[[frozenset[TP]], None]


class GroupConsumer:
    """Async consumer of the partitions its group gives it."""

    def __init__(
        self,
        group_id: str,
        topics: Sequence[str],
        *,
        metadata: ClusterMetadata | None = None,
        admin: str | None = None,
        bootstrap: Sequence[str] = (),
        tls: TlsConfig | None = None,
        group_instance_id: str | None = None,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        auto_offset_reset: str = "earliest",
        server_assignor: str | None = None,
        rebalance_timeout_ms: int = 0,
        client_id: str = "leasehold-python",
        max_wait_ms: int = 500,
        request_timeout_ms: int = 30_000,
        on_assigned: Listener | None = None,
        on_revoked: Listener | None = None,
    ) -> None:
        self.group_id = group_id
        self.topics = tuple(topics)
        self.instance_id = group_instance_id
        self.auto_commit = enable_auto_commit
        self.auto_commit_interval = auto_commit_interval_ms / 1000.0
        self.reset = _start_code(auto_offset_reset)
        self.server_assignor = server_assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.client_id = client_id
        # A shared ``metadata`` (many members in one process) stays open on close.
        self._own_metadata = metadata is None
        self.metadata = metadata or ClusterMetadata(admin, bootstrap=bootstrap, tls=tls)
        self.consumer = Consumer(
            self.metadata, max_wait_ms=max_wait_ms, request_timeout_ms=request_timeout_ms
        )
        self.groups = GroupClient(self.metadata, request_timeout_ms=request_timeout_ms)
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.member_id = ""
        self.member_epoch = 0
        self.owned: frozenset[TP] = frozenset()
        self._target: frozenset[TP] | None = None  # the last assignment the coordinator gave
        self.heartbeat_interval = 5.0
        self._lock = asyncio.Lock()  # reconciling vs polling
        self._wake = asyncio.Event()
        self._assigned = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._last_commit = time.monotonic()

    async def __aenter__(self) -> GroupConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- membership -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Join the group (the first heartbeat) and keep heartbeating in the background."""
        try:
            await self._heartbeat()
        except LeaseholdError as e:
            if not self.member_id:
                raise  # not in the group: nothing to keep alive
            log.info("first heartbeat of %s failed after joining: %s", self.group_id, e)
        self._task = asyncio.create_task(self._run(), name=f"group-{self.group_id}")

    async def _run(self) -> None:
        while True:
            # A target not reached yet (a reconciliation that failed) is retried soon.
            pending = self._target is not None and self._target != self.owned
            wait = min(self.heartbeat_interval, RETRY_S) if pending else self.heartbeat_interval
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            self._wake.clear()
            try:
                await self._heartbeat()
            except LeaseholdError as e:
                if e.code in FENCED:
                    log.info(
                        "member %s of %s fenced (%s): rejoining", self.member_id, self.group_id, e
                    )
                    await self._lose_all()
                    self._wake.set()
                else:
                    log.info("heartbeat of %s failed: %s", self.group_id, e)
            except asyncio.CancelledError:
                raise
            except Exception:  # the heartbeat must outlive one bad round
                log.exception("heartbeat of %s failed", self.group_id)

    def _request(self, epoch: int) -> g.ConsumerGroupHeartbeatRequest:
        req = g.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            client_id=self.client_id,
        )
        if self.instance_id is not None:
            req.instance_id = self.instance_id
        if epoch == 0:
            req.subscription.topic_names.extend(self.topics)
            req.owned.SetInParent()
            if self.server_assignor is not None:
                req.server_assignor = self.server_assignor
        else:
            # Every heartbeat says what the member owns: an answer lost on the way (the
            # coordinator moved after writing it, a call retried) shows as a difference, and the
            # coordinator sends the assignment again.
            req.owned.CopyFrom(assignment_pb(self.owned))
        return req

    async def _heartbeat(self) -> None:
        resp = await self.groups.heartbeat(self._request(self.member_epoch))
        self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval = resp.heartbeat_interval_ms / 1000.0
        if resp.HasField("assignment"):
            self._target = partitions_of(resp.assignment)
        if self._target is not None and self._target != self.owned:
            await self._reconcile(self._target)

    async def _reconcile(self, target: frozenset[TP]) -> None:
        """Give up what ``target`` lacks, then start what it adds. A failure while starting
        (a committed offset or a log end not readable yet) leaves ``owned`` at what was reached
        — the revocation done, so the coordinator can move on — and is retried."""
        async with self._lock:
            revoked, added = self.owned - target, target - self.owned
            if revoked:
                if self.auto_commit:
                    try:
                        await self._commit_positions(revoked)
                    except LeaseholdError as e:
                        log.info("commit of revoked partitions of %s failed: %s", self.group_id, e)
                for tp in revoked:
                    self.consumer.positions.pop(tp, None)
                    self.consumer.last_epochs.pop(tp, None)
                self.owned = self.owned - revoked
                self._wake.set()  # tell the coordinator at once
                if self.on_revoked is not None:
                    self.on_revoked(frozenset(revoked))
            if added:
                await self._start_positions(added)
                self.owned = frozenset(target)
                self._wake.set()
                if self.on_assigned is not None:
                    self.on_assigned(frozenset(added))
            if self.owned:
                self._assigned.set()
            else:
                self._assigned.clear()

    async def _start_positions(self, added: Iterable[TP]) -> None:
        added = sorted(added)
        for topic in {t for t, _ in added}:
            await self.metadata.partitions(topic)
        committed = await self.groups.committed(self.group_id, added)
        starts = {tp: committed[tp].offset for tp in added if tp in committed}
        missing = {tp: self.reset for tp in added if starts.get(tp, -1) < 0}
        starts.update(await self.consumer.offsets_for(missing))
        self.consumer.positions.update(starts)

    async def _lose_all(self) -> None:
        """Fenced: the partitions may already be someone else's; give them up uncommitted."""
        async with self._lock:
            lost = self.owned
            for tp in lost:
                self.consumer.positions.pop(tp, None)
                self.consumer.last_epochs.pop(tp, None)
            self.owned = frozenset()
            self._target = None
            self.member_epoch = 0
            self._assigned.clear()
            if lost and self.on_revoked is not None:
                self.on_revoked(lost)

    # --- consuming ------------------------------------------------------------------------------

    def assignment(self) -> frozenset[TP]:
        return self.owned

    def position(self, topic: str, partition: int) -> int:
        return self.consumer.position(topic, partition)

    async def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records of the partitions owned, waiting up to ``timeout_ms`` (also for an
        assignment); commits first when auto-commit is due."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        if self.auto_commit and time.monotonic() - self._last_commit >= self.auto_commit_interval:
            try:
                await self.commit()
            except LeaseholdError as e:
                log.info("auto-commit of %s failed: %s", self.group_id, e)
        if not self.owned:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._assigned.wait(), max(0.0, deadline - time.monotonic()))
        async with self._lock:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            records = await self.consumer.poll(remaining)
            return [r for r in records if (r.topic, r.partition) in self.owned]

    async def commit(self, offsets: Mapping[TP, int] | None = None) -> None:
        """Commit ``offsets`` (default: the position of every partition owned) as this member."""
        if offsets is None:
            await self._commit_positions(self.owned)
            return
        await self._commit({tp: o for tp, o in offsets.items()})

    async def _commit_positions(self, tps: Iterable[TP]) -> None:
        positions = self.consumer.positions
        await self._commit({tp: positions[tp] for tp in tps if tp in positions})

    async def _commit(self, offsets: Mapping[TP, int]) -> None:
        self._last_commit = time.monotonic()
        if not offsets:
            return
        values = {}
        for tp, offset in offsets.items():
            # The epoch of the record before the position, when that is what is committed.
            at_position = self.consumer.positions.get(tp) == offset
            epoch = self.consumer.last_epochs.get(tp, -1) if at_position else -1
            values[tp] = Committed(offset, epoch)
        await self.groups.commit(self.group_id, values, self.member_id, self.member_epoch)

    async def committed(self, partitions: Iterable[TP] | None = None) -> dict[TP, Committed]:
        return await self.groups.committed(self.group_id, partitions)

    # --- leaving --------------------------------------------------------------------------------

    async def close(self, leave: bool = True) -> None:
        """Commit (auto-commit), leave the group and release the connections. ``leave=False``
        only stops heartbeating (the coordinator removes the member after its session)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            if leave and self.member_id:
                if self.auto_commit and self.member_epoch > 0:
                    try:
                        await self.commit()
                    except LeaseholdError as e:
                        log.info("final commit of %s failed: %s", self.group_id, e)
                epoch = LEAVE_STATIC if self.instance_id is not None else LEAVE
                try:
                    await self.groups.heartbeat(self._request(epoch))
                except LeaseholdError as e:
                    log.info("leaving %s failed: %s", self.group_id, e)
        finally:
            await self.consumer.close()
            if self._own_metadata:
                await self.metadata.close()
