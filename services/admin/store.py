"""The admin service's etcd I/O: consistent reads, guarded commits and waiting on keys.

Reads pin one revision: the first range fixes it and every other range reads at it, so a request
sees the cluster as it was at one instant (ARCHITECTURE §5). Writes are groups of operations
guarded by compares on exactly what the decision read; a failed compare means somebody changed
the cluster meanwhile and the request is retried from a fresh snapshot. Waiting follows keys with
a watch that starts right after the revision the caller last saw, so no change is missed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from leasehold.common.v1 import common_pb2
from leasehold.errors import UnavailableError
from leasehold.etcd.client import KV, CompactedError, EtcdClient, EtcdError, rpc
from leasehold.etcd.keys import Keyspace
from services.admin.snapshot import RawRead, Snapshot, build_snapshot

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

MAX_TXN_OPS = 128
MAX_TXN_BYTES = 1400 * 1024  # under etcd's 1.5 MiB request limit, with room for framing


@dataclass(frozen=True)
class Want:
    """Which parts of the cluster a request needs; ``topics`` None means every topic."""

    brokers: bool = False
    topics: bool = False
    topic_names: tuple[str, ...] | None = None
    topic_configs: bool = False
    broker_configs: bool = False
    deletions: bool = False
    reassignments: bool = False
    controllers: bool = False
    topic_index: bool = False  # every topic's name, without reading assignments or states


@dataclass(frozen=True)
class Change:
    """Operations that must be applied together, and the compares that guard them."""

    compares: tuple[rpc.Compare, ...]
    ops: tuple[rpc.RequestOp, ...]

    def size(self) -> int:
        return sum(op.ByteSize() for op in self.ops) + sum(c.ByteSize() for c in self.compares)


def pack(changes: Sequence[Change]) -> list[list[Change]]:
    """Group changes into transactions within etcd's op-count and request-size limits."""
    batches: list[list[Change]] = []
    current: list[Change] = []
    ops = compares = size = 0
    for change in changes:
        c_ops, c_cmp, c_size = len(change.ops), len(change.compares), change.size()
        if max(c_ops, c_cmp) > MAX_TXN_OPS or c_size > MAX_TXN_BYTES:
            raise ValueError("a single change exceeds etcd's transaction limits")
        full = (
            ops + c_ops > MAX_TXN_OPS
            or compares + c_cmp > MAX_TXN_OPS
            or size + c_size > MAX_TXN_BYTES
        )
        if current and full:
            batches.append(current)
            current, ops, compares, size = [], 0, 0, 0
        current.append(change)
        ops, compares, size = ops + c_ops, compares + c_cmp, size + c_size
    if current:
        batches.append(current)
    return batches


