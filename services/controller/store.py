"""The controller's writes to etcd: epoch bump, fenced batched commits, reads of stale keys.

Every write after the epoch bump goes through :func:`leasehold.etcd.fenced.commit`, so it is
fenced on the election key and the controller-epoch key (contract 3), packed into transactions of
at most 128 operations / 1.5 MiB with several in flight, and compare-and-set per key. No flow
makes an etcd round trip per partition: a flow's partition-state writes are one ``commit`` call.

``FencedError`` from any method here means "we are deposed": the caller resigns at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from leasehold.etcd.client import (
    KV,
    EtcdClient,
    cmp_create_revision,
    cmp_mod_revision,
    cmp_version,
    op_get,
    op_put,
)
from leasehold.etcd.fenced import (
    COMMIT_CONCURRENCY,
    CREATION_COMMIT_CONCURRENCY,
    MAX_TXN_OPS,
    CommitResult,
    Fence,
    FencedError,
    Write,
    commit,
)
from leasehold.etcd.keys import Keyspace
from services.controller import codec
from services.controller.core import StateChangePlan, TopicPartition

log = logging.getLogger(__name__)

Updater = Callable[[bytes | None], bytes | None]


class WriteConflictError(Exception):
    """A read-modify-write kept losing its compare-and-set to concurrent writers."""


class NotElectedError(Exception):
    """The election key is gone before the epoch could be bumped: campaign again."""


@dataclass
class StoreStats:
    commits: int = 0
    transactions: int = 0
    writes: int = 0
    stale: int = 0


@dataclass(frozen=True)
class PlanCommit:
    """Outcome of committing a plan's partition-state writes."""

    epochs: dict[TopicPartition, int] = field(default_factory=dict)
    stale: tuple[TopicPartition, ...] = ()
    transactions: int = 0


# Decides a plan again for partitions whose epoch changed in etcd (``Controller.execute``).
Retry = Callable[[tuple[TopicPartition, ...]], StateChangePlan]


@dataclass(frozen=True)
class PendingPlan:
    """A plan whose commit ``Controller.begin`` started (None: nothing to write)."""

    plan: StateChangePlan
    commit: asyncio.Future[PlanCommit] | None


