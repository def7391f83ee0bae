"""Fenced, batched compare-and-set writes (ARCHITECTURE §3 and §5).

A leader-only write is a transaction whose compares include a *fence* (the controller's election
key create revision and the controller-epoch key's mod revision) plus one compare per key
(``mod_revision == expected``, or "does not exist" for creations). Writes are packed into
transactions of at most ``MAX_TXN_OPS`` operations and ``MAX_TXN_BYTES`` bytes (etcd's defaults
are 128 ops and 1.5 MiB per request) and several transactions run at once.

Transactions are sent already encoded (``txn_request``, from ``leasehold.fastwire`` layouts,
checked against the generated classes in ``tests/unit/etcd/test_fenced_wire.py``): building
128 compares and 128 puts per transaction as generated message objects costs about twice as
much of the controller's event loop, on the path of a broker failure's first commit.

When a transaction fails, its failure branch reads back the fence keys, so a lost fence (raise
:class:`FencedError`: we are not the controller any more) is told atomically; if the fence held,
the chunk's keys are read in a second request to find the stale ones (reported per key; the rest
of the chunk is retried). Reading them in the failure branch itself would add one range request
per written key to every transaction, for a branch that almost never runs: a third of what a
10,000-partition commit builds and etcd parses. Reading them later is as good: a mod revision
only grows, so a key stale when the transaction failed is still stale, and one that changed
since would fail the retry anyway.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from aetcd import rpc

from leasehold import fastwire
from leasehold.etcd.client import (
    KV,
    EtcdClient,
    cmp_create_revision,
    cmp_mod_revision,
    op_get,
)

MAX_TXN_OPS = 128
MAX_TXN_BYTES = 1536 * 1024
# Transactions of one ``commit`` in flight at once. Enough for a broker failure's election chunk
# (5,000 writes, 40 transactions) to be on the wire as soon as its commit task first runs: etcd
# then works through it while the controller's loop decides the next chunk, instead of sitting
# idle while the loop is busy. etcd itself is no slower with more in flight (``bench.raw_etcd``
# measures 64).
COMMIT_CONCURRENCY = 64
# Transactions in flight for a commit that only creates partition states (topic creation,
# partitions added: nothing is led yet and nobody waits for a leader). etcd's leader renews a
# lease only once it has applied every entry committed before the renewal arrived (3.5's
# ``LeaseRenew`` waits for the applied index, and answers an error after 1 s), so transactions
# queued in etcd delay every session's renewal by the time their applies take. A broker
# failure's chunk is worth that once; a creation is 20,000 partitions a step, step after step,
# and needs far fewer writes a second than etcd takes with this many in flight
# (``bench.raw_etcd``, 100,000 keys on the idle machine: 43,000 writes a second at 4 in flight,
# 61,000 at 64; renewals meanwhile p99 39 ms at 4, 62 ms at 64; the controller creates
# 1,200-3,300 partitions a second).
CREATION_COMMIT_CONCURRENCY = 4
_OP_OVERHEAD = 32  # protobuf framing per op, generous


class FencedError(Exception):
    """The fence no longer holds: another controller has taken over (or our lease is gone)."""


@dataclass(frozen=True)
class Fence:
    """Compares that must all hold for a leader-only write; ``holds(kvs)`` re-checks them."""

    compares: tuple[rpc.Compare, ...] = ()

    @classmethod
    def controller(
        cls, election_key: bytes, election_revision: int, epoch_key: bytes, epoch_revision: int
    ) -> Fence:
        return cls(
            (
                cmp_create_revision(election_key, "=", election_revision),
                cmp_mod_revision(epoch_key, "=", epoch_revision),
            )
        )

    @property
    def keys(self) -> tuple[bytes, ...]:
        return tuple(c.key for c in self.compares)


class Write(NamedTuple):
    """Put ``value`` at ``key`` (delete when ``value`` is None).

    ``expected`` is the mod revision the key must have: 0 means "must not exist", None means
    "no per-key check" (only the fence). A named tuple: a broker failure's commit makes 10,000
    of them on the controller's loop, at a third of a frozen dataclass's cost each.
    """

    key: bytes
    value: bytes | None
    expected: int | None = None

    def size(self) -> int:
        return len(self.key) * 2 + len(self.value or b"") + _OP_OVERHEAD


@dataclass
class CommitResult:
    """``revisions[key]`` is the new mod revision of each committed key; ``stale`` failed CAS."""

    revisions: dict[bytes, int] = field(default_factory=dict)
    stale: dict[bytes, int] = field(default_factory=dict)  # key -> actual mod revision (0: absent)
    transactions: int = 0


def chunk_writes(writes: Sequence[Write], fence_size: int) -> list[list[Write]]:
    """Split writes into transactions that respect etcd's op-count and request-size limits."""
    limit = MAX_TXN_OPS - fence_size
    chunks: list[list[Write]] = []
    current: list[Write] = []
    size = 0
    for w in writes:
        s = w.size()
        if current and (len(current) >= limit or size + s > MAX_TXN_BYTES):
            chunks.append(current)
            current, size = [], 0
        current.append(w)
        size += s
    if current:
        chunks.append(current)
    return chunks


