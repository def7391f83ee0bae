"""Fenced batched commits and the load-then-watch helper against a real etcd."""

from __future__ import annotations

import asyncio

import pytest

from leasehold.etcd.client import cmp_mod_revision
from leasehold.etcd.fenced import Fence, FencedError, Write, chunk_writes, commit
from leasehold.etcd.watch import load_then_watch


async def _fence(etcd, keyspace) -> tuple[Fence, bytes]:
    epoch_key = keyspace.controller_epoch
    rev = await etcd.put(epoch_key, b"1")
    return Fence((cmp_mod_revision(epoch_key, "=", rev),)), epoch_key


def test_chunking_respects_op_and_byte_limits():
    writes = [Write(f"/k/{i}".encode(), b"v", expected=0) for i in range(300)]
    chunks = chunk_writes(writes, fence_size=2)
    assert [len(c) for c in chunks] == [126, 126, 48]
    big = [Write(f"/b/{i}".encode(), b"x" * 400_000) for i in range(10)]
    assert all(sum(w.size() for w in c) <= 1536 * 1024 for c in chunk_writes(big, 2))
    assert sum(len(c) for c in chunk_writes(big, 2)) == 10


async def test_commit_creates_then_cas_updates_in_batches(etcd, keyspace):
    fence, _ = await _fence(etcd, keyspace)
    keys = [keyspace.root + f"/p/{i}".encode() for i in range(500)]
    res = await commit(etcd, fence, [Write(k, b"a", expected=0) for k in keys])
    assert set(res.revisions) == set(keys) and not res.stale
    assert res.transactions == 4  # 500 writes / (128 - 1 fence compare) per txn
    res2 = await commit(etcd, fence, [Write(k, b"b", expected=res.revisions[k]) for k in keys])
    assert not res2.stale
    kvs, _ = await etcd.range_prefix(keyspace.root + b"/p/")
    assert {kv.value for kv in kvs} == {b"b"} and len(kvs) == 500


async def test_commit_reports_stale_keys_and_commits_the_rest(etcd, keyspace):
    fence, _ = await _fence(etcd, keyspace)
    a, b = keyspace.root + b"/a", keyspace.root + b"/b"
    ra = await etcd.put(a, b"0")
    rb = await etcd.put(b, b"0")
    await etcd.put(b, b"changed-behind-our-back")
    res = await commit(etcd, fence, [Write(a, b"1", expected=ra), Write(b, b"1", expected=rb)])
    assert a in res.revisions and b in res.stale
    assert (await etcd.get(a)).value == b"1"
    assert (await etcd.get(b)).value == b"changed-behind-our-back"


# (what happened to the key behind our back, the write's expected revision: "seen" for the
#  revision we read, 0 for "must not exist"; reported actual revision: "now" for its current one)
STALE_CASES = [
    ("updated", "seen", "now"),
    ("deleted", "seen", 0),
    ("created", 0, "now"),
]


@pytest.mark.parametrize(("change", "expected", "actual"), STALE_CASES)
async def test_stale_keys_are_found_after_the_failed_transaction(
    etcd, keyspace, change, expected, actual
):
    """The failed transaction reads back only the fence; the chunk's keys are read after it,
    and only the stale one is dropped, with its current revision, from a chunk of many."""
    fence, _ = await _fence(etcd, keyspace)
    keys = [keyspace.root + f"/s/{i}".encode() for i in range(200)]
    res = await commit(etcd, fence, [Write(k, b"a", expected=0) for k in keys[1:]])
    seen = 0
    if change != "created":
        seen = await etcd.put(keys[0], b"a")
    if change == "updated":
        await etcd.put(keys[0], b"behind our back")
    elif change == "deleted":
        await etcd.delete(keys[0])
    else:
        await etcd.put(keys[0], b"behind our back")
    current = await etcd.get(keys[0])
    revisions = {**res.revisions, keys[0]: seen if expected == "seen" else 0}
    res = await commit(etcd, fence, [Write(k, b"b", expected=revisions[k]) for k in keys])
    assert res.stale == {keys[0]: current.mod_revision if actual == "now" else 0}
    assert set(res.revisions) == set(keys[1:])
    kvs, _ = await etcd.range_prefix(keyspace.root + b"/s/")
    assert sorted(kv.key for kv in kvs if kv.value == b"b") == sorted(keys[1:])


async def test_commit_raises_when_fence_lost_and_writes_nothing(etcd, keyspace):
    fence, epoch_key = await _fence(etcd, keyspace)
    await etcd.put(epoch_key, b"2")  # another controller bumped the epoch
    target = keyspace.root + b"/x"
    with pytest.raises(FencedError):
        await commit(etcd, fence, [Write(target, b"1", expected=0)])
    assert await etcd.get(target) is None


async def test_events_between_load_and_watch_are_delivered(etcd, keyspace):
    prefix = keyspace.root + b"/w/"
    await etcd.put(prefix + b"before", b"0")
    seen: list[tuple[bytes, bool]] = []
    loaded = asyncio.Event()
    release = asyncio.Event()

    async def on_load(kvs, revision):
        seen.extend((kv.key, False) for kv in kvs)
        loaded.set()
        await release.wait()  # writes happen here, after the load and before the watch starts

    async def on_events(events, revision):
        seen.extend((ev.kv.key, ev.deleted) for ev in events)

    task = asyncio.create_task(load_then_watch(etcd, prefix, on_load, on_events))
    await loaded.wait()
    await etcd.put(prefix + b"gap1", b"1")
    await etcd.delete(prefix + b"before")
    release.set()
    await etcd.put(prefix + b"after", b"2")
    for _ in range(50):
        if len(seen) >= 4:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    assert seen == [
        (prefix + b"before", False),
        (prefix + b"gap1", False),
        (prefix + b"before", True),
        (prefix + b"after", False),
    ]


async def test_watch_reloads_after_compaction(etcd, keyspace):
    prefix = keyspace.root + b"/c/"
    loads: list[int] = []
    events: list[bytes] = []
    gate = asyncio.Event()

    async def on_load(kvs, revision):
        loads.append(len(kvs))
        if len(loads) == 1:
            await gate.wait()

    async def on_events(evs, revision):
        events.extend(ev.kv.key for ev in evs)

    await etcd.put(prefix + b"a", b"1")
    task = asyncio.create_task(load_then_watch(etcd, prefix, on_load, on_events))
    while not loads:
        await asyncio.sleep(0.01)
    # While the first load is being handled, history moves on and is compacted away.
    await etcd.put(prefix + b"b", b"1")
    rev = await etcd.put(prefix + b"c", b"1")
    await etcd.compact(rev)
    gate.set()
    for _ in range(60):
        if len(loads) >= 2:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    assert loads[:2] == [1, 3], "a compacted watch must reload the whole prefix"
