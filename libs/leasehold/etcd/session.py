"""A Session is a lease kept alive in the background (etcd's concurrency.Session).

Keys written with ``session.lease_id`` vanish when the session ends, the way ZooKeeper's
ephemeral nodes vanish with their session. ``done`` is set once the lease is known to be lost —
revoked, expired, or not confirmed for a whole TTL — and the owner must then stop acting on
anything the lease guarded. A paused process only learns this on resuming, which is why every
guarded write is also fenced by revision compares (DESIGN section 3).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from aetcd import rpc

from leasehold.etcd.client import EtcdClient, EtcdError

log = logging.getLogger(__name__)


class Session:
    def __init__(self, client: EtcdClient, ttl: int = 5) -> None:
        self.client = client
        self.ttl = ttl
        self.lease_id = 0
        self.done = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._deadline = 0.0

    async def start(self) -> Session:
        self.lease_id = await self.client.lease_grant(self.ttl)
        self._deadline = time.monotonic() + self.ttl
        self._task = asyncio.create_task(self._keep_alive(), name=f"lease-{self.lease_id:x}")
        return self

    async def __aenter__(self) -> Session:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _lost(self, why: str) -> None:
        if not self.done.is_set():
            log.warning("session lease lost", extra={"lease": f"{self.lease_id:x}", "why": why})
            self.done.set()

    async def _keep_alive(self) -> None:
        interval = max(self.ttl / 3.0, 0.2)
        while not self.done.is_set():
            try:
                await self._stream(interval)
            except Exception as e:  # any stream failure: retry until the deadline passes
                log.debug("keep-alive stream error: %s", e)
            if time.monotonic() >= self._deadline:
                self._lost("keep-alive not confirmed within the TTL")
                return
            await asyncio.sleep(min(interval, 0.5))

    async def _stream(self, interval: float) -> None:
        call = self.client.lease_keepalive_stream()
        try:
            while not self.done.is_set():
                sent_at = time.monotonic()
                if sent_at >= self._deadline:
                    self._lost("keep-alive not confirmed within the TTL")
                    return
                await call.write(rpc.LeaseKeepAliveRequest(ID=self.lease_id))
                remaining = self._deadline - sent_at
                # asyncio.timeout, not wait_for: in 3.11 wait_for can swallow a cancellation that
                # lands as the read completes, leaving close() waiting on a task that never ends.
                async with asyncio.timeout(max(remaining, 0.05)):
                    resp = await call.read()
                if resp is None or resp.TTL <= 0:
                    self._lost("lease expired or revoked")
                    return
                # The lease lives at least TTL from when the request was sent.
                self._deadline = sent_at + resp.TTL
                await asyncio.sleep(interval)
        finally:
            call.cancel()

    async def close(self, *, revoke: bool = True) -> None:
        """Stop keeping the lease alive and (by default) revoke it so its keys go at once."""
        lost = self.done.is_set()
        self.done.set()  # the keep-alive loop stops at its next check even if a cancel is lost
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                await asyncio.wait({self._task}, timeout=2.0)
            self._task = None
        if revoke and self.lease_id and not lost:
            with contextlib.suppress(EtcdError, TimeoutError):
                async with asyncio.timeout(self.client.timeout):
                    await self.client.lease_revoke(self.lease_id)