def _unavailable_on_etcd_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """An unreachable etcd is UNAVAILABLE for the caller (retry later), not an internal error."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except EtcdError as e:
            raise UnavailableError(
                common_pb2.ERROR_CODE_UNKNOWN_SERVER_ERROR,
                f"The metadata store is unavailable: {e}",
            ) from e

    return wrapper


class AdminStore:
    """Reads snapshots, commits guarded changes and waits on keys, for one cluster's keyspace."""

    def __init__(self, client: EtcdClient, keyspace: Keyspace) -> None:
        self.client = client
        self.keyspace = keyspace

    # --- reads ----------------------------------------------------------------------------------

    async def _prefix(self, prefix: bytes, revision: int) -> tuple[KV, ...]:
        kvs, _ = await self.client.range_prefix(prefix, revision=revision)
        return tuple(kvs)

    async def _keys(self, keys: Sequence[bytes], revision: int) -> tuple[KV, ...]:
        found = await asyncio.gather(*(self.client.get(k, revision=revision) for k in keys))
        return tuple(kv for kv in found if kv is not None)

    async def _topics(self, want: Want, revision: int) -> tuple[KV, ...]:
        ks = self.keyspace
        if want.topic_names is None:
            return await self._prefix(ks.topics_prefix, revision)
        heads = await self._keys([ks.topic(n) for n in want.topic_names], revision)
        states = await asyncio.gather(
            *(self._prefix(ks.partition_states_prefix(n), revision) for n in want.topic_names)
        )
        return heads + tuple(kv for group in states for kv in group)

    async def _per_topic(self, prefix: bytes, key_of: Callable[[str], bytes], want: Want, rev: int):
        if want.topic_names is None:
            return await self._prefix(prefix, rev)
        return await self._keys([key_of(n) for n in want.topic_names], rev)

    async def _reassignments(self, want: Want, revision: int) -> tuple[KV, ...]:
        ks = self.keyspace
        if want.topic_names is None:
            return await self._prefix(ks.reassignments_prefix, revision)
        groups = await asyncio.gather(
            *(
                self._prefix(ks.reassignments_prefix + f"{n}/".encode(), revision)
                for n in want.topic_names
            )
        )
        return tuple(kv for group in groups for kv in group)

    @_unavailable_on_etcd_errors
    async def snapshot(self, want: Want) -> Snapshot:
        """Everything ``want`` names, read at one revision."""
        ks = self.keyspace
        epoch_kv, revision = await self.client.get_with_revision(ks.controller_epoch)
        empty: tuple[KV, ...] = ()

        async def nothing() -> tuple[KV, ...]:
            return empty

        topical = want.topics or want.topic_names is not None
        parts = await asyncio.gather(
            self._prefix(ks.brokers_prefix, revision) if want.brokers else nothing(),
            self._topics(want, revision) if topical else nothing(),
            self._per_topic(ks.topic_configs_prefix, ks.topic_config, want, revision)
            if want.topic_configs
            else nothing(),
            self._prefix(ks.broker_configs_prefix, revision) if want.broker_configs else nothing(),
            self._per_topic(ks.delete_topics_prefix, ks.delete_topic, want, revision)
            if want.deletions
            else nothing(),
            self._reassignments(want, revision) if want.reassignments else nothing(),
            self._prefix(ks.controller_election_prefix, revision)
            if want.controllers
            else nothing(),
        )
        index: tuple[KV, ...] = ()
        if want.topic_index:
            kvs, _ = await self.client.range_prefix(
                ks.topics_prefix, revision=revision, keys_only=True
            )
            index = tuple(kvs)
        raw = RawRead(
            revision,
            *parts,
            controller_epoch=epoch_kv if want.controllers else None,
            topic_keys=index,
        )
        return build_snapshot(ks, raw)

    @_unavailable_on_etcd_errors
    async def get(self, key: bytes, revision: int = 0) -> KV | None:
        return await self.client.get(key, revision=revision)

    @_unavailable_on_etcd_errors
    async def range(self, prefix: bytes, revision: int = 0) -> tuple[list[KV], int]:
        return await self.client.range_prefix(prefix, revision=revision)

    @_unavailable_on_etcd_errors
    async def get_with_revision(self, key: bytes) -> tuple[KV | None, int]:
        return await self.client.get_with_revision(key)

    # --- writes ---------------------------------------------------------------------------------

    @_unavailable_on_etcd_errors
    async def commit(self, changes: Sequence[Change]) -> int | None:
        """Apply the changes; return the last revision, or None if a compare failed.

        Changes that fit in one transaction are all-or-nothing. A larger request is split into
        several transactions run in order; if one fails the later ones are not attempted (the
        earlier ones stay, and the caller reports a conflict).
        """
        revision = 0
        for batch in pack(changes):
            compares = [c for change in batch for c in change.compares]
            ops = [op for change in batch for op in change.ops]
            res = await self.client.txn(compares, ops)
            if not res.succeeded:
                if revision:
                    log.warning("conflict after %d committed transaction(s) of a request", revision)
                return None
            revision = res.revision
        return revision

    # --- waiting --------------------------------------------------------------------------------

    async def follow(
        self,
        prefix: bytes,
        view: dict[bytes, KV | None],
        start_revision: int,
        done: Callable[[Mapping[bytes, KV | None]], bool],
        deadline: float,
        relevant: Callable[[bytes], bool] = lambda _key: True,
    ) -> tuple[bool, int]:
        """Apply changes under ``prefix`` from ``start_revision`` to ``view`` until ``done``.

        ``view`` holds what the caller knows as of ``start_revision - 1`` (None for absent keys);
        only keys passing ``relevant`` are tracked. Returns whether ``done`` held before
        ``deadline`` (a ``time.monotonic()`` value) and the revision reached.
        """
        revision = start_revision - 1
        if done(view):
            return True, revision
        while time.monotonic() < deadline:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    async for batch in self.client.watch(
                        prefix, prefix=True, start_revision=revision + 1
                    ):
                        for ev in batch.events:
                            if relevant(ev.kv.key):
                                view[ev.kv.key] = None if ev.deleted else ev.kv
                        revision = max(revision, batch.revision)
                        if done(view):
                            return True, revision
            except TimeoutError:
                break
            except CompactedError:
                kvs, revision = await self.client.range_prefix(prefix)
                fresh = {kv.key: kv for kv in kvs if relevant(kv.key)}
                for key in list(view):
                    view[key] = fresh.pop(key, None)
                view.update(fresh)
                if done(view):
                    return True, revision
            except EtcdError as e:
                log.info("watch on %r broke, resuming: %s", prefix, e)
                await asyncio.sleep(0.1)
        return done(view), revision