def _compare_holds(c: rpc.Compare, kv: KV | None) -> bool:
    if c.target == rpc.Compare.CREATE:
        actual, expected = (kv.create_revision if kv else 0), c.create_revision
    elif c.target == rpc.Compare.MOD:
        actual, expected = (kv.mod_revision if kv else 0), c.mod_revision
    else:
        actual, expected = (kv.version if kv else 0), c.version
    if c.result == rpc.Compare.EQUAL:
        return actual == expected
    if c.result == rpc.Compare.NOT_EQUAL:
        return actual != expected
    if c.result == rpc.Compare.LESS:
        return actual < expected
    return actual > expected


# A write's compare and operation (``cmp_mod_revision(key, "=", expected)``, ``op_put`` or
# ``op_delete``) as elements of ``TxnRequest``'s fields, from ``fastwire`` layouts. A compare's
# ``mod_revision`` is a oneof member: written even when 0 (a creation); EQUAL is 0, left out.
_COMPARE = fastwire.Layout(
    rpc.Compare,
    [fastwire.group("result", "target", "key", "mod_revision", cached=False)],
    domain=Write,
    read={"mod_revision": "expected"},
    const={"result": rpc.Compare.EQUAL, "target": rpc.Compare.MOD},
    absent=("version", "create_revision", "value", "lease", "range_end"),
    entry_of=(rpc.TxnRequest, "compare"),
).encoder()
_PUT = fastwire.Layout(
    rpc.PutRequest,
    [fastwire.group("key", "value", cached=False)],
    domain=Write,
    absent=("lease", "prev_kv", "ignore_value", "ignore_lease"),
)
_DELETE = fastwire.Layout(
    rpc.DeleteRangeRequest,
    [fastwire.group("key", cached=False)],
    domain=Write,
    absent=("range_end", "prev_kv"),
)
_OTHER_OPS = ("request_range", "request_txn")
_PUT_OP = fastwire.Layout(
    rpc.RequestOp,
    [fastwire.group("request_put", cached=False)],
    nested={"request_put": _PUT},
    absent=(*_OTHER_OPS, "request_delete_range"),
    entry_of=(rpc.TxnRequest, "success"),
).encoder()
_DELETE_OP = fastwire.Layout(
    rpc.RequestOp,
    [fastwire.group("request_delete_range", cached=False)],
    nested={"request_delete_range": _DELETE},
    absent=(*_OTHER_OPS, "request_put"),
    entry_of=(rpc.TxnRequest, "success"),
).encoder()
_COMPARE_KEY = fastwire.field_key(rpc.TxnRequest, "compare")
_FAILURE_KEY = fastwire.field_key(rpc.TxnRequest, "failure")


def txn_request(fence: Fence, writes: Sequence[Write]) -> bytes:
    """The encoded ``TxnRequest`` committing ``writes`` under ``fence``: compares (the fence's,
    then each checked write's), the writes, and the fence keys read back on failure."""
    head = b"".join(
        [fastwire.length_delimited(_COMPARE_KEY, c.SerializeToString()) for c in fence.compares]
    )
    reads = b"".join(
        [fastwire.length_delimited(_FAILURE_KEY, op_get(k).SerializeToString()) for k in fence.keys]
    )
    compare, put, delete = _COMPARE.entry, _PUT_OP.entry, _DELETE_OP.entry
    compares = b"".join([compare(w) for w in writes if w.expected is not None])
    ops = b"".join([delete(w) if w.value is None else put(w) for w in writes])
    return head + compares + ops + reads


async def _commit_chunk(
    client: EtcdClient, fence: Fence, chunk: list[Write], result: CommitResult
) -> None:
    pending = list(chunk)
    for _attempt in range(8):
        if not pending:
            return
        res = await client.txn_encoded(txn_request(fence, pending))
        result.transactions += 1
        if res.succeeded:
            for w in pending:
                result.revisions[w.key] = res.revision
            return
        for i, c in enumerate(fence.compares):
            kvs = res.range_kvs(i)
            if not _compare_holds(c, kvs[0] if kvs else None):
                raise FencedError(
                    "controller fence lost: a newer controller epoch or our election key is gone"
                )
        checked = [w for w in pending if w.expected is not None]
        stale_keys: set[bytes] = set()
        if checked:
            current = await client.txn([], [op_get(w.key) for w in checked])
            for i, w in enumerate(checked):
                kvs = current.range_kvs(i)
                actual = kvs[0].mod_revision if kvs else 0
                if actual != w.expected:
                    result.stale[w.key] = actual
                    stale_keys.add(w.key)
        # With no stale key we raced with a change that has since reverted: retry the same chunk.
        pending = [w for w in pending if w.key not in stale_keys]
    raise FencedError("could not commit: the compared keys kept changing under us")


async def commit(
    client: EtcdClient,
    fence: Fence,
    writes: Sequence[Write],
    *,
    concurrency: int = COMMIT_CONCURRENCY,
) -> CommitResult:
    """Commit ``writes`` under ``fence`` in batched transactions, several in flight.

    Raises :class:`FencedError` if the fence fails; otherwise reports per-key staleness.
    """
    result = CommitResult()
    if not writes:
        return result
    keys = [w.key for w in writes]
    if len(set(keys)) != len(keys):
        raise ValueError("a commit may write each key at most once")
    sem = asyncio.Semaphore(concurrency)

    async def run(chunk: list[Write]) -> None:
        async with sem:
            await _commit_chunk(client, fence, chunk, result)

    await asyncio.gather(*(run(c) for c in chunk_writes(writes, len(fence.compares))))
    return result
