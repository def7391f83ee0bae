"""Broker registration (contract 2): a leased ``/brokers/ids/<id>`` key and the broker epoch.

The key is created in a transaction that requires it to be absent, under the session's lease, so
it disappears with the session the way a ZooKeeper ephemeral node does, and two live processes
can never both claim one broker id. The key's create revision is the broker epoch (KIP-380): it
grows with every registration, so requests the controller addressed to an earlier incarnation
are recognisable. When the session is lost the agent keeps serving, opens a new session and
registers again (a new epoch); the controller then sees a broker restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable

from leasehold.etcd import EtcdClient, EtcdError, Keyspace, Session
from leasehold.etcd.client import cmp_create_revision, op_get, op_put
from leasehold.etcd.session import LeaseRenewer
from leasehold.metadata.v1 import metadata_pb2
from services.broker_agent.model import Endpoint

log = logging.getLogger(__name__)

# First registrations tried when each one's session expires before its key is written.
REGISTER_ATTEMPTS = 3


class BrokerIdInUseError(RuntimeError):
    """Another live process holds this broker id."""


class Registration:
    """Owns the session and the registration key; ``epoch`` is the current broker epoch."""

    def __init__(
        self,
        client: EtcdClient,
        keyspace: Keyspace,
        endpoint: Endpoint,
        session_ttl: int,
        on_epoch: Callable[[int], None] | None = None,
        renewer: LeaseRenewer | None = None,
    ) -> None:
        self.client = client
        self.keyspace = keyspace
        self.endpoint = endpoint
        self.session_ttl = session_ttl
        self.session: Session | None = None
        self.epoch = -1
        self.incarnation_id = uuid.uuid4().hex
        self._on_epoch = on_epoch
        # The process's renewal process, or a renewer shared with the other brokers of the
        # process (simulation); None: each session renews from a thread of its own.
        self._renewer = renewer
        self._task: asyncio.Task | None = None
        self._closing = False

    @property
    def key(self) -> bytes:
        return self.keyspace.broker(self.endpoint.broker_id)

    def _value(self) -> bytes:
        return metadata_pb2.BrokerRegistration(
            broker_id=self.endpoint.broker_id,
            host=self.endpoint.host,
            port=self.endpoint.port,
            rack=self.endpoint.rack,
            incarnation_id=self.incarnation_id,
            registered_at_ms=int(time.time() * 1000),
            session_ttl_ms=self.session_ttl * 1000,
        ).SerializeToString()

    async def _try_register(self) -> int | None:
        """One attempt: the new epoch, or None when the key is held by another lease."""
        session = await Session(self.client, self.session_ttl, renewer=self._renewer).start()
        try:
            result = await self.client.txn(
                [cmp_create_revision(self.key, "=", 0)],
                [op_put(self.key, self._value(), lease=session.lease_id)],
                [op_get(self.key)],
            )
        except BaseException:
            await session.close()
            raise
        if not result.succeeded:
            await session.close()
            return None
        self.session = session
        return result.revision

    async def register(self) -> int:
        """First registration at start; raises BrokerIdInUseError if the id is live elsewhere.

        A session whose lease expired before its key was written (the process went a TTL
        without the CPU to renew it, as a starting broker on a loaded host can) is not the
        id being in use: it is replaced by a new one and the key tried again, up to
        ``REGISTER_ATTEMPTS`` times."""
        for attempt in range(1, REGISTER_ATTEMPTS + 1):
            try:
                epoch = await self._try_register()
                break
            except EtcdError as exc:
                if "lease not found" not in str(exc) or attempt == REGISTER_ATTEMPTS:
                    raise
                log.warning(
                    "registration's session expired before its key was written; again",
                    extra={"broker_id": self.endpoint.broker_id, "attempt": attempt},
                )
        if epoch is None:
            raise BrokerIdInUseError(
                f"broker id {self.endpoint.broker_id} is registered by a live broker "
                f"(key {self.key.decode()}); stop it or choose another --broker-id"
            )
        self._set_epoch(epoch)
        self._task = asyncio.create_task(self._watch_session(), name="broker-registration")
        return epoch

    def _set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        log.info(
            "registered broker",
            extra={"broker_id": self.endpoint.broker_id, "broker_epoch": epoch},
        )
        if self._on_epoch is not None:
            self._on_epoch(epoch)

    async def _watch_session(self) -> None:
        """Re-register whenever the session ends, retrying until the old key has expired."""
        while not self._closing:
            assert self.session is not None
            await self.session.done.wait()
            if self._closing:
                return
            log.warning("broker session lost; registering again")
            delay = 0.2
            while not self._closing:
                try:
                    epoch = await self._try_register()
                except EtcdError as exc:
                    log.warning("re-registration failed: %s", exc)
                    epoch = None
                if epoch is not None:
                    self._set_epoch(epoch)
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def close(self) -> None:
        """Revoke the session: the registration key goes at once and the controller sees us
        leave."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.session is not None:
            await self.session.close()
