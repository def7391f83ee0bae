"""Leader election: a port of etcd's ``concurrency.Election`` recipe.

Each candidate puts ``<prefix><lease-id>`` under its session's lease. The candidate whose key has
the lowest create revision leads. A waiting candidate watches only the key just before its own
(the highest create revision below its own), so a leader change wakes one candidate, not a herd.
Every leader-only write must compare ``create_revision(key) == revision`` — ``fence()`` returns
that compare — so a deposed leader's writes fail in etcd even if it has not noticed yet.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aetcd import rpc

from leasehold.etcd.client import (
    KV,
    CompactedError,
    EtcdClient,
    EtcdError,
    cmp_create_revision,
    op_delete,
    op_get,
    op_put,
    prefix_end,
)
from leasehold.etcd.session import Session


class ElectionLost(Exception):
    """The session ended (or our key vanished) before or while we led."""


@dataclass(frozen=True)
class Leadership:
    key: bytes
    revision: int  # create revision of our key: the election's fencing token
    value: bytes


class Election:
    def __init__(self, session: Session, prefix: bytes) -> None:
        self.session = session
        self.client: EtcdClient = session.client
        self.prefix = prefix
        self.key = b""
        self.revision = 0
        # The last key this candidate waited to vanish before it led (None: it led at once).
        self.predecessor: KV | None = None

    @property
    def leadership(self) -> Leadership | None:
        return Leadership(self.key, self.revision, b"") if self.revision else None

    def fence(self) -> rpc.Compare:
        """The compare every leader-only transaction must include."""
        return cmp_create_revision(self.key, "=", self.revision)

    async def campaign(self, value: bytes) -> Leadership:
        """Block until this candidate leads; raises ElectionLost if the session ends first."""
        if self.session.done.is_set():
            raise ElectionLost("the session has ended; start a new one to campaign")
        key = self.prefix + f"{self.session.lease_id:x}".encode()
        try:
            res = await self.client.txn(
                [cmp_create_revision(key, "=", 0)],
                [op_put(key, value, lease=self.session.lease_id)],
                [op_get(key)],
            )
        except EtcdError as e:
            if "lease not found" in str(e):
                self.session.lost()
                raise ElectionLost("the session's lease is gone") from e
            raise
        if res.succeeded:
            revision = res.revision
        else:
            existing = res.range_kvs(0)[0]
            revision = existing.create_revision
            if existing.value != value:
                await self.client.txn(
                    [cmp_create_revision(key, "=", revision)],
                    [op_put(key, value, lease=self.session.lease_id)],
                )
        self.key, self.revision = key, revision
        try:
            await self._wait_for_predecessors(revision)
        except BaseException:
            # Cancelled or failed while waiting: withdraw so we do not become leader unnoticed.
            await self._withdraw()
            raise
        return Leadership(key, revision, value)

    async def _withdraw(self) -> None:
        if self.key:
            try:
                await self.client.txn(
                    [cmp_create_revision(self.key, "=", self.revision)], [op_delete(self.key)]
                )
            except EtcdError:
                pass
        self.key, self.revision = b"", 0

    async def _wait_for_predecessors(self, my_revision: int) -> None:
        while True:
            if self.session.done.is_set():
                raise ElectionLost("session ended while campaigning")
            pred, header_rev = await self._last_predecessor(my_revision)
            if pred is None:
                return
            await self._wait_deleted(pred.key, header_rev + 1)
            self.predecessor = pred

    async def _last_predecessor(self, my_revision: int) -> tuple[KV | None, int]:
        req = rpc.RangeRequest(
            key=self.prefix,
            range_end=prefix_end(self.prefix),
            max_create_revision=my_revision - 1,
            sort_order=rpc.RangeRequest.DESCEND,
            sort_target=rpc.RangeRequest.CREATE,
            limit=1,
        )
        resp = await self.client._call(self.client.kv.Range, req)
        kv = KV.from_pb(resp.kvs[0]) if resp.kvs else None
        return kv, resp.header.revision

    async def _wait_deleted(self, key: bytes, start_revision: int) -> None:
        lost = asyncio.create_task(self.session.done.wait())
        gone = asyncio.create_task(self._watch_for_delete(key, start_revision))
        try:
            done, _ = await asyncio.wait({lost, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (lost, gone):
                t.cancel()
        if lost in done:
            raise ElectionLost("session ended while campaigning")
        gone.result()

    async def _watch_for_delete(self, key: bytes, start_revision: int) -> None:
        while True:
            try:
                async for batch in self.client.watch(key, start_revision=start_revision):
                    if any(ev.deleted for ev in batch.events):
                        return
                    start_revision = batch.revision + 1
            except CompactedError:
                return  # re-check predecessors from scratch
            except EtcdError:
                # etcd unreachable or restarting: keep waiting (the session decides whether
                # the candidacy survived), then look again.
                await asyncio.sleep(0.2)
                with contextlib.suppress(EtcdError):
                    if await self.client.get(key) is None:
                        return

    async def still_leader(self) -> bool:
        """Whether our key is still there with the same create revision and no candidate holds
        an earlier one: after etcd came back, the leader may carry on without a new term."""
        if not self.revision:
            return False
        kv, _ = await _leader_and_revision(self.client, self.prefix)
        return kv is not None and kv.key == self.key and kv.create_revision == self.revision

    async def proclaim(self, value: bytes) -> None:
        """Change the leader's value without a new election."""
        if not self.revision:
            raise ElectionLost("not campaigning")
        res = await self.client.txn(
            [self.fence()], [op_put(self.key, value, lease=self.session.lease_id)]
        )
        if not res.succeeded:
            raise ElectionLost("our election key is gone")

    async def resign(self) -> None:
        """Give up leadership (or candidacy); the next candidate takes over at once."""
        await self._withdraw()

    async def leader(self) -> KV | None:
        """The current leader's key and value, or None when nobody campaigns."""
        return await leader_of(self.client, self.prefix)

    async def observe(self) -> AsyncIterator[KV | None]:
        """Yield the leader each time it changes."""
        async for kv in observe_leader(self.client, self.prefix):
            yield kv


async def _leader_and_revision(client: EtcdClient, prefix: bytes) -> tuple[KV | None, int]:
    req = rpc.RangeRequest(
        key=prefix,
        range_end=prefix_end(prefix),
        sort_order=rpc.RangeRequest.ASCEND,
        sort_target=rpc.RangeRequest.CREATE,
        limit=1,
    )
    resp = await client._call(client.kv.Range, req)
    return (KV.from_pb(resp.kvs[0]) if resp.kvs else None), resp.header.revision


async def leader_of(client: EtcdClient, prefix: bytes) -> KV | None:
    return (await _leader_and_revision(client, prefix))[0]


async def candidates_of(client: EtcdClient, prefix: bytes) -> list[KV]:
    """Every candidate in succession order (leader first)."""
    kvs, _ = await client.range_prefix(prefix)
    return sorted(kvs, key=lambda kv: kv.create_revision)


async def observe_leader(client: EtcdClient, prefix: bytes) -> AsyncIterator[KV | None]:
    """Yield the leader now and after every change (consecutive duplicates dropped)."""
    current: KV | None = None
    first = True
    while True:
        kv, rev = await _leader_and_revision(client, prefix)
        if first or kv != current:
            first = False
            current = kv
            yield kv
        try:
            async for batch in client.watch(prefix, prefix=True, start_revision=rev + 1):
                if batch.events:
                    break
        except CompactedError:
            continue
        except EtcdError:
            await asyncio.sleep(0.2)
