"""Load a prefix at one revision, then watch from the next: no event is ever missed.

ZooKeeper watches were one-shot and raced with reads. Here the initial range read pins a
revision R and the watch starts at R+1, so every change after the snapshot is delivered exactly
once, in order. If etcd has compacted past the point we need (we were disconnected too long),
the whole prefix is loaded again and ``on_load`` is called with the fresh snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from leasehold.etcd.client import KV, CompactedError, EtcdClient, EtcdError, WatchEvents

log = logging.getLogger(__name__)

OnLoad = Callable[[list[KV], int], Awaitable[None]]
OnEvents = Callable[[WatchEvents, int], Awaitable[None]]


async def load_then_watch(
    client: EtcdClient,
    prefix: bytes,
    on_load: OnLoad,
    on_events: OnEvents,
    *,
    retry_delay: float = 0.2,
    prev_kv: bool = False,
) -> None:
    """Run until cancelled: ``on_load(kvs, revision)`` then ``on_events(events, revision)``.

    Events carry previous values only with ``prev_kv``: etcd must read each one back from its
    store, and they double what every watcher receives and decodes (a controller commit of
    10,000 partition states is 10,000 events to every controller).
    """
    while True:
        try:
            kvs, revision = await client.range_prefix(prefix)
        except EtcdError as e:
            log.warning("load of %r failed, retrying: %s", prefix, e)
            await asyncio.sleep(retry_delay)
            continue
        await on_load(kvs, revision)
        next_revision = revision + 1
        while True:
            try:
                async for batch in client.watch(
                    prefix, prefix=True, start_revision=next_revision, prev_kv=prev_kv
                ):
                    if batch.events:
                        await on_events(batch.events, batch.revision)
                        # A catching-up watcher's header revision runs ahead of its events:
                        # resume after the last event actually delivered, never after the header.
                        next_revision = max(next_revision, batch.events.last_revision + 1)
                    else:
                        # etcd sends progress notifications only to synced watchers, so the
                        # header revision is safe to resume from here.
                        next_revision = max(next_revision, batch.revision + 1)
            except CompactedError as e:
                log.warning("watch on %r compacted (%s); reloading", prefix, e)
                break
            except EtcdError as e:
                log.info("watch on %r broke, resuming at %d: %s", prefix, next_revision, e)
                await asyncio.sleep(retry_delay)