class ControllerStore:
    def __init__(
        self, client: EtcdClient, keyspace: Keyspace, mirror: Mapping[bytes, KV] | None = None
    ) -> None:
        self.client = client
        self.ks = keyspace
        self.mirror: Mapping[bytes, KV] = mirror if mirror is not None else {}
        self._own: dict[bytes, tuple[KV | None, int]] = {}
        self.fence: Fence | None = None
        self.stats = StoreStats()

    # ---- epoch -----------------------------------------------------------------------------
    async def bump_epoch(
        self, election_key: bytes, election_revision: int, controller_id: int
    ) -> tuple[int, int]:
        """Contract 3: epoch + 1 in one txn fenced on our election key and the epoch as read.

        Returns ``(epoch, mod_revision of the epoch key)`` and installs the fence every later
        write uses. Raises :class:`NotElectedError` if the election key is no longer ours.
        """
        key = self.ks.controller_epoch
        for _ in range(16):
            kv, _rev = await self.client.get_with_revision(key)
            current = codec.decode_epoch(kv.value).epoch if kv is not None else 0
            epoch_cmp = (
                cmp_mod_revision(key, "=", kv.mod_revision)
                if kv is not None
                else cmp_version(key, "=", 0)
            )
            res = await self.client.txn(
                [cmp_create_revision(election_key, "=", election_revision), epoch_cmp],
                [op_put(key, codec.encode_epoch(current + 1, controller_id))],
                [op_get(election_key)],
            )
            if res.succeeded:
                self.fence = Fence.controller(election_key, election_revision, key, res.revision)
                return current + 1, res.revision
            held = res.range_kvs(0)
            if not held or held[0].create_revision != election_revision:
                raise NotElectedError("our election key is gone; cannot bump the epoch")
            # The epoch key moved between our read and our write: read it again.
        raise NotElectedError("the controller epoch key kept changing; giving up this term")

    def clear_fence(self) -> None:
        self.fence = None

    # ---- fenced commits --------------------------------------------------------------------
    async def commit(
        self, writes: Sequence[Write], *, concurrency: int = COMMIT_CONCURRENCY
    ) -> CommitResult:
        if self.fence is None:
            raise FencedError("not the active controller: no fence installed")
        if not writes:
            return CommitResult()
        result = await commit(self.client, self.fence, writes, concurrency=concurrency)
        self.stats.commits += 1
        self.stats.transactions += result.transactions
        self.stats.writes += len(writes)
        self.stats.stale += len(result.stale)
        return result

    async def commit_plan(
        self, plan: StateChangePlan, offline: Mapping[TopicPartition, Iterable[int]] | None = None
    ) -> PlanCommit:
        """Commit a plan's partition-state writes: CAS on each partition's epoch, fenced."""
        if not plan.writes:
            return PlanCommit()
        offline = offline or {}
        keys: dict[bytes, TopicPartition] = {}
        writes: list[Write] = []
        key_of = self.ks.partition_state
        for w in plan.writes:  # each key formatted once: a shutdown writes 10,000 of them
            key = key_of(w.tp.topic, w.tp.partition)
            keys[key] = w.tp
            writes.append(
                Write(
                    key,
                    codec.encode_write(w, offline.get(w.tp, ())),
                    0 if w.create else w.expected_partition_epoch,
                )
            )
        # A plan that only creates partition states goes with few transactions in flight, so
        # that etcd's queue, which every lease renewal waits behind, stays short.
        creating = all(w.create for w in plan.writes)
        result = await self.commit(
            writes, concurrency=CREATION_COMMIT_CONCURRENCY if creating else COMMIT_CONCURRENCY
        )
        return PlanCommit(
            epochs={keys[k]: rev for k, rev in result.revisions.items()},
            stale=tuple(sorted(keys[k] for k in result.stale)),
            transactions=result.transactions,
        )

    # ---- reads -----------------------------------------------------------------------------
    async def read_keys(self, keys: Sequence[bytes]) -> dict[bytes, KV | None]:
        """Current values of many keys, 128 per transaction, transactions in parallel."""
        out: dict[bytes, KV | None] = {k: None for k in keys}

        async def chunk(part: Sequence[bytes]) -> None:
            res = await self.client.txn([], [op_get(k) for k in part])
            for i, k in enumerate(part):
                kvs = res.range_kvs(i)
                out[k] = kvs[0] if kvs else None

        parts = [keys[i : i + MAX_TXN_OPS] for i in range(0, len(keys), MAX_TXN_OPS)]
        await asyncio.gather(*(chunk(p) for p in parts))
        return out

    async def read_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, codec.StoredPartitionState | None]:
        by_key = {self.ks.partition_state(tp.topic, tp.partition): tp for tp in tps}
        kvs = await self.read_keys(list(by_key))
        return {
            by_key[k]: (codec.decode_partition_state(kv.value, kv.mod_revision) if kv else None)
            for k, kv in kvs.items()
        }

    # ---- read-modify-write of shared keys ---------------------------------------------------
    def known(self, key: bytes) -> KV | None:
        """The newest value of ``key`` we know: the watch mirror or our own later write."""
        mirrored = self.mirror.get(key)
        own = self._own.get(key)
        if own is None or (mirrored is not None and mirrored.mod_revision >= own[1]):
            return mirrored
        return own[0]

    def _remember(self, writes: Sequence[Write], revisions: Mapping[bytes, int]) -> None:
        for w in writes:
            rev = revisions.get(w.key)
            if rev is None:
                continue
            kv = None if w.value is None else KV(w.key, w.value, 0, rev, 0, 0)
            self._own[w.key] = (kv, rev)
        if len(self._own) > 10_000:  # the mirror has caught up with all but the newest
            self._own = {
                k: v
                for k, v in self._own.items()
                if (m := self.mirror.get(k)) is None or m.mod_revision < v[1]
            }

    async def read_modify_write(
        self,
        updates: Mapping[bytes, Updater],
        extra: Sequence[Write] = (),
        *,
        attempts: int = 5,
    ) -> dict[bytes, int]:
        """Apply ``updates[key](old_value) -> new_value`` (None deletes) with CAS, batched.

        The old value is the newest we know (``known``). A key that changed behind our back (an
        admin write not yet seen through the watch) is read again and its update re-applied;
        only such keys cost an extra round trip. ``extra`` writes go in the first commit.
        Returns the new mod revision of every key written.
        """
        pending = dict(updates)
        current = {k: self.known(k) for k in pending}
        written: dict[bytes, int] = {}
        first = list(extra)
        for _ in range(attempts):
            writes: list[Write] = list(first)
            first = []
            for key, update in pending.items():
                kv = current.get(key)
                old = kv.value if kv is not None else None
                new = update(old)
                if new == old:
                    continue
                writes.append(Write(key, new, kv.mod_revision if kv is not None else 0))
            if not writes:
                return written
            result = await self.commit(writes)
            self._remember(writes, result.revisions)
            written.update(result.revisions)
            stale = [k for k in result.stale if k in pending]
            if not stale:
                return written
            pending = {k: pending[k] for k in stale}
            current.update(await self.read_keys(stale))
        raise WriteConflictError(f"keys {sorted(pending)} kept changing under us")
